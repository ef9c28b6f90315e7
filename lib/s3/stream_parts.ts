/**
 * An upload's parts written to the store as their bytes arrive, with no
 * part buffer: the stream's length is known once it starts, so each part's
 * length is known when it opens, and its body is written piece by piece
 * (small chunks gathered into 256 KiB writes). One part's body is written
 * while the one before waits for its answer; each answer's ETag is checked
 * against the MD5 of what was sent. A part whose body went whole is always
 * answered before the caller may abort the upload (a part landing after the
 * abort would leave the upload behind); one cut short is dropped, and the
 * store keeps nothing of it. Used by ./multipart.ts.
 *
 * @module
 */
import { createHash, type Hash } from "node:crypto";
import { S3Error } from "./errors.ts";
import type { OpenPut, Requester } from "./request.ts";

/** S3's most parts in one upload. */
export const MAX_PARTS = 10_000;

/** The upload the parts belong to. */
export interface PartTarget {
  bucket: string;
  key: string;
  uploadId: string;
  partSize: number;
  signal?: AbortSignal;
}

/** A part being written: its number, its length, what was written and its MD5 so far. */
interface Part {
  n: number;
  length: number;
  written: number;
  md5: Hash;
  put: OpenPut;
}

/** Writes a stream's bytes as parts: {@link write} each chunk, then {@link end}; {@link fail} on any failure. */
export class PartWriter {
  readonly #etags: string[] = [];
  #size = 0;
  #part: Part | undefined;
  /** Parts whose body is whole, waiting for the store's answer. */
  readonly #answering: Promise<void>[] = [];
  readonly #staging = new Uint8Array(256 * 1024);
  #staged = 0;

  constructor(
    private readonly s3: Required<Requester>,
    private readonly u: PartTarget,
    private readonly sizeOf: () => number | undefined,
  ) {}

  /** Writes the chunk's bytes (it may be reused once this resolves). */
  async write(chunk: Uint8Array): Promise<void> {
    for (let at = 0; at < chunk.byteLength;) {
      const part = this.#part ??= await this.#open();
      const room = Math.min(this.#staging.byteLength - this.#staged, part.length - part.written - this.#staged);
      const n = Math.min(chunk.byteLength - at, room);
      this.#staging.set(chunk.subarray(at, at + n), this.#staged);
      this.#staged += n;
      at += n;
      this.#size += n;
      if (this.#staged === this.#staging.byteLength || part.written + this.#staged === part.length) {
        await this.#flush(part);
      }
      if (part.written === part.length) {
        this.#part = undefined; // no longer to be cut short: its answer is awaited, even on a failure
        await this.#done(part);
      }
    }
  }

  /** After the stream's last chunk: the size and the parts' ETags, once every answer came. */
  async end(): Promise<{ size: number; etags: string[] }> {
    const part = this.#part;
    if (part) {
      throw new Error(`the stream ended ${part.length - part.written - this.#staged} bytes short of its length`);
    }
    if (this.#etags.length === 0) await this.#done(await this.#open()); // an empty stream: one empty part
    if (this.#size !== this.sizeOf()) throw new Error(`the stream ended after ${this.#size} of ${this.sizeOf()} bytes`);
    for (const answer of this.#answering) await answer;
    return { size: this.#size, etags: this.#etags };
  }

  /** Drops the part being written and waits for the answers of the whole ones (they may land). */
  async fail(): Promise<void> {
    this.#part?.put.close();
    this.#part = undefined;
    await Promise.allSettled(this.#answering);
  }

  async #open(): Promise<Part> {
    const total = this.sizeOf();
    if (total === undefined) throw new Error("the stream's length is not known");
    const length = Math.min(this.u.partSize, total - this.#size);
    if (length < 0 || (length === 0 && this.#etags.length > 0)) {
      throw new Error(`the stream is longer than its ${total} bytes`);
    }
    if (this.#etags.length === MAX_PARTS) {
      throw new RangeError(`more than ${MAX_PARTS} parts: upload with larger parts`);
    }
    const n = this.#etags.push("");
    const { bucket, key, uploadId, signal } = this.u;
    const put = await this.s3.openPut({
      method: "PUT",
      operation: "UploadPart",
      bucket,
      key,
      query: { partNumber: String(n), uploadId },
      length,
      ...(signal ? { signal } : {}),
    });
    return { n, length, written: 0, md5: createHash("md5"), put };
  }

  async #flush(part: Part): Promise<void> {
    const bytes = this.#staging.subarray(0, this.#staged);
    await part.put.write(bytes);
    part.md5.update(bytes);
    part.written += this.#staged;
    this.#staged = 0;
  }

  /** Its body is whole: its answer is read now, whatever happens next; at most one more is outstanding. */
  async #done(part: Part): Promise<void> {
    const answer = this.#answer(part);
    answer.catch(() => {}); // awaited later; never an unhandled rejection meanwhile
    this.#answering.push(answer);
    if (this.#answering.length > 1) await this.#answering.shift();
  }

  async #answer(part: Part): Promise<void> {
    const res = await part.put.finish();
    await res.body?.cancel();
    const etag = res.headers.get("etag") ?? "";
    const md5 = /^"?([0-9a-f]{32})"?$/i.exec(etag)?.[1];
    if (!etag || (md5 && md5.toLowerCase() !== part.md5.digest("hex"))) {
      const { bucket, key } = this.u;
      throw new S3Error("protocol", "UploadPart", bucket, key, res.status, md5 ? "BadDigest" : undefined);
    }
    this.#etags[part.n - 1] = etag;
  }
}
