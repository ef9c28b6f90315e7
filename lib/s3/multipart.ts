/**
 * Multipart upload from a stream of bytes, with bounded memory and nothing
 * left behind on failure.
 *
 * The stream is cut into parts of a fixed size (5 MiB unless told). Where
 * the stream's length is known once it starts (`size`; an etcd snapshot
 * says it in its first message), each part is written to the store as its
 * bytes arrive, with no buffer of ours, and each part's ETag is checked
 * against the MD5 of what was sent. Otherwise one part is filled while the
 * one before is being sent, so at most two parts' buffers exist (the two
 * are reused). Either way, a part whose body went whole is always answered
 * before the upload is aborted (one landing after an abort would leave the
 * upload behind). The upload completes only after the
 * stream ended by itself (a stream that checks its own content, such as an
 * etcd snapshot checking its SHA-256 trailer, throws instead of ending) and
 * the caller's `beforeComplete` passed; on any failure (the stream throws,
 * a part is refused, the check fails, the caller aborts) the upload is
 * aborted, so the store never shows an object: an incomplete multipart
 * upload is not one.
 *
 * @module
 */
import { S3Error } from "./errors.ts";
import { metadataHeaders, type Requester } from "./request.ts";
import { MAX_PARTS, PartWriter } from "./stream_parts.ts";
import { elements, escapeXml, text } from "./xml.ts";
import { sleep } from "../runtime/sleep.ts";

/** How {@link uploadStream} uploads. */
export interface UploadOptions {
  /** User metadata (`x-amz-meta-*`), set when the upload starts: lower-case names, printable ASCII values. */
  metadata?: Record<string, string>;
  /** Bytes a part (default and least 5 MiB, S3's least for all parts but the last). */
  partSize?: number;
  contentType?: string;
  /** Runs after the stream ended and every part is stored, before the upload completes; throwing aborts it. */
  beforeComplete?: (r: { size: number; parts: number }) => void | Promise<void>;
  signal?: AbortSignal;
  /**
   * The stream's exact length, known by the time its first chunk arrives (an etcd snapshot knows it from its first
   * message). Then, where the client can, each part is written to the store as its bytes arrive, with no part buffer
   * at all, and the store's ETag of each part is checked against the MD5 of what was sent; a stream that turns out
   * longer or shorter fails.
   */
  size?: () => number | undefined;
}

/** An object that was completed. */
export interface UploadResult {
  key: string;
  size: number;
  parts: number;
  etag: string;
}

/** S3's least size of a part that is not the last. */
const MIN_PART_SIZE = 5 * 1024 * 1024;
/**
 * 5 MiB, S3's least: two buffered parts are 10 MiB of memory, and an object may reach 48 GiB (10,000 parts), six times
 * etcd's largest database. With two buffered 8 MiB parts a backup of a 111 MiB database grew the process by 29 to 37
 * MiB, with 5 MiB by 25 to 31, with parts streamed (no buffer) by 19 to 20.
 */
export const DEFAULT_PART_SIZE = MIN_PART_SIZE;

/** Uploads `source` as `bucket`/`key`; see the module's comment. */
export async function uploadStream(
  s3: Requester,
  bucket: string,
  key: string,
  source: AsyncIterable<Uint8Array>,
  o: UploadOptions = {},
): Promise<UploadResult> {
  const partSize = o.partSize ?? DEFAULT_PART_SIZE;
  if (partSize < MIN_PART_SIZE) throw new RangeError(`a part is at least ${MIN_PART_SIZE} bytes, not ${partSize}`);
  const sig = o.signal ? { signal: o.signal } : {};
  const headers = { ...metadataHeaders(o.metadata ?? {}), ...(o.contentType ? { "content-type": o.contentType } : {}) };
  const started = await s3.request({
    method: "POST",
    operation: "CreateMultipartUpload",
    bucket,
    key,
    query: { uploads: "" },
    headers,
    ...sig,
  });
  const uploadId = text(await started.text(), "UploadId");
  if (!uploadId) throw new S3Error("protocol", "CreateMultipartUpload", bucket, key, started.status);
  try {
    const u = { bucket, key, uploadId, partSize, ...sig };
    const { size, etags } = o.size && s3.openPut
      ? await streamParts(s3 as Required<Requester>, u, source, o.size)
      : await sendParts(s3, u, source);
    await o.beforeComplete?.({ size, parts: etags.length });
    o.signal?.throwIfAborted();
    const etag = await complete(s3, bucket, key, uploadId, etags, o.signal);
    return { key, size, parts: etags.length, etag };
  } catch (err) {
    await abandon(s3, bucket, key, uploadId);
    throw err;
  }
}

/**
 * Aborts the upload until the store no longer lists it. A part whose connection was cut may still be written by the
 * store after a first abort and bring the upload back (S3 says to abort again in that case; versitygw does so). Best
 * effort, on deadlines of its own (the caller's signal may be what failed): an upload left open is still no object,
 * and a bucket's lifecycle rule (AbortIncompleteMultipartUpload) reclaims its parts.
 */
async function abandon(s3: Requester, bucket: string, key: string, uploadId: string): Promise<void> {
  const listed = () =>
    s3.request({ method: "GET", operation: "ListMultipartUploads", bucket, query: { uploads: "", prefix: key } })
      .then(async (r) => elements(await r.text(), "UploadId").some((id) => id.trim() === uploadId), () => true);
  for (let attempt = 0; attempt < 5; attempt++) {
    if (attempt > 0) await sleep(100 * 2 ** attempt);
    await s3.request({ method: "DELETE", operation: "AbortMultipartUpload", bucket, key, query: { uploadId } })
      .then((r) => r.body?.cancel(), () => {});
    // Gone now, and still gone a moment later (a cut part the store was still reading would have brought it back).
    if (!(await listed()) && !(await sleep(250).then(listed))) return;
  }
}

interface Upload {
  bucket: string;
  key: string;
  uploadId: string;
  partSize: number;
  signal?: AbortSignal;
}

/** Sends the stream's parts, one in flight while the next fills; answers the size and the parts' ETags in order. */
async function sendParts(s3: Requester, u: Upload, source: AsyncIterable<Uint8Array>) {
  const buffers = [new Uint8Array(u.partSize), new Uint8Array(u.partSize)];
  const etags: string[] = [];
  let inFlight: Promise<void> | undefined;
  let fill = 0; // bytes in the buffer being filled
  let size = 0;
  const send = async (bytes: Uint8Array) => {
    if (inFlight) await inFlight; // its buffer is the one to fill next
    if (etags.length === MAX_PARTS) {
      throw new RangeError(`more than ${MAX_PARTS} parts of ${u.partSize} bytes: upload with larger parts`);
    }
    const n = etags.length + 1;
    etags.push("");
    const p = sendPart(s3, u, n, bytes).then((etag) => void (etags[n - 1] = etag));
    p.catch(() => {}); // awaited below; never an unhandled rejection meanwhile
    inFlight = p;
  };
  try {
    for await (const chunk of source) {
      let at = 0;
      while (at < chunk.byteLength) {
        const buf = buffers[etags.length % 2]!;
        const n = Math.min(chunk.byteLength - at, u.partSize - fill);
        buf.set(chunk.subarray(at, at + n), fill);
        fill += n;
        at += n;
        size += n;
        if (fill === u.partSize) {
          await send(buf);
          fill = 0;
        }
      }
      u.signal?.throwIfAborted();
    }
    if (fill > 0 || etags.length === 0) await send(buffers[etags.length % 2]!.subarray(0, fill));
  } catch (err) {
    // The stream's own failure (or a part's, seen when the next part waited on it) wins; the part in flight ends first.
    await inFlight?.catch(() => {});
    throw err;
  }
  await inFlight; // the last part's failure surfaces here
  return { size, etags };
}

async function sendPart(s3: Requester, u: Upload, n: number, bytes: Uint8Array): Promise<string> {
  const res = await s3.request({
    method: "PUT",
    operation: "UploadPart",
    bucket: u.bucket,
    key: u.key,
    query: { partNumber: String(n), uploadId: u.uploadId },
    body: bytes,
    ...(u.signal ? { signal: u.signal } : {}),
  });
  await res.body?.cancel();
  const etag = res.headers.get("etag");
  if (!etag) throw new S3Error("protocol", "UploadPart", u.bucket, u.key, res.status);
  return etag;
}

/**
 * Writes the stream's parts to the store as their bytes arrive (see {@link UploadOptions.size} and ./stream_parts.ts).
 */
async function streamParts(
  s3: Required<Requester>,
  u: Upload,
  source: AsyncIterable<Uint8Array>,
  sizeOf: () => number | undefined,
) {
  const writer = new PartWriter(s3, u, sizeOf);
  try {
    for await (const chunk of source) {
      await writer.write(chunk);
      u.signal?.throwIfAborted();
    }
    return await writer.end();
  } catch (err) {
    await writer.fail();
    throw err;
  }
}

/** Completes the upload; a 200 whose body is an `<Error>` (S3 may fail after answering 200) is a failure. */
async function complete(
  s3: Requester,
  bucket: string,
  key: string,
  uploadId: string,
  etags: string[],
  signal?: AbortSignal,
) {
  const parts = etags.map((e, i) => `<Part><PartNumber>${i + 1}</PartNumber><ETag>${escapeXml(e)}</ETag></Part>`);
  const body = new TextEncoder().encode(`<CompleteMultipartUpload>${parts.join("")}</CompleteMultipartUpload>`);
  const res = await s3.request({
    method: "POST",
    operation: "CompleteMultipartUpload",
    bucket,
    key,
    query: { uploadId },
    headers: { "content-type": "application/xml" },
    body,
    ...(signal ? { signal } : {}),
  });
  const xml = await res.text();
  if (elements(xml, "Error").length > 0 || !xml.includes("CompleteMultipartUploadResult")) {
    throw new S3Error("server", "CompleteMultipartUpload", bucket, key, res.status, text(xml, "Code"));
  }
  return text(xml, "ETag") ?? "";
}
