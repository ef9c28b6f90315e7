/**
 * lib/s3/multipart.ts's rules, on a recording requester (the store's side of it is tests/integration/backup_io_test.ts
 * on a real store): parts of the set size, the last one shorter, each part's bytes intact although the two buffers
 * are reused while a part is in flight; completion only after the stream ended and the caller's check passed; an
 * abort, and no completion, when the stream throws, a part is refused or the check fails.
 */
import assert from "node:assert/strict";
import { uploadStream } from "../../lib/s3/multipart.ts";
import type { Requester, S3Request } from "../../lib/s3/request.ts";
import { S3Error } from "../../lib/s3/errors.ts";
import { createHash } from "node:crypto";

const MiB = 1024 * 1024;
const PART = 5 * MiB;

/**
 * Records every request; a part's bytes are read a turn after it was sent (as a slow store would), then kept. The
 * upload is listed until aborted; the first `revivals` aborts do not stick (a cut part the store wrote after them).
 */
function recorder(
  failPart?: number,
  revivals = 0,
): Requester & { calls: string[]; parts: Uint8Array[]; open: () => boolean } {
  const calls: string[] = [];
  const parts: Uint8Array[] = [];
  let open = false;
  return {
    calls,
    parts,
    open: () => open,
    async request(r: S3Request): Promise<Response> {
      const q = r.query ?? {};
      const op = r.operation;
      calls.push(op);
      if (op === "CreateMultipartUpload") {
        open = true;
        return new Response("<InitiateMultipartUploadResult><UploadId>u1</UploadId></InitiateMultipartUploadResult>");
      }
      if (op === "AbortMultipartUpload") {
        if (revivals-- <= 0) open = false;
        return new Response(null, { status: 204 });
      }
      if (op === "ListMultipartUploads") {
        const listed = open ? "<Upload><Key>k</Key><UploadId>u1</UploadId></Upload>" : "";
        return new Response(`<ListMultipartUploadsResult>${listed}</ListMultipartUploadsResult>`);
      }
      if (op === "UploadPart") {
        await new Promise((resolve) => setTimeout(resolve, 0));
        const n = Number(q.partNumber);
        if (n === failPart) throw new S3Error("server", op, r.bucket, r.key, 500, "InternalError");
        parts[n - 1] = r.body!.slice();
        return new Response(null, { headers: { etag: `"e${n}"` } });
      }
      if (op === "CompleteMultipartUpload") {
        return new Response('<CompleteMultipartUploadResult><ETag>"x-2"</ETag></CompleteMultipartUploadResult>');
      }
      return new Response(null, { status: 204 });
    },
  };
}

/** `n` bytes in chunks of `chunk`, byte i being i mod 251, yielded from one reused buffer (as the snapshot does). */
async function* bytes(n: number, chunk = 40_000, failAt?: number): AsyncGenerator<Uint8Array> {
  const buf = new Uint8Array(chunk);
  for (let at = 0; at < n; at += chunk) {
    if (failAt !== undefined && at >= failAt) throw new Error("cut");
    const len = Math.min(chunk, n - at);
    for (let i = 0; i < len; i++) buf[i] = (at + i) % 251;
    yield buf.subarray(0, len);
  }
}

Deno.test("parts of the set size, the last shorter, every byte where it belongs; complete after the check", async () => {
  const s3 = recorder();
  const size = 2 * PART + 123_456;
  let checked = 0;
  const r = await uploadStream(s3, "bk", "k", bytes(size), {
    partSize: PART,
    beforeComplete: (x) => void (checked = x.size),
  });
  assert.deepEqual(r, { key: "k", size, parts: 3, etag: '"x-2"' });
  assert.equal(checked, size);
  assert.deepEqual(s3.calls, [
    "CreateMultipartUpload",
    "UploadPart",
    "UploadPart",
    "UploadPart",
    "CompleteMultipartUpload",
  ]);
  assert.deepEqual(s3.parts.map((p) => p.byteLength), [PART, PART, 123_456]);
  const all = new Uint8Array(size);
  s3.parts.reduce((at, p) => (all.set(p, at), at + p.byteLength), 0);
  assert.ok(all.every((b, i) => b === i % 251), "no part was overwritten while in flight");
});

Deno.test("a stream that throws, a refused part, a failed check: aborted, never completed", async () => {
  const cases: [string, ReturnType<typeof recorder>, AsyncGenerator<Uint8Array>, (() => void) | undefined, RegExp][] = [
    ["the stream breaks", recorder(), bytes(3 * PART, 40_000, PART + 10), undefined, /cut/],
    [
      "the stream breaks, the first abort does not stick",
      recorder(undefined, 1),
      bytes(2 * PART, 40_000, 10),
      undefined,
      /cut/,
    ],
    ["a part is refused", recorder(2), bytes(3 * PART), undefined, /HTTP 500 InternalError/],
    ["the check fails", recorder(), bytes(PART), () => {
      throw new Error("hash mismatch");
    }, /hash mismatch/],
  ];
  for (const [what, s3, source, check, message] of cases) {
    await assert.rejects(
      () => uploadStream(s3, "bk", "k", source, { partSize: PART, ...(check ? { beforeComplete: check } : {}) }),
      message,
      what,
    );
    assertAbandoned(s3, what);
  }
});

/** The upload was aborted until no longer listed, and never completed. */
function assertAbandoned(s3: ReturnType<typeof recorder>, what: string) {
  assert.equal(s3.open(), false, `${what}: still listed after ${s3.calls.join(", ")}`);
  const after = s3.calls.slice(s3.calls.indexOf("AbortMultipartUpload"));
  assert.ok(after.length >= 3 && after.every((c) => /^(Abort|List)MultipartUploads?$/.test(c)), after.join(", "));
  assert.ok(!s3.calls.includes("CompleteMultipartUpload"), what);
}

Deno.test("an empty stream is one empty part; parts under 5 MiB are refused", async () => {
  const s3 = recorder();
  const r = await uploadStream(s3, "bk", "k", bytes(0), { partSize: PART });
  assert.equal(r.parts, 1);
  assert.equal(s3.parts[0]!.byteLength, 0);
  await assert.rejects(() => uploadStream(recorder(), "bk", "k", bytes(1), { partSize: MiB }), RangeError);
});

/** A recorder that also takes parts written piece by piece; `etagOf` makes the ETag the store answers. */
function streamingRecorder(etagOf = (md5: string) => `"${md5}"`, failPart?: number) {
  const base = recorder(failPart);
  const landed: number[] = [];
  return Object.assign(base, {
    landed,
    openPut(r: S3Request & { length: number }) {
      const n = Number(r.query!.partNumber);
      const bytes = new Uint8Array(r.length);
      let at = 0;
      return Promise.resolve({
        write(b: Uint8Array) {
          bytes.set(b, at);
          at += b.byteLength;
          return Promise.resolve();
        },
        async finish() {
          await new Promise((resolve) => setTimeout(resolve, 0));
          base.calls.push("UploadPart");
          if (n === failPart) throw new S3Error("server", "UploadPart", r.bucket, r.key, 500, "InternalError");
          base.parts[n - 1] = bytes;
          landed.push(n);
          return new Response(null, { headers: { etag: etagOf(createHash("md5").update(bytes).digest("hex")) } });
        },
        close() {},
      });
    },
  });
}

Deno.test("streamed parts (a known length): written as they arrive, every byte in place, ETags checked", async () => {
  const size = 2 * PART + 777;
  const s3 = streamingRecorder();
  const r = await uploadStream(s3, "bk", "k", bytes(size), { partSize: PART, size: () => size });
  assert.equal(r.parts, 3);
  assert.deepEqual(s3.parts.map((p) => p.byteLength), [PART, PART, 777]);
  assert.ok(s3.parts.every((p, n) => p.every((b, i) => b === (n * PART + i) % 251)));
  assert.equal(s3.calls.at(-1), "CompleteMultipartUpload");
});

Deno.test("streamed parts: a wrong ETag, a stream longer or shorter than said, a refused part: aborted", async () => {
  const cases: [string, ReturnType<typeof streamingRecorder>, number, number, RegExp][] = [
    ["an ETag that is not the MD5 sent", streamingRecorder(() => `"${"0".repeat(32)}"`), PART, PART, /BadDigest/],
    ["longer than said", streamingRecorder(), PART + 10, PART, /longer than its/],
    ["shorter than said", streamingRecorder(), PART - 10, PART, /bytes short of its length/],
    ["a refused part", streamingRecorder(undefined, 1), 3 * PART, 3 * PART, /InternalError/],
  ];
  for (const [what, s3, actual, said, message] of cases) {
    await assert.rejects(
      () => uploadStream(s3, "bk", "k", bytes(actual), { partSize: PART, size: () => said }),
      message,
    );
    assertAbandoned(s3, what);
  }
});
