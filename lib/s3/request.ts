/**
 * The shape of one S3 request, and user metadata as headers: shared by the
 * client (./client.ts) and the multipart upload (./multipart.ts).
 *
 * @module
 */

/** One request to the store (signed and sent by the client). */
export interface S3Request {
  method: "GET" | "HEAD" | "PUT" | "POST" | "DELETE";
  /** The operation's name for errors (`HeadBucket`, `UploadPart`, …). */
  operation: string;
  bucket: string;
  key?: string;
  query?: Record<string, string>;
  headers?: Record<string, string>;
  body?: Uint8Array;
  signal?: AbortSignal;
}

/** A PUT whose body is written piece by piece. */
export interface OpenPut {
  write(bytes: Uint8Array): Promise<void>;
  /** The answer once the body is whole (2xx; otherwise throws an S3Error). */
  finish(): Promise<Response>;
  /** Drops the request: nothing is stored. */
  close(): void;
}

/** Sends signed requests: what ./multipart.ts needs of the client. */
export interface Requester {
  /** Answers the response when its status is 2xx; otherwise throws an S3Error. */
  request(r: S3Request): Promise<Response>;
  /** Opens a PUT of a `length`-byte body to be written piece by piece (where the client can). */
  openPut?(r: S3Request & { length: number }): Promise<OpenPut>;
}

/** The `x-amz-meta-*` headers of `metadata`; names must be lower-case `[a-z0-9-]`, values printable ASCII. */
export function metadataHeaders(metadata: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(metadata)) {
    if (!/^[a-z0-9][a-z0-9-]*$/.test(k)) throw new RangeError(`metadata name ${JSON.stringify(k)}: use [a-z0-9-]`);
    if (!/^[\x20-\x7e]*$/.test(v)) throw new RangeError(`metadata ${k}: printable ASCII only`);
    out[`x-amz-meta-${k}`] = v;
  }
  return out;
}
