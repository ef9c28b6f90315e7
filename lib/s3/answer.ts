/**
 * What the store answers, read: objects from a listing or from an object's
 * headers, and refusals as {@link S3Error}s (S3's `<Code>` read from at most
 * the first 64 KiB of the body, never the body itself in a message).
 *
 * @module
 */
import { kindOfAnswer, S3Error } from "./errors.ts";
import type { S3Request } from "./request.ts";
import { text } from "./xml.ts";
import { concatBytes } from "../encoding.ts";

/** An object as a listing names it. */
export interface S3Object {
  key: string;
  size: number;
  /** ISO 8601, as the store says. */
  lastModified: string;
  etag: string;
}

/** An object with its user metadata (names without the `x-amz-meta-` prefix). */
export interface S3ObjectInfo extends S3Object {
  metadata: Record<string, string>;
}

const ERROR_BODY_LIMIT = 64 * 1024;

/** `res` when its status is 2xx; otherwise an {@link S3Error} with S3's code (read from the body's `<Code>`). */
export async function answered(res: Response, r: S3Request): Promise<Response> {
  if (res.status >= 200 && res.status < 300) return res;
  const code = res.headers.get("x-amz-error-code") ?? text(await limitedText(res), "Code");
  throw new S3Error(kindOfAnswer(res.status, code), r.operation, r.bucket, r.key, res.status, code);
}

/** A time as the store wrote it (ISO 8601 or an HTTP date), as ISO 8601 with milliseconds; "" when unreadable. */
export function isoTime(t: string | undefined): string {
  const d = t ? new Date(t) : undefined;
  return d && !isNaN(d.getTime()) ? d.toISOString() : "";
}

/** An object's fields from a HEAD's or GET's headers. */
export function objectOf(key: string, h: Headers, size: number): S3ObjectInfo {
  const metadata: Record<string, string> = {};
  for (const [name, value] of h) if (name.startsWith("x-amz-meta-")) metadata[name.slice(11)] = value;
  const modified = h.get("last-modified");
  return {
    key,
    size,
    lastModified: isoTime(modified ?? undefined),
    etag: h.get("etag") ?? "",
    metadata,
  };
}

/** At most the first 64 KiB of a refusal's body, as text ("" when it cannot be read). */
async function limitedText(res: Response): Promise<string> {
  if (!res.body) return "";
  const reader = res.body.getReader();
  const parts: Uint8Array[] = [];
  let n = 0;
  try {
    while (n < ERROR_BODY_LIMIT) {
      const { done, value } = await reader.read();
      if (done) break;
      parts.push(value);
      n += value.byteLength;
    }
  } catch {
    return "";
  } finally {
    reader.cancel().catch(() => {});
  }
  return new TextDecoder().decode(concatBytes(parts).subarray(0, ERROR_BODY_LIMIT));
}
