/**
 * Small encodings every layer needs, defined once: the plain-object check,
 * base64 of UTF-8 text (as Secret `data`, kubeconfig `*-data` fields and
 * admission patches carry it) and of bytes, and bytes joined.
 *
 * @module
 */

/**
 * Whether `v` is a plain object (not `null`, not an array).
 *
 * @example
 * ```ts
 * import { isRecord } from "./encoding.ts";
 * isRecord({ a: 1 }); // true
 * isRecord([1]); // false
 * ```
 */
export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * Base64 of the UTF-8 bytes of `text` (`btoa` alone throws beyond Latin-1
 * and encodes Latin-1 as one byte per character).
 *
 * @example
 * ```ts
 * import { encodeBase64 } from "./encoding.ts";
 * encodeBase64("ü"); // "w7w="
 * ```
 */
export function encodeBase64(text: string): string {
  return bytesBase64(new TextEncoder().encode(text));
}

/**
 * Base64 of `bytes` (in chunks: a spread of a whole large array would overflow the call stack).
 *
 * @example
 * ```ts
 * import { bytesBase64 } from "./encoding.ts";
 * bytesBase64(Uint8Array.of(0xff, 0)); // "/wA="
 * ```
 */
export function bytesBase64(bytes: Uint8Array): string {
  let bin = "";
  for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(bin);
}

/**
 * The bytes of `parts`, one after the other, in one new array.
 *
 * @example
 * ```ts
 * import { concatBytes } from "./encoding.ts";
 * concatBytes([Uint8Array.of(1), Uint8Array.of(2, 3)]); // Uint8Array [1, 2, 3]
 * ```
 */
export function concatBytes(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

const strict = new TextDecoder("utf-8", { fatal: true });

/**
 * The UTF-8 text base64 `b64` encodes. Throws on invalid base64 or
 * invalid UTF-8.
 *
 * @example
 * ```ts
 * import { decodeBase64 } from "./encoding.ts";
 * decodeBase64("w7w="); // "ü"
 * ```
 */
export function decodeBase64(b64: string): string {
  const bin = atob(b64);
  return strict.decode(Uint8Array.from(bin, (c) => c.charCodeAt(0)));
}
