/**
 * AWS Signature Version 4 for S3, on WebCrypto: the `Authorization` header
 * of a request (the payload's SHA-256 in `x-amz-content-sha256`), and
 * presigned GET URLs (the signature in the query, `UNSIGNED-PAYLOAD`), which
 * let a host fetch one object for a limited time without credentials.
 * Path-style addressing only (`https://endpoint/bucket/key`): it works with
 * every S3-compatible server and needs no wildcard DNS.
 *
 * @module
 */
import { createHash } from "node:crypto";

/** The keys a request is signed with (the secret never leaves this module's HMACs). */
export interface S3Credentials {
  accessKeyId: string;
  secretAccessKey: string;
  /** For temporary credentials (sent as `x-amz-security-token`). */
  sessionToken?: string;
}

/** What is signed: the method, the URL (query included) and the headers to sign besides `host`. */
export interface SignInput {
  method: string;
  url: URL;
  /** Lower-case names; `host`, `x-amz-date`, `x-amz-content-sha256` and the token are added. */
  headers?: Record<string, string>;
  /** The payload's SHA-256, hex (`UNSIGNED-PAYLOAD` where it is not known). */
  payloadSha256: string;
  region: string;
  credentials: S3Credentials;
  /** The signing time (default: now). */
  now?: Date;
}

/** The SHA-256 of an empty payload, hex. */
export const EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

const enc = new TextEncoder();

/** Lower-case hex of `bytes`. */
export function hex(bytes: ArrayBuffer | Uint8Array): string {
  const b = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
  let out = "";
  for (const x of b) out += x.toString(16).padStart(2, "0");
  return out;
}

/**
 * The SHA-256 of `data`, hex. node:crypto's hash reads the bytes where they are; WebCrypto's `digest` copies them
 * first (as its specification says), which for an 8 MiB part is 8 MiB of garbage.
 */
export function sha256Hex(data: string | Uint8Array): string {
  return createHash("sha256").update(data).digest("hex");
}

async function hmac(key: Uint8Array | string, data: string): Promise<Uint8Array> {
  const raw = typeof key === "string" ? enc.encode(key) : key;
  const k = await crypto.subtle.importKey(
    "raw",
    raw as Uint8Array<ArrayBuffer>,
    { name: "HMAC", hash: "SHA-256" },
    false,
    [
      "sign",
    ],
  );
  return new Uint8Array(await crypto.subtle.sign("HMAC", k, enc.encode(data)));
}

/** RFC 3986 encoding as SigV4 wants it (`/` kept in paths when `keepSlash`). */
export function uriEncode(s: string, keepSlash = false): string {
  let out = "";
  for (const ch of enc.encode(s)) {
    const c = String.fromCharCode(ch);
    if (/[A-Za-z0-9\-._~]/.test(c) || (keepSlash && c === "/")) out += c;
    else out += `%${ch.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

/** `20130524T000000Z` and `20130524` of a time. */
function stamps(now: Date): { amzDate: string; day: string } {
  const amzDate = now.toISOString().replace(/[-:]/g, "").replace(/\.\d{3}/, "");
  return { amzDate, day: amzDate.slice(0, 8) };
}

/** The canonical query string: every parameter encoded, sorted by name then value. */
function canonicalQuery(url: URL): string {
  return [...url.searchParams].map(([k, v]) => [uriEncode(k), uriEncode(v)] as const)
    .sort(([a, x], [b, y]) => (a < b ? -1 : a > b ? 1 : x < y ? -1 : x > y ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`).join("&");
}

/** The request's path as sent: already encoded by {@link objectUrl}, so used as it is. */
const canonicalPath = (url: URL) => url.pathname || "/";

async function signature(
  secret: string,
  day: string,
  region: string,
  amzDate: string,
  canonicalRequest: string,
): Promise<string> {
  const scope = `${day}/${region}/s3/aws4_request`;
  const toSign = `AWS4-HMAC-SHA256\n${amzDate}\n${scope}\n${sha256Hex(canonicalRequest)}`;
  let key = await hmac(`AWS4${secret}`, day);
  for (const part of [region, "s3", "aws4_request"]) key = await hmac(key, part);
  return hex(await hmac(key, toSign));
}

/**
 * The headers to send with a request: the input's, plus `x-amz-date`, `x-amz-content-sha256`, the session token
 * and `authorization` (the `host` header is signed but left to `fetch`, which sends the URL's).
 */
export async function signHeaders(input: SignInput): Promise<Record<string, string>> {
  const { amzDate, day } = stamps(input.now ?? new Date());
  const headers: Record<string, string> = {
    ...lower(input.headers ?? {}),
    "x-amz-date": amzDate,
    "x-amz-content-sha256": input.payloadSha256,
    ...(input.credentials.sessionToken ? { "x-amz-security-token": input.credentials.sessionToken } : {}),
  };
  const all: Record<string, string> = { ...headers, host: input.url.host };
  const names = Object.keys(all).sort();
  const canonicalHeaders = names.map((n) => `${n}:${all[n]!.trim().replace(/\s+/g, " ")}\n`).join("");
  const signed = names.join(";");
  const request = [
    input.method,
    canonicalPath(input.url),
    canonicalQuery(input.url),
    canonicalHeaders,
    signed,
    input.payloadSha256,
  ].join("\n");
  const sig = await signature(input.credentials.secretAccessKey, day, input.region, amzDate, request);
  const scope = `${day}/${input.region}/s3/aws4_request`;
  headers.authorization =
    `AWS4-HMAC-SHA256 Credential=${input.credentials.accessKeyId}/${scope}, SignedHeaders=${signed}, Signature=${sig}`;
  return headers;
}

/**
 * A presigned GET URL for `url` (an object's URL), valid `expiresSeconds` (1 s to 7 days) from `now`: anyone holding
 * it can read that one object until then, and nothing else.
 */
export async function presignGetUrl(
  url: URL,
  o: { region: string; credentials: S3Credentials; expiresSeconds: number; now?: Date },
): Promise<string> {
  if (!Number.isInteger(o.expiresSeconds) || o.expiresSeconds < 1 || o.expiresSeconds > 604_800) {
    throw new RangeError(`a presigned URL lives 1 to 604800 seconds, not ${o.expiresSeconds}`);
  }
  const { amzDate, day } = stamps(o.now ?? new Date());
  const u = new URL(url);
  u.searchParams.set("X-Amz-Algorithm", "AWS4-HMAC-SHA256");
  u.searchParams.set("X-Amz-Credential", `${o.credentials.accessKeyId}/${day}/${o.region}/s3/aws4_request`);
  u.searchParams.set("X-Amz-Date", amzDate);
  u.searchParams.set("X-Amz-Expires", String(o.expiresSeconds));
  if (o.credentials.sessionToken) u.searchParams.set("X-Amz-Security-Token", o.credentials.sessionToken);
  u.searchParams.set("X-Amz-SignedHeaders", "host");
  const request = ["GET", canonicalPath(u), canonicalQuery(u), `host:${u.host}\n`, "host", "UNSIGNED-PAYLOAD"].join(
    "\n",
  );
  const sig = await signature(o.credentials.secretAccessKey, day, o.region, amzDate, request);
  return `${u.origin}${u.pathname}?${canonicalQuery(u)}&X-Amz-Signature=${sig}`;
}

/** The URL of `key` in `bucket` at `endpoint`, path-style, each segment encoded once. */
export function objectUrl(endpoint: string, bucket: string, key = "", query: Record<string, string> = {}): URL {
  if (key.split("/").some((seg) => seg === "." || seg === "..")) {
    throw new RangeError(`an object key with a "." or ".." segment (URLs resolve them): ${JSON.stringify(key)}`);
  }
  const base = endpoint.replace(/\/+$/, "");
  const path = key ? `/${uriEncode(bucket)}/${uriEncode(key, true)}` : `/${uriEncode(bucket)}`;
  const u = new URL(`${base}${path}`);
  for (const [k, v] of Object.entries(query)) u.searchParams.set(k, v);
  return u;
}

function lower(h: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(h).map(([k, v]) => [k.toLowerCase(), v]));
}
