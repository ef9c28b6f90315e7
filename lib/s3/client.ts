/**
 * A narrow S3 client: what keeping backups in an S3-compatible store needs,
 * over `fetch` with our own SigV4 signer (./sigv4.ts), path-style. Each
 * request has its own deadline, redirects are never followed (a redirect
 * means a wrong endpoint or region, and following one would send the
 * request elsewhere), an optional CA bundle is trusted for the endpoint's
 * certificate, and failures are {@link S3Error}s of a kind a caller can
 * name to a user, with S3's error `Code` but never the response's body.
 *
 * Objects' user metadata (`x-amz-meta-*`) is kept with lower-case names and
 * printable ASCII values (what every store keeps as it was given).
 *
 * Multipart upload from a stream lives in ./multipart.ts ({@link S3Client.upload}).
 *
 * @module
 */
import { kindOfAnswer, kindOfFailure, S3Error } from "./errors.ts";
import { EMPTY_SHA256, objectUrl, presignGetUrl, type S3Credentials, sha256Hex, signHeaders } from "./sigv4.ts";
import { elements, text } from "./xml.ts";
import { type UploadOptions, type UploadResult, uploadStream } from "./multipart.ts";
import { metadataHeaders, type OpenPut, type S3Request } from "./request.ts";
import { openPut, putBody, PutRefused } from "./put.ts";
import { answered, isoTime, objectOf, type S3Object, type S3ObjectInfo } from "./answer.ts";

export type { S3Credentials } from "./sigv4.ts";
export type { UploadOptions, UploadResult } from "./multipart.ts";
export { metadataHeaders, type S3Request } from "./request.ts";
export { S3Error, type S3ErrorKind } from "./errors.ts";
export type { S3Object, S3ObjectInfo } from "./answer.ts";

/** Where the store is and how to reach it. */
export interface S3ClientOptions {
  /** `https://host[:port]` (or `http://` on loopback in tests); path-style requests go below it. */
  endpoint: string;
  /** The region requests are signed for (`us-east-1` where the store has none). */
  region: string;
  credentials: S3Credentials;
  /** A PEM CA bundle to trust for the endpoint (default: the system's roots). */
  caPem?: string;
  /** Each request's deadline (default 30 s; a part's upload counts as one request). */
  timeoutMs?: number;
}

/** An S3 client for one endpoint and one set of keys. */
export class S3Client {
  readonly #o: S3ClientOptions;
  readonly #timeoutMs: number;
  #http: Deno.HttpClient | undefined;

  constructor(o: S3ClientOptions) {
    new URL(o.endpoint); // throws on a malformed endpoint, before any request
    this.#o = o;
    this.#timeoutMs = o.timeoutMs ?? 30_000;
  }

  #client(): Deno.HttpClient {
    return this.#http ??= Deno.createHttpClient(this.#o.caPem ? { caCerts: [this.#o.caPem] } : {});
  }

  /**
   * Sends one signed request and answers the response when its status is 2xx; otherwise throws an {@link S3Error}
   * (the body of a refusal is read only for its `<Code>`). The deadline covers the answer's headers; the caller
   * reads the body (`signal` still applies).
   */
  async request(r: S3Request): Promise<Response> {
    const url = objectUrl(this.#o.endpoint, r.bucket, r.key ?? "", r.query ?? {});
    const payload = r.body ? sha256Hex(r.body) : EMPTY_SHA256;
    const headers = await signHeaders({
      method: r.method,
      url,
      headers: { ...(r.headers ?? {}), ...(r.body ? { "content-length": String(r.body.byteLength) } : {}) },
      payloadSha256: payload,
      region: this.#o.region,
      credentials: this.#o.credentials,
    });
    const deadline = AbortSignal.timeout(this.#timeoutMs);
    const signal = r.signal ? AbortSignal.any([r.signal, deadline]) : deadline;
    let res: Response;
    try {
      if (r.method === "PUT" && r.body) {
        // A body is written from the caller's buffer, over a connection of its own (./put.ts says why).
        const caPem = this.#o.caPem;
        const a = await putBody(url, headers, r.body, { stop: signal, ...(caPem ? { caPem } : {}) });
        res = new Response(a.text, { status: a.status, headers: a.headers });
      } else {
        const body = r.body ? { body: r.body as Uint8Array<ArrayBuffer> } : {};
        res = await fetch(url, {
          method: r.method,
          headers,
          ...body,
          redirect: "manual",
          client: this.#client(),
          signal,
        });
      }
    } catch (err) {
      const kind = kindOfFailure(err, deadline.aborted, r.signal?.aborted ?? false);
      throw new S3Error(kind, r.operation, r.bucket, r.key, undefined, undefined, { cause: err });
    }
    return await answered(res, r);
  }

  /**
   * Opens a PUT whose `length`-byte body the caller then writes piece by piece (an upload's part, sent as it arrives,
   * with no buffer): signed with `UNSIGNED-PAYLOAD`, as its hash cannot be known first (TLS, and the ETag the caller
   * can check, guard the bytes). The deadline applies to each write and to the answer, not to the whole body.
   */
  async openPut(r: S3Request & { length: number }): Promise<OpenPut> {
    const url = objectUrl(this.#o.endpoint, r.bucket, r.key ?? "", r.query ?? {});
    const headers = await signHeaders({
      method: "PUT",
      url,
      headers: { ...(r.headers ?? {}), "content-length": String(r.length) },
      payloadSha256: "UNSIGNED-PAYLOAD",
      region: this.#o.region,
      credentials: this.#o.credentials,
    });
    const idle = new AbortController();
    const stop = r.signal ? AbortSignal.any([r.signal, idle.signal]) : idle.signal;
    let timer = setTimeout(() => idle.abort(), this.#timeoutMs);
    const awake = () => (clearTimeout(timer), timer = setTimeout(() => idle.abort(), this.#timeoutMs));
    const fail = (err: unknown): never => {
      clearTimeout(timer);
      if (err instanceof S3Error) throw err;
      if (err instanceof PutRefused && err.answer) {
        const { status, headers } = err.answer;
        const code = headers.get("x-amz-error-code") ?? text(err.answer.text, "Code");
        throw new S3Error(kindOfAnswer(status, code), r.operation, r.bucket, r.key, status, code);
      }
      const kind = kindOfFailure(err, idle.signal.aborted, r.signal?.aborted ?? false);
      throw new S3Error(kind, r.operation, r.bucket, r.key, undefined, undefined, { cause: err });
    };
    const caPem = this.#o.caPem;
    const put = await openPut(url, headers, r.length, { stop, ...(caPem ? { caPem } : {}) }).catch(fail);
    return {
      write: (bytes) => (awake(), put.write(bytes).catch(fail)),
      async finish() {
        awake();
        const a = await put.finish().catch(fail);
        clearTimeout(timer);
        return await answered(new Response(a.text, { status: a.status, headers: a.headers }), r);
      },
      close() {
        clearTimeout(timer);
        put.close();
      },
    };
  }

  /**
   * Whether the bucket is there and these keys may use it; throws an {@link S3Error} saying why not
   * (`no-bucket`, `credentials`, `denied`, `unreachable`, `tls`, …). A HEAD answer has no body, so a refusal without a
   * code is asked again as a listing of no keys, whose answer names S3's code.
   */
  async headBucket(bucket: string, signal?: AbortSignal): Promise<void> {
    try {
      await this.request({ method: "HEAD", operation: "HeadBucket", bucket, ...(signal ? { signal } : {}) });
    } catch (err) {
      if (!(err instanceof S3Error) || err.code || !err.status || err.status >= 500 || err.status < 400) throw err;
      const q = { "list-type": "2", "max-keys": "0" };
      const res = await this.request({ method: "GET", operation: "HeadBucket", bucket, query: q, ...opt(signal) });
      await res.body?.cancel();
    }
  }

  /** An object's size, time and user metadata; `no-object` when there is none. */
  async headObject(bucket: string, key: string, signal?: AbortSignal): Promise<S3ObjectInfo> {
    let res: Response;
    try {
      res = await this.request({ method: "HEAD", operation: "HeadObject", bucket, key, ...opt(signal) });
    } catch (err) {
      if (err instanceof S3Error && err.status === 404 && !err.code) {
        throw new S3Error("no-object", "HeadObject", bucket, key, 404, undefined, { cause: err });
      }
      throw err;
    }
    return { ...objectOf(key, res.headers, Number(res.headers.get("content-length") ?? "0")) };
  }

  /**
   * The last `n` bytes of an object (`Range: bytes=-n`) with its user metadata and its whole size: one small request
   * where a HEAD would give the metadata and not the bytes.
   */
  async tail(
    bucket: string,
    key: string,
    n: number,
    signal?: AbortSignal,
  ): Promise<S3ObjectInfo & { bytes: Uint8Array }> {
    const res = await this.request({
      method: "GET",
      operation: "GetObject",
      bucket,
      key,
      headers: { range: `bytes=-${n}` },
      ...opt(signal),
    });
    const bytes = new Uint8Array(await res.arrayBuffer());
    const total = /\/(\d+)$/.exec(res.headers.get("content-range") ?? "")?.[1];
    return { ...objectOf(key, res.headers, total ? Number(total) : bytes.byteLength), bytes };
  }

  /** Every object under `prefix`, in key order, following continuation tokens (1,000 a page). */
  async list(bucket: string, prefix: string, signal?: AbortSignal): Promise<S3Object[]> {
    const out: S3Object[] = [];
    let token: string | undefined;
    do {
      const query: Record<string, string> = {
        "list-type": "2",
        prefix,
        ...(token ? { "continuation-token": token } : {}),
      };
      const res = await this.request({ method: "GET", operation: "ListObjectsV2", bucket, query, ...opt(signal) });
      const xml = await res.text();
      if (!xml.includes("ListBucketResult")) {
        throw new S3Error("protocol", "ListObjectsV2", bucket, undefined, res.status);
      }
      for (const c of elements(xml, "Contents")) {
        out.push({
          key: text(c, "Key") ?? "",
          size: Number(text(c, "Size") ?? "0"),
          lastModified: isoTime(text(c, "LastModified")),
          etag: text(c, "ETag") ?? "",
        });
      }
      token = text(xml, "IsTruncated") === "true" ? text(xml, "NextContinuationToken") : undefined;
    } while (token);
    return out;
  }

  /** Every object under `prefix` with its user metadata (a listing, then a HEAD of each, a few at once). */
  async listWithMetadata(bucket: string, prefix: string, signal?: AbortSignal): Promise<S3ObjectInfo[]> {
    const objects = await this.list(bucket, prefix, signal);
    const out: S3ObjectInfo[] = [];
    for (let i = 0; i < objects.length; i += 8) {
      const heads = objects.slice(i, i + 8).map((o) => this.headObject(bucket, o.key, signal));
      out.push(...await Promise.all(heads));
    }
    return out;
  }

  /** Writes a small object in one request, with user metadata. */
  async put(
    bucket: string,
    key: string,
    body: Uint8Array,
    metadata: Record<string, string> = {},
    signal?: AbortSignal,
  ) {
    const headers = metadataHeaders(metadata);
    const res = await this.request({
      method: "PUT",
      operation: "PutObject",
      bucket,
      key,
      headers,
      body,
      ...opt(signal),
    });
    await res.body?.cancel();
  }

  /** Deletes an object (deleting one that is not there succeeds, as S3 says). */
  async delete(bucket: string, key: string, signal?: AbortSignal): Promise<void> {
    const res = await this.request({ method: "DELETE", operation: "DeleteObject", bucket, key, ...opt(signal) });
    await res.body?.cancel();
  }

  /** A URL that GETs this one object without credentials for `expiresSeconds` (at most 7 days). */
  presignGet(bucket: string, key: string, expiresSeconds: number, now?: Date): Promise<string> {
    const url = objectUrl(this.#o.endpoint, bucket, key);
    const o = this.#o;
    return presignGetUrl(url, {
      region: o.region,
      credentials: o.credentials,
      expiresSeconds,
      ...(now ? { now } : {}),
    });
  }

  /**
   * Uploads a stream of bytes as one object by multipart upload, holding at most two parts in memory; completes only
   * after the stream ended and `options.beforeComplete` passed, and aborts the upload on any failure (so no object is
   * left). See ./multipart.ts.
   */
  upload(
    bucket: string,
    key: string,
    source: AsyncIterable<Uint8Array>,
    options: UploadOptions = {},
  ): Promise<UploadResult> {
    return uploadStream(this, bucket, key, source, options);
  }

  /** Closes the connections; a later request opens new ones. */
  close(): void {
    this.#http?.close();
    this.#http = undefined;
  }
}

const opt = (signal: AbortSignal | undefined) => (signal ? { signal } : {});
