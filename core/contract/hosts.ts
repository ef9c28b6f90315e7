/**
 * Host names and addresses as NICO writes them into kubeconfigs and
 * `cluster.nix`: one canonical spelling, so that a stray space or an
 * internationalised name neither loops the reconciler nor breaks encoding.
 * Pure.
 *
 * @module
 */

/** A DNS name in ASCII: labels of letters, digits and hyphens, dot-separated. */
const DNS_NAME = /^(?=.{1,253}$)([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*\.?$/;
const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;

export type HostResult = { host: string; error?: undefined } | { host?: undefined; error: string };

function isIpv6(s: string): boolean {
  if (!/^[0-9a-f:.]+$/.test(s) || !s.includes(":")) return false;
  try {
    return new URL(`https://[${s}]/`).hostname.length > 2;
  } catch {
    return false;
  }
}

/**
 * The canonical form of a host: trimmed, lower case, brackets dropped from
 * IPv6, and an internationalised name in its punycode (`xn--`) form. Answers
 * an error naming what is wrong when the value is no host at all.
 *
 * @example
 * ```ts
 * import { normalizeHost } from "./hosts.ts";
 * normalizeHost(" 127.0.0.1 "); // { host: "127.0.0.1" }
 * normalizeHost("api.пример.рф"); // { host: "api.xn--e1afmkfd.xn--p1ai" }
 * normalizeHost("a b"); // { error: "..." }
 * ```
 */
export function normalizeHost(raw: string): HostResult {
  const s = raw.trim().toLowerCase().replace(/^\[(.*)\]$/, "$1");
  if (!s) return { error: "is empty" };
  if (IPV4.test(s) || isIpv6(s)) return { host: s };
  if (/\s/.test(s)) return { error: `${JSON.stringify(raw)} contains white space inside` };
  let ascii = s;
  // deno-lint-ignore no-control-regex
  if (/[^\x00-\x7f]/.test(s)) {
    try {
      ascii = new URL(`https://${s}/`).hostname;
    } catch {
      return { error: `${JSON.stringify(raw)} is not a valid internationalised domain name` };
    }
  }
  if (!DNS_NAME.test(ascii) || /(^|\.)\d+\.?$/.test(ascii)) {
    return { error: `${JSON.stringify(raw)} is neither a DNS name (letters, digits, '-' and '.') nor an IP address` };
  }
  return { host: ascii.replace(/\.$/, "") };
}
