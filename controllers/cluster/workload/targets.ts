/**
 * Which workload API servers NICO may connect to. In production any
 * endpoint NICO itself wrote into a cluster's kubeconfig; in tests, the demo
 * and the benchmark only loopback addresses (127.0.0.0/8, ::1), so a mistake
 * can never reach another machine.
 *
 * @module
 */

/** `any`: every endpoint of NICO's kubeconfigs; `loopback`: only 127.0.0.0/8 and ::1. */
export type TargetPolicy = "any" | "loopback";

/** Set to `loopback` by the test kit, the demo and the benchmark. */
export const TARGETS_ENV = "NICO_WORKLOAD_TARGETS";

/** The policy: the explicit one, else {@link TARGETS_ENV}, else `any`. */
export function targetPolicy(explicit?: TargetPolicy): TargetPolicy {
  if (explicit) return explicit;
  try {
    return Deno.env.get(TARGETS_ENV) === "loopback" ? "loopback" : "any";
  } catch {
    return "any"; // no env permission: the caller's explicit choice is all there is
  }
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

/** Why NICO may not connect to `server` under `policy`, or `undefined` when it may. */
export function refusedTarget(server: string, policy: TargetPolicy): string | undefined {
  let url: URL;
  try {
    url = new URL(server);
  } catch {
    return `the kubeconfig's server ${JSON.stringify(server)} is not a URL`;
  }
  if (url.protocol !== "https:") return `the kubeconfig's server ${server} is not https`;
  if (policy === "loopback" && !isLoopbackHost(url.hostname)) {
    return `refusing to connect to ${url.hostname}: only loopback addresses may be reached here (${TARGETS_ENV}=loopback)`;
  }
  return undefined;
}
