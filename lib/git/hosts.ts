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

/** `host` without brackets, and without the zone id of an IPv6 address (`fe80::1%eth0` is `fe80::1`). */
function bare(host: string): string {
  const h = host.replace(/^\[|\]$/g, "");
  return h.includes(":") ? h.replace(/%.*$/, "") : h;
}

/** 4 bytes of an IPv4 address or 16 of an IPv6 address (brackets and zone id allowed), or `undefined` for a host name. */
export function ipBytes(host: string): number[] | undefined {
  const h = bare(host);
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

/**
 * Canonical host: lowercased, without a trailing dot, IPv4 in dotted decimal
 * (so `127.1` and `0x7f.0.0.1` become `127.0.0.1`), IPv6 in brackets and
 * without its zone id. Never throws: what is no host stays as written.
 */
export function canonicalHost(host: string): string {
  const h = host.toLowerCase().replace(/\.$/, "");
  if (h.includes(":")) {
    try {
      return new URL(`http://[${bare(h)}]/`).hostname;
    } catch {
      return h;
    }
  }
  const plain = bare(h);
  if (!/^[a-z0-9._-]+$/.test(plain)) return h;
  try {
    return new URL(`http://${plain}/`).hostname; // the WHATWG parser normalises numeric IPv4 forms
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
  ["64:ff9b:1::", 48, "a NAT64 (local-use) address"],
  ["fc00::", 7, "a private (unique local) address"],
  ["fe80::", 10, "a link-local address"],
  ["fec0::", 10, "a site-local address"],
  ["ff00::", 8, "a multicast address"],
];

/** IPv6 ranges that carry an IPv4 address in their last 4 bytes, judged as that address. */
const EMBEDS_V4: [string, number][] = [
  ["::ffff:0:0", 96], // IPv4-mapped
  ["64:ff9b::", 96], // NAT64 (RFC 6052): the gateway connects to the embedded address
  ["::", 96], // IPv4-compatible (deprecated), after :: and ::1
];

/**
 * Names of loopback and other special addresses that a pod's `/etc/hosts`
 * may carry (the kubelet writes the `ip6-` ones; distributions add the
 * `localdomain` forms): judged as the addresses they stand for.
 */
const HOSTS_FILE_NAMES: Record<string, string> = {
  "localhost": "a loopback address",
  "localhost.localdomain": "a loopback address",
  "localhost4": "a loopback address",
  "localhost4.localdomain4": "a loopback address",
  "localhost6": "a loopback address",
  "localhost6.localdomain6": "a loopback address",
  "ip6-localhost": "a loopback address",
  "ip6-loopback": "a loopback address",
  "ip6-localnet": "a special-purpose address",
  "ip6-mcastprefix": "a multicast address",
  "ip6-allnodes": "a multicast address",
  "ip6-allrouters": "a multicast address",
  "ip6-allhosts": "a multicast address",
};

/** Why `host` is not a public host (`"a loopback address"`, …), or `undefined` when it is one. */
export function specialHost(host: string): string | undefined {
  const h = canonicalHost(host);
  if (Object.hasOwn(HOSTS_FILE_NAMES, h)) return HOSTS_FILE_NAMES[h];
  if (h.endsWith(".localhost")) return "a loopback address";
  const bytes = ipBytes(h);
  if (!bytes) return undefined;
  if (bytes.length === 16) {
    if (bytes.every((b, i) => b === 0 || (i === 15 && b === 1))) {
      return bytes[15] ? "a loopback address" : "an unspecified address";
    }
    for (const [base, bits] of EMBEDS_V4) {
      if (inRange(bytes, ipBytes(base)!, bits)) return specialHost(bytes.slice(12).join("."));
    }
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

/** Whether `host` is written as a host can be: a DNS name, an IPv4 address in any numeric form, or an IPv6 address. */
export function isHostSyntax(host: string): boolean {
  const h = canonicalHost(host).replace(/^\[|\]$/g, "");
  return ipBytes(h) !== undefined || /^[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*$/.test(h);
}

/** How `host` is allowed: by `*` (public hosts) or by a listed entry; `undefined` when it is not. */
export function hostAllowance(host: string, policy: HostPolicy): "public" | "listed" | undefined {
  const h = canonicalHost(host);
  const plain = h.replace(/^\[|\]$/g, "");
  const bytes = ipBytes(plain);
  if (!isHostSyntax(plain)) return undefined;
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
  if (!isHostSyntax(host)) return `host ${JSON.stringify(host)} is not a host name or address`;
  if (special && policy.entries.includes(ANY_PUBLIC_HOST)) {
    return `host ${shown} is ${special}, which NICO refuses unless the operator lists it in --git-allowed-hosts`;
  }
  return `host ${shown} is not in the operator's --git-allowed-hosts (${policy.entries.join(", ")})`;
}
