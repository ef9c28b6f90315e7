/**
 * Which hosts a `gitRepo` may name (`--git-allowed-hosts`). A tenant must not
 * be able to turn NICO (or NIO) into a scanner of the management network, so
 * loopback, link-local, private and other special addresses are refused
 * unless an entry names them.
 *
 * Entries: `*` (any host name or public address: the default), a host name
 * (`git.example.com`), a wildcard (`*.example.com`, which matches
 * subdomains only), an address (`127.0.0.1`, `::1`) or a CIDR range
 * (`10.0.0.0/8`, `fd00::/8`).
 *
 * A host *name* is judged as written: a name that resolves to a private
 * address is not caught here (docs/operations.md, Security).
 *
 * @module
 */

/** The default list: any host name or public address. */
export const ANY_PUBLIC_HOST = "*";

/** A parsed `--git-allowed-hosts`. */
export interface HostPolicy {
  /** The entries as given (lowercased); `["*"]` by default. */
  readonly entries: readonly string[];
}

/** The default policy: `*`. */
export const DEFAULT_HOST_POLICY: HostPolicy = { entries: [ANY_PUBLIC_HOST] };

/** 4 bytes of an IPv4 address or 16 of an IPv6 address, or `undefined` for a host name. */
export function ipBytes(host: string): number[] | undefined {
  const h = host.replace(/^\[|\]$/g, "");
  if (/^\d{1,3}(\.\d{1,3}){3}$/.test(h)) {
    const parts = h.split(".").map(Number);
    return parts.every((p) => p <= 255) ? parts : undefined;
  }
  if (!h.includes(":")) return undefined;
  let canonical: string;
  try {
    canonical = new URL(`http://[${h}]/`).hostname.slice(1, -1);
  } catch {
    return undefined;
  }
  // The URL parser writes an embedded IPv4 tail in hex, so only hex groups remain.
  const [head = "", tail] = canonical.split("::");
  const groups = (s: string | undefined) => (s ? s.split(":").map((g) => parseInt(g, 16)) : []);
  const a = groups(head);
  const b = tail === undefined ? [] : groups(tail);
  const all = tail === undefined ? a : [...a, ...Array(8 - a.length - b.length).fill(0), ...b];
  return all.flatMap((g) => [g >> 8, g & 0xff]);
}

/** Canonical host: lowercased, IPv4 in dotted decimal (so `127.1` and `0x7f.0.0.1` become `127.0.0.1`). */
export function canonicalHost(host: string): string {
  const h = host.toLowerCase().replace(/\.$/, "");
  if (h.startsWith("[") || h.includes(":")) {
    const bytes = ipBytes(h);
    return bytes ? new URL(`http://[${h.replace(/^\[|\]$/g, "")}]/`).hostname : h;
  }
  try {
    return new URL(`http://${h}/`).hostname; // the WHATWG parser normalises numeric IPv4 forms
  } catch {
    return h;
  }
}

function inRange(bytes: number[], base: number[], bits: number): boolean {
  if (bytes.length !== base.length) return false;
  for (let i = 0; i < bits; i += 8) {
    const mask = bits - i >= 8 ? 0xff : (0xff << (8 - (bits - i))) & 0xff;
    if (((bytes[i / 8] ?? 0) & mask) !== ((base[i / 8] ?? 0) & mask)) return false;
  }
  return true;
}

const SPECIAL_V4: [string, number, string][] = [
  ["0.0.0.0", 8, "an unspecified address"],
  ["127.0.0.0", 8, "a loopback address"],
  ["10.0.0.0", 8, "a private address"],
  ["172.16.0.0", 12, "a private address"],
  ["192.168.0.0", 16, "a private address"],
  ["100.64.0.0", 10, "a shared (carrier-grade NAT) address"],
  ["169.254.0.0", 16, "a link-local address"],
  ["192.0.0.0", 24, "a special-purpose address"],
  ["198.18.0.0", 15, "a benchmarking address"],
  ["224.0.0.0", 4, "a multicast address"],
  ["240.0.0.0", 4, "a reserved address"],
];
const SPECIAL_V6: [string, number, string][] = [
  ["::", 128, "an unspecified address"],
  ["::1", 128, "a loopback address"],
  ["fc00::", 7, "a private (unique local) address"],
  ["fe80::", 10, "a link-local address"],
  ["ff00::", 8, "a multicast address"],
];

/** Why `host` is not a public host (`"a loopback address"`, …), or `undefined` when it is one. */
export function specialHost(host: string): string | undefined {
  const h = canonicalHost(host);
  if (h === "localhost" || h.endsWith(".localhost")) return "a loopback address";
  const bytes = ipBytes(h);
  if (!bytes) return undefined;
  if (bytes.length === 16 && inRange(bytes, ipBytes("::ffff:0:0")!, 96)) {
    return specialHost(bytes.slice(12).join("."));
  }
  for (const [base, bits, what] of bytes.length === 4 ? SPECIAL_V4 : SPECIAL_V6) {
    if (inRange(bytes, ipBytes(base)!, bits)) return what;
  }
  return undefined;
}

/** Why `entry` is not a valid `--git-allowed-hosts` entry, or `undefined`. */
export function hostEntryProblem(entry: string): string | undefined {
  if (entry === ANY_PUBLIC_HOST) return undefined;
  const [base = "", bits, extra] = entry.split("/");
  if (bits !== undefined) {
    const bytes = ipBytes(base);
    const n = Number(bits);
    if (extra !== undefined || !bytes || !/^\d+$/.test(bits) || n > bytes.length * 8) {
      return `${entry} is not a CIDR range such as 10.0.0.0/8`;
    }
    return undefined;
  }
  if (ipBytes(entry)) return undefined;
  if (/^(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/.test(entry)) return undefined;
  return `${entry} is not a host name, *.domain, address or CIDR range`;
}

/** Parses a comma-separated list; throws naming the bad entry. An empty list is the default (`*`). */
export function parseHostPolicy(list: string | readonly string[] | undefined): HostPolicy {
  const raw = typeof list === "string" ? list.split(",") : list ?? [];
  const entries = raw.map((e) => e.trim().toLowerCase().replace(/^\[(.*)\]$/, "$1")).filter((e) => e !== "");
  for (const e of entries) {
    const problem = hostEntryProblem(e);
    if (problem) throw new Error(problem);
  }
  return { entries: entries.length ? entries : [ANY_PUBLIC_HOST] };
}

/** How `host` is allowed: by `*` (public hosts) or by a listed entry; `undefined` when it is not. */
export function hostAllowance(host: string, policy: HostPolicy): "public" | "listed" | undefined {
  const h = canonicalHost(host);
  const plain = h.replace(/^\[|\]$/g, "");
  const bytes = ipBytes(plain);
  for (const e of policy.entries) {
    if (e === ANY_PUBLIC_HOST) continue;
    if (e.includes("/")) {
      const [base = "", bits = "0"] = e.split("/");
      if (bytes && inRange(bytes, ipBytes(base) ?? [], Number(bits))) return "listed";
    } else if (e.startsWith("*.")) {
      if (plain.endsWith(e.slice(1))) return "listed";
    } else if (bytes) {
      const eb = ipBytes(e);
      if (eb && eb.join(".") === bytes.join(".")) return "listed";
    } else if (plain === e) return "listed";
  }
  if (policy.entries.includes(ANY_PUBLIC_HOST) && specialHost(plain) === undefined) return "public";
  return undefined;
}

/** Why `host` may not be used, naming the flag, or `undefined` when it may. */
export function hostProblem(host: string, policy: HostPolicy): string | undefined {
  if (hostAllowance(host, policy)) return undefined;
  const special = specialHost(host);
  const shown = canonicalHost(host);
  if (special && policy.entries.includes(ANY_PUBLIC_HOST)) {
    return `host ${shown} is ${special}, which NICO refuses unless the operator lists it in --git-allowed-hosts`;
  }
  return `host ${shown} is not in the operator's --git-allowed-hosts (${policy.entries.join(", ")})`;
}
