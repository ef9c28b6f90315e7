/**
 * What went wrong talking to an object store, as a kind a caller can act on
 * (and name to a user: a condition, an Event), never the store's response
 * body: only S3's error `Code` and the HTTP status travel in the message.
 *
 * @module
 */

/**
 * Why a request to the store failed:
 * - `credentials`: the access key is unknown or the signature does not match (wrong secret, clock skew);
 * - `denied`: the keys are known but may not do this (a policy refuses it);
 * - `no-bucket` / `no-object`: the bucket or the object does not exist;
 * - `unreachable`: no connection (refused, reset, no route, the name does not resolve);
 * - `tls`: the TLS handshake failed (an unknown CA, a name the certificate does not carry);
 * - `timeout`: no answer within the request's deadline;
 * - `redirect`: the store answered with a redirect, which is never followed (a wrong region or endpoint);
 * - `server`: the store failed (HTTP 5xx, or a 200 carrying an error);
 * - `refused`: any other refusal (HTTP 4xx);
 * - `protocol`: an answer that is not what S3 sends;
 * - `aborted`: the caller's signal stopped it.
 */
export type S3ErrorKind =
  | "credentials"
  | "denied"
  | "no-bucket"
  | "no-object"
  | "unreachable"
  | "tls"
  | "timeout"
  | "redirect"
  | "server"
  | "refused"
  | "protocol"
  | "aborted";

/** A generic sentence per kind, for messages. */
const CAUSE: Record<S3ErrorKind, string> = {
  credentials: "the store does not accept the access key or its secret",
  denied: "the store refuses these credentials this operation",
  "no-bucket": "no such bucket",
  "no-object": "no such object",
  unreachable: "the store cannot be reached",
  tls: "the TLS handshake with the store failed (check the CA bundle and the endpoint's name)",
  timeout: "the store did not answer in time",
  redirect: "the store answered with a redirect, not followed (check the endpoint and the region)",
  server: "the store failed",
  refused: "the store refused the request",
  protocol: "the store's answer is not S3's",
  aborted: "stopped",
};

/** A failed S3 request: its operation, bucket and key, the kind, and S3's error code and HTTP status if any. */
export class S3Error extends Error {
  constructor(
    readonly kind: S3ErrorKind,
    readonly operation: string,
    readonly bucket: string,
    readonly key: string | undefined,
    readonly status?: number,
    readonly code?: string,
    options?: ErrorOptions,
  ) {
    const where = key === undefined ? bucket : `${bucket}/${key}`;
    const detail = [status ? `HTTP ${status}` : "", code ?? ""].filter(Boolean).join(" ");
    super(`s3 ${operation} ${where}: ${CAUSE[kind]}${detail ? ` (${detail})` : ""}`, options);
    this.name = "S3Error";
  }
}

/** S3 error codes that mean the keys themselves are wrong. */
const CREDENTIAL_CODES = new Set([
  "InvalidAccessKeyId",
  "SignatureDoesNotMatch",
  "AuthorizationHeaderMalformed",
  "RequestTimeTooSkewed",
  "ExpiredToken",
  "InvalidToken",
  "InvalidSecurity",
  "XAdminUserNotFound", // versitygw's answer to an unknown access key
]);

/** The kind of an HTTP answer that is not a success, from its status and S3 error code. */
export function kindOfAnswer(status: number, code: string | undefined): S3ErrorKind {
  if (code === "NoSuchBucket") return "no-bucket";
  if (code === "NoSuchKey" || code === "NoSuchUpload") return "no-object";
  if (code && CREDENTIAL_CODES.has(code)) return "credentials";
  if (code === "AccessDenied" || status === 403) return "denied";
  if (status >= 300 && status < 400) return "redirect";
  if (status >= 500) return "server";
  return "refused";
}

/** The kind of a failed `fetch` (no answer at all), from its error. */
export function kindOfFailure(err: unknown, timedOut: boolean, aborted: boolean): S3ErrorKind {
  if (timedOut) return "timeout";
  if (aborted) return "aborted";
  const text = String(err instanceof Error ? `${err.message} ${String(err.cause ?? "")}` : err).toLowerCase();
  if (/certificate|tls|handshake|unknownissuer|ssl/.test(text)) return "tls";
  return "unreachable";
}
