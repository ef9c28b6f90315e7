/**
 * Which addresses NICO may connect to for a cluster: its workload API server, each control-plane node's own
 * `/version`, and its etcd members. Every one of them is a tenant's to choose (a `controlPlaneEndpoint`, a
 * Machine's address, an etcd port), so NICO refuses by default what a tenant must never reach through it:
 * loopback, link-local, unspecified, multicast and reserved addresses, NICO's own addresses and the management
 * cluster's ranges the operator names (`--management-cidrs`). Addresses the operator lists in
 * `--workload-allowed-cidrs` are reached even so (a lab on loopback). Tests, the demo and the benchmark also
 * set {@link TARGETS_ENV}: then only loopback addresses, so a mistake never reaches another machine.
 *
 * A host *name* is judged as written (`localhost` is loopback), and before each request by the addresses DNS gives
 * it ({@link nameCheck}): a name that resolves to a refused address is refused. What the resolver the request itself
 * uses answers a moment later is not seen (docs/operations.md, Security).
 *
 * @module
 */
import { hostAllowance, type HostPolicy, ipBytes, parseHostPolicy, specialHost } from "../../../lib/git/hosts.ts";

/** The rules over target addresses (see the module). */
export interface TargetRules {
  /** Only loopback addresses may be reached at all ({@link TARGETS_ENV}). */
  loopbackOnly?: boolean;
  /** Addresses and CIDR ranges reached even though refused by default (`--workload-allowed-cidrs`). */
  allow: HostPolicy | undefined;
  /** Addresses and ranges of the management cluster (`--management-cidrs`, NICO's own addresses). */
  deny: HostPolicy | undefined;
}

/**
 * The rules, or `loopback`: loopback only, and loopback allowed (what an in-process test or benchmark names
 * explicitly).
 */
export type TargetPolicy = "loopback" | TargetRules;

/** Set to `loopback` by the test kit, the demo and the benchmark. */
export const TARGETS_ENV = "NICO_WORKLOAD_TARGETS";

/** The flags an operator names the allowed and the management ranges with. */
export const ALLOW_FLAG = "--workload-allowed-cidrs";
export const MANAGEMENT_FLAG = "--management-cidrs";

/** What NICO refuses by default, as {@link specialHost} names it (private ranges are where clusters live). */
const REFUSED_KINDS = new Set([
  "a loopback address",
  "a link-local address",
  "an unspecified address",
  "a multicast address",
  "a reserved address",
]);

/** The rules of the loopback shorthand. */
const LOOPBACK: TargetRules = { loopbackOnly: true, allow: parseHostPolicy("127.0.0.0/8,::1"), deny: undefined };

/** The rules: the explicit ones, else the defaults ({@link TARGETS_ENV} adds loopback only). */
export function targetPolicy(explicit?: TargetPolicy): TargetRules {
  if (explicit === "loopback") return LOOPBACK;
  if (explicit) return explicit.loopbackOnly || !envLoopback() ? explicit : { ...explicit, loopbackOnly: true };
  return { loopbackOnly: envLoopback(), allow: undefined, deny: undefined };
}

function envLoopback(): boolean {
  try {
    return Deno.env.get(TARGETS_ENV) === "loopback";
  } catch {
    return false; // no env permission: the caller's explicit choice is all there is
  }
}

/**
 * A comma-separated list of addresses and CIDR ranges (the two flags), or a thrown error naming the bad entry.
 *
 * @example
 * ```ts
 * import { parseCidrList } from "./targets.ts";
 * parseCidrList("127.0.0.0/8, ::1")?.entries; // ["127.0.0.0/8", "::1"]
 * parseCidrList(""); // undefined
 * ```
 */
export function parseCidrList(list: string | undefined): HostPolicy | undefined {
  const entries = (list ?? "").split(",").map((e) => e.trim()).filter((e) => e !== "");
  if (!entries.length) return undefined;
  for (const e of entries) {
    if (!/^[0-9a-fA-F.:[\]]+(\/\d+)?$/.test(e)) throw new Error(`${e} is not an address or CIDR range`);
  }
  return parseHostPolicy(entries);
}

/**
 * Whether `host` is a loopback address literal: IPv4 127.0.0.0/8 in dotted
 * decimal, or IPv6 `::1` or an IPv4-mapped `::ffff:127.x.y.z` (also as the
 * URL parser writes it, `::ffff:7f00:1`), brackets allowed. The whole string
 * must be the address: `127.0.0.1.evil.example` is a host name.
 */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[(.*)\]$/, "$1").toLowerCase();
  const v4 = /^(?:::ffff:)?(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(h);
  if (v4) return v4.slice(1).every((o) => Number(o) <= 255) && Number(v4[1]) === 127;
  if (!/^[0-9a-f:]+$/.test(h) || !h.includes(":")) return false;
  let canonical: string;
  try {
    canonical = new URL(`http://[${h}]/`).hostname;
  } catch {
    return false;
  }
  return canonical === "[::1]" || /^\[::ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4}\]$/.test(canonical);
}

/** Why NICO may not connect to `server` (a URL) under `policy`, or `undefined` when it may. */
export function refusedTarget(server: string, policy: TargetPolicy): string | undefined {
  let url: URL;
  try {
    url = new URL(server);
  } catch {
    return `the server ${JSON.stringify(server)} is not a URL`;
  }
  if (url.protocol !== "https:") return `the server ${server} is not https`;
  return refusedHost(url.hostname, policy);
}

/** The IPv4 address an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`) stands for, judged as that address. */
function mappedV4(host: string): string | undefined {
  const b = ipBytes(host);
  const mapped = b?.length === 16 && b.slice(0, 10).every((x) => x === 0) && b[10] === 0xff && b[11] === 0xff;
  return mapped ? b.slice(12).join(".") : undefined;
}

/** Why NICO may not connect to `host` under `policy`, or `undefined` when it may. */
export function refusedHost(host: string, policy: TargetPolicy): string | undefined {
  const rules = targetPolicy(policy);
  const shown = host.replace(/^\[(.*)\]$/, "$1");
  if (rules.loopbackOnly && !isLoopbackHost(host)) {
    return `refusing to connect to ${shown}: only loopback addresses may be reached here (${TARGETS_ENV}=loopback)`;
  }
  const listed = (p: HostPolicy | undefined) =>
    p !== undefined && [host, mappedV4(host)].some((h) => h !== undefined && hostAllowance(h, p) === "listed");
  if (listed(rules.allow)) return undefined;
  if (listed(rules.deny)) {
    return `refusing to connect to ${shown}: an address of the management cluster (${MANAGEMENT_FLAG}); ` +
      `NICO reaches it only when ${ALLOW_FLAG} lists it`;
  }
  const kind = specialHost(host);
  if (kind && REFUSED_KINDS.has(kind)) {
    return `refusing to connect to ${shown}: ${kind}, which NICO reaches only when ${ALLOW_FLAG} lists it`;
  }
  return undefined;
}

/** Answers the addresses of a host name (A and AAAA records). */
export type Resolver = (name: string) => Promise<string[]>;

/** The addresses DNS gives `name` within 2 s (A and AAAA; a record type the name lacks, or no answer, is none). */
export const dnsResolver: Resolver = async (name) => {
  const signal = AbortSignal.timeout(2_000);
  const [a, aaaa] = await Promise.all(
    (["A", "AAAA"] as const).map((t) => Deno.resolveDns(name, t, { signal }).catch(() => [] as string[])),
  );
  return [...a!, ...aaaa!];
};

/**
 * A check, before each request, of where a host *name* leads: its addresses (from `resolve`, kept `ttlMs`) must all
 * be allowed under `policy`; an address literal was judged when the client was made. Throws the refusal.
 */
export function nameCheck(
  policy: TargetPolicy,
  resolve: Resolver = dnsResolver,
  ttlMs = 30_000,
): (server: string | URL) => Promise<void> {
  const seen = new Map<string, { at: number; refused: string | undefined }>();
  return async (server) => {
    const host = new URL(server).hostname;
    if (ipBytes(host) || specialHost(host)) return;
    const last = seen.get(host);
    let refused = last && performance.now() - last.at < ttlMs ? last.refused : undefined;
    if (!last || performance.now() - last.at >= ttlMs) {
      const addresses = await resolve(host);
      const why = addresses.map((a) => [a, refusedHost(a, policy)] as const).find(([, r]) => r !== undefined);
      refused = why
        ? `refusing to connect to ${host}: it resolves to ${why[1]!.replace(/^refusing to connect to /, "")}`
        : undefined;
      if (seen.size > 1_000) seen.clear();
      seen.set(host, { at: performance.now(), refused });
    }
    if (refused) throw new Error(refused);
  };
}
