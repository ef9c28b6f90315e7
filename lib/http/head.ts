/**
 * The request head of HTTP/1.1, parsed strictly (RFC 9112): a request line
 * of a method token, an origin-form target and `HTTP/1.0` or `HTTP/1.1`,
 * header lines of a token, a colon with no space before it and a value of
 * visible characters; CRLF line ends only. Whatever two parsers could read
 * differently is refused with a status, never guessed at: no obs-fold, no
 * bare CR or LF, no NUL, at most one `Content-Length` value (digits only),
 * no `Transfer-Encoding` (NICO takes no chunked bodies), one `Host` on
 * HTTP/1.1.
 *
 * @module
 */

/** Largest request head, request line and headers with their final empty line. */
export const MAX_HEAD_BYTES = 16 * 1024;

/** A request head NICO accepts. */
export interface RequestHead {
  method: string;
  /** Origin-form target: `/path?query`. */
  target: string;
  version: "1.0" | "1.1";
  /** Header names lowercased, values trimmed, in order. */
  headers: [string, string][];
  /** Body length (0 when no `Content-Length`). */
  contentLength: number;
  /** Whether the client asked to close after the answer (HTTP/1.0 without keep-alive, or `Connection: close`). */
  close: boolean;
}

/** Why a head is refused: the status to answer, then close. */
export interface HeadError {
  status: 400 | 411 | 431 | 505;
  message: string;
}

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** Field value: visible ASCII, obs-text, spaces and tabs; never CR, LF or NUL. */
const VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
const TARGET = /^\/[\x21-\x7e]*$/;

/** Bytes as one character each (latin-1), so every byte can be checked as it came. */
function latin1(bytes: Uint8Array): string {
  let out = "";
  for (let i = 0; i < bytes.length; i += 4096) out += String.fromCharCode(...bytes.subarray(i, i + 4096));
  return out;
}

const bad = (message: string): HeadError => ({ status: 400, message });

/** The offset just past the CRLF CRLF that ends a head in `bytes`, or -1 when it is not there yet. */
export function headEnd(bytes: Uint8Array, from = 0): number {
  for (let i = Math.max(0, from); i + 3 < bytes.length; i++) {
    if (bytes[i] === 13 && bytes[i + 1] === 10 && bytes[i + 2] === 13 && bytes[i + 3] === 10) return i + 4;
  }
  return -1;
}

/** Body length from every `Content-Length` value: all the same digits, else an error. */
function contentLength(values: string[]): number | HeadError {
  const parts = values.flatMap((v) => v.split(",").map((p) => p.trim()));
  if (parts.length === 0) return 0;
  if (!parts.every((p) => /^\d{1,15}$/.test(p))) return bad("bad Content-Length: digits only");
  if (new Set(parts.map(Number)).size > 1) return bad("bad Content-Length: more than one value");
  return Number(parts[0]);
}

/**
 * Parses a head (the bytes up to and including CRLF CRLF, latin-1).
 *
 * @example
 * ```ts
 * import { parseHead } from "./head.ts";
 * const bytes = new TextEncoder().encode("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
 * const head = parseHead(bytes);
 * if ("status" in head) throw new Error(head.message);
 * head.target; // "/healthz"
 * ```
 */
export function parseHead(bytes: Uint8Array): RequestHead | HeadError {
  if (bytes.length > MAX_HEAD_BYTES) return { status: 431, message: "request headers too large" };
  const raw = latin1(bytes);
  if (!raw.endsWith("\r\n\r\n")) return bad("the head must end with an empty line");
  const lines = raw.slice(0, -4).split("\r\n");
  if (lines.some((l) => l.includes("\r") || l.includes("\n"))) return bad("bare CR or LF in the head");
  const [line = "", ...fields] = lines;
  const parts = line.split(" ");
  if (parts.length !== 3) return bad("bad request line");
  const [method = "", target = "", proto = ""] = parts;
  if (!TOKEN.test(method)) return bad("bad method");
  if (!TARGET.test(target)) return bad("bad request target: an absolute path is expected");
  const v = /^HTTP\/(\d)\.(\d)$/.exec(proto);
  if (!v) return bad("bad HTTP version");
  if (v[1] !== "1") return { status: 505, message: "HTTP/1.1 only" };
  const version = v[2] === "0" ? "1.0" : "1.1";
  const headers: [string, string][] = [];
  for (const field of fields) {
    const colon = field.indexOf(":");
    const name = field.slice(0, colon);
    if (colon <= 0 || !TOKEN.test(name)) return bad("bad header line (no obs-fold, no space before the colon)");
    const value = field.slice(colon + 1).replace(/^[ \t]+|[ \t]+$/g, "");
    if (!VALUE.test(value)) return bad("bad byte in a header value");
    headers.push([name.toLowerCase(), value]);
  }
  const all = (n: string) => headers.filter(([k]) => k === n).map(([, x]) => x);
  if (all("transfer-encoding").length > 0) {
    return { status: 411, message: "send the body with Content-Length (chunked bodies are not accepted)" };
  }
  const length = contentLength(all("content-length"));
  if (typeof length !== "number") return length;
  const hosts = all("host");
  if (hosts.length > 1 || (version === "1.1" && hosts.length === 0)) return bad("exactly one Host header");
  const conn = all("connection").join(",").toLowerCase().split(",").map((t) => t.trim());
  const close = conn.includes("close") || (version === "1.0" && !conn.includes("keep-alive"));
  return { method, target, version, headers, contentLength: length, close };
}
