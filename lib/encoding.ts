/**
 * Small encodings every layer needs, defined once: the plain-object check
 * and base64 of UTF-8 text (as Secret `data`, kubeconfig `*-data` fields and
 * admission patches carry it).
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
  const bytes = new TextEncoder().encode(text);
  let bin = "";
  for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(bin);
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
