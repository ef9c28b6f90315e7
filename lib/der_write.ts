/**
 * Writing DER (X.690's distinguished encoding), as much as an X.509
 * certificate NICO issues needs: lengths, integers, object identifiers,
 * strings, times, bit and octet strings, and constructed elements.
 * lib/der.ts reads; lib/cert_build.ts builds certificates with this.
 *
 * @module
 */
import { concatBytes } from "./encoding.ts";

/** Tags of the universal types used here, and the constructed SEQUENCE and SET. */
export const TAG = {
  boolean: 0x01,
  integer: 0x02,
  bitString: 0x03,
  octetString: 0x04,
  oid: 0x06,
  utf8String: 0x0c,
  utcTime: 0x17,
  generalizedTime: 0x18,
  sequence: 0x30,
  set: 0x31,
} as const;

/** A non-negative integer's big-endian bytes, as few as it takes (none for 0). */
function bigEndian(n: number): number[] {
  const bytes: number[] = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v % 256);
  return bytes;
}

function length(n: number): Uint8Array {
  if (n < 0x80) return Uint8Array.of(n);
  const bytes = bigEndian(n);
  return Uint8Array.of(0x80 | bytes.length, ...bytes);
}

/** One element: `tag`, then its contents' length, then the contents. */
export function element(tag: number, ...contents: readonly Uint8Array[]): Uint8Array {
  const body = concatBytes(contents);
  return concatBytes([Uint8Array.of(tag), length(body.length), body]);
}

export const sequence = (...items: readonly Uint8Array[]) => element(TAG.sequence, ...items);
export const set = (...items: readonly Uint8Array[]) => element(TAG.set, ...items);

/** A non-negative INTEGER from its big-endian bytes: leading zeros dropped, a zero byte added before a high bit. */
export function unsigned(bytes: Uint8Array): Uint8Array {
  let at = 0;
  while (at < bytes.length - 1 && bytes[at] === 0) at++;
  const v = bytes.subarray(at);
  return element(TAG.integer, (v[0] ?? 0) & 0x80 ? Uint8Array.of(0, ...v) : v.length ? v : Uint8Array.of(0));
}

/** A small non-negative INTEGER. */
export function small(n: number): Uint8Array {
  return unsigned(Uint8Array.from(n > 0 ? bigEndian(n) : [0]));
}

/** An OBJECT IDENTIFIER from its dotted form. */
export function oid(dotted: string): Uint8Array {
  const arcs = dotted.split(".").map(Number);
  if (arcs.length < 2 || arcs.some((a) => !Number.isSafeInteger(a) || a < 0)) throw new Error(`bad OID ${dotted}`);
  const out: number[] = [];
  for (const arc of [arcs[0]! * 40 + arcs[1]!, ...arcs.slice(2)]) {
    const groups = [arc & 0x7f];
    for (let v = Math.floor(arc / 128); v > 0; v = Math.floor(v / 128)) groups.unshift(0x80 | (v & 0x7f));
    out.push(...groups);
  }
  return element(TAG.oid, Uint8Array.from(out));
}

export const utf8 = (s: string) => element(TAG.utf8String, new TextEncoder().encode(s));
export const octets = (bytes: Uint8Array) => element(TAG.octetString, bytes);
export const boolean = (v: boolean) => element(TAG.boolean, Uint8Array.of(v ? 0xff : 0));
/** A BIT STRING of whole bytes, or with `unused` low bits of its last byte unused. */
export const bits = (bytes: Uint8Array, unused = 0) => element(TAG.bitString, Uint8Array.of(unused), bytes);

/** A time as RFC 5280 wants it: UTCTime through 2049, GeneralizedTime from 2050; whole seconds, UTC. */
export function time(d: Date): Uint8Array {
  const two = (n: number) => String(n).padStart(2, "0");
  const rest = `${two(d.getUTCMonth() + 1)}${two(d.getUTCDate())}${two(d.getUTCHours())}${two(d.getUTCMinutes())}` +
    `${two(d.getUTCSeconds())}Z`;
  const y = d.getUTCFullYear();
  if (y >= 1950 && y < 2050) return element(TAG.utcTime, new TextEncoder().encode(`${two(y % 100)}${rest}`));
  return element(TAG.generalizedTime, new TextEncoder().encode(`${String(y).padStart(4, "0")}${rest}`));
}

/** The bytes of an IPv4 (4) or IPv6 (16) address, as a certificate's iPAddress name holds them. */
export function ipBytes(text: string): Uint8Array {
  const v4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text);
  if (v4) {
    const parts = v4.slice(1).map(Number);
    if (parts.every((p) => p <= 255)) return Uint8Array.from(parts);
  }
  const halves = text.split("::");
  if (text.includes(":") && halves.length <= 2) {
    const groups = (h: string) => (h ? h.split(":") : []);
    const [head, tail] = [groups(halves[0]!), groups(halves[1] ?? "")];
    const missing = 8 - head.length - tail.length;
    const all = halves.length === 2 ? [...head, ...Array(missing).fill("0"), ...tail] : head;
    if (
      (halves.length === 2 ? missing >= 1 : true) && all.length === 8 && all.every((g) => /^[0-9a-f]{1,4}$/i.test(g))
    ) {
      return Uint8Array.from(all.flatMap((g) => [parseInt(g, 16) >> 8, parseInt(g, 16) & 0xff]));
    }
  }
  throw new Error(`not an IP address: ${text}`);
}
