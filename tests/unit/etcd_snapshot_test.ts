/**
 * lib/etcd/snapshot.ts's reader on answers framed as etcd 3.7.0's gateway frames them (one JSON message a line:
 * base64 blobs, `remaining_bytes` omitted at 0, then the SHA-256 trailer), cut anywhere into chunks: the bytes
 * come out whole with the trailer last, and a wrong trailer, a missing one, a short stream, an error message, an
 * inconsistent count or a stall throw a SnapshotError before the trailer is yielded. Which member is chosen, and
 * how a backup's record is read back from an object. The real members are in tests/integration/backup_io_test.ts.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { checked, SnapshotError } from "../../lib/etcd/snapshot.ts";
import { bodyChunks, gatewayMessages, grpcMessages } from "../../lib/etcd/snapshot_wire.ts";
import { FORMAT, recordOf } from "../../lib/backup.ts";

const EP = "https://127.0.0.1:2379";

/** A database of `n` bytes and the gateway's lines for it (blobs of `blob` bytes), the trailer `sha` or the right one. */
function framed(n: number, blob = 1000, sha?: Uint8Array): { db: Uint8Array; lines: string[] } {
  const db = new Uint8Array(n).map((_, i) => (i * 7) % 251);
  const lines: string[] = [];
  for (let at = 0; at < n; at += blob) {
    const part = db.subarray(at, Math.min(n, at + blob));
    const remaining = n - at - part.byteLength;
    const r = { blob: part.toBase64(), ...(remaining ? { remaining_bytes: String(remaining) } : {}), version: "3.7.0" };
    lines.push(JSON.stringify({ result: r }));
  }
  const digest = sha ?? new Uint8Array(createHash("sha256").update(db).digest());
  lines.push(JSON.stringify({ result: { blob: digest.toBase64(), version: "3.7.0" } }));
  return { db, lines };
}

/** The protobuf varint of `n`. */
function varint(n: number): number[] {
  const out: number[] = [];
  for (; n >= 128; n = Math.floor(n / 128)) out.push((n % 128) | 128);
  return [...out, n];
}

/** The same snapshot as gRPC frames (a header and a version field too, which the reader skips), concatenated. */
function grpcFramed(lines: string[]): Uint8Array {
  const frames: number[] = [];
  for (const line of lines) {
    const r = JSON.parse(line).result;
    const blob = Uint8Array.fromBase64(r.blob);
    const version = new TextEncoder().encode("3.7.0");
    const header = [0x08, ...varint(12345), 0x20, ...varint(7)]; // cluster_id, raft_term
    const msg = [
      0x0a,
      ...varint(header.length),
      ...header,
      ...(r.remaining_bytes ? [0x10, ...varint(Number(r.remaining_bytes))] : []),
      0x1a,
      ...varint(blob.byteLength),
      ...blob,
      0x22,
      ...varint(version.byteLength),
      ...version,
    ];
    frames.push(
      0,
      (msg.length >>> 24) & 255,
      (msg.length >>> 16) & 255,
      (msg.length >>> 8) & 255,
      msg.length & 255,
      ...msg,
    );
  }
  return new Uint8Array(frames);
}

/** A response whose body is `text` cut into chunks of `cut` bytes (then ends, or stays open with `hang`). */
function answer(text: string | Uint8Array, cut: number, hang = false): Response {
  const bytes = typeof text === "string" ? new TextEncoder().encode(text) : text;
  let at = 0;
  return new Response(
    new ReadableStream({
      type: "bytes", // as fetch's bodies are: the reader reads into a buffer of its own
      pull(c) {
        if (at >= bytes.byteLength && hang) return new Promise(() => {});
        if (at >= bytes.byteLength) return c.close(), c.byobRequest?.respond(0); // ends a read that waits
        c.enqueue(bytes.slice(at, at + cut));
        at += cut;
      },
    }),
  );
}

async function read(res: Response, idleMs = 5_000, wire: "gateway" | "grpc" = "gateway") {
  const state = { sha256: undefined as string | undefined };
  const chunks: Uint8Array[] = [];
  const body = bodyChunks(EP, res, new AbortController(), idleMs);
  const messages = wire === "grpc" ? grpcMessages(EP, body) : gatewayMessages(EP, body);
  try {
    for await (const c of checked(EP, messages, state)) chunks.push(c.slice());
    return { chunks, state, error: undefined };
  } catch (error) {
    return { chunks, state, error: error as SnapshotError };
  }
}

const total = (cs: Uint8Array[]) => cs.reduce((n, c) => n + c.byteLength, 0);

Deno.test("a whole snapshot, cut anywhere: the database then its trailer, and its SHA-256", async () => {
  for (const cut of [1, 7, 4096, 1 << 20]) {
    const { db, lines } = framed(10_000);
    const { chunks, state, error } = await read(answer(lines.join("\n") + "\n", cut));
    assert.equal(error, undefined);
    assert.equal(total(chunks), 10_032);
    const sha = createHash("sha256").update(db).digest("hex");
    assert.equal(state.sha256, sha);
    assert.equal(chunks.at(-1)!.toHex(), sha, "the trailer comes last");
  }
});

Deno.test("the same snapshot over gRPC, frames cut anywhere: the same bytes; a frame cut short is broken", async () => {
  const { db, lines } = framed(70_000, 32_768);
  const sha = createHash("sha256").update(db).digest("hex");
  const bytes = grpcFramed(lines);
  for (const cut of [1, 3, 5, 6, 4096, 40_000, 1 << 20]) {
    const { chunks, state, error } = await read(answer(bytes, cut), 5_000, "grpc");
    assert.equal(error, undefined, `cut ${cut}: ${error}`);
    assert.equal(total(chunks), 70_032);
    assert.equal(state.sha256, sha);
    assert.deepEqual(
      new Uint8Array(await new Blob(chunks as Uint8Array<ArrayBuffer>[]).arrayBuffer()).subarray(0, 70_000),
      db,
    );
  }
  const { error } = await read(answer(bytes.subarray(0, bytes.byteLength - 10), 999), 5_000, "grpc");
  assert.ok(error instanceof SnapshotError);
  assert.match(error.message, /inside a message/);
});

Deno.test("a wrong, missing or misplaced trailer, a cut or failed stream: nothing after the data, a SnapshotError", async () => {
  const cases: [string, string, SnapshotError["failure"], RegExp][] = [];
  const { lines } = framed(5_000, 1000, new Uint8Array(32).fill(9));
  cases.push(["wrong trailer", lines.join("\n"), "hash", /is not the trailer's/]);
  const good = framed(5_000).lines;
  cases.push(["no trailer", good.slice(0, -1).join("\n"), "hash", /without its SHA-256 trailer/]);
  cases.push(["cut midway", good.slice(0, 3).join("\n"), "broken", /ended after 3000 of 5000 bytes/]);
  cases.push(["cut inside a line", good.join("\n").slice(0, 2500), "broken", /not JSON/]);
  cases.push([
    "an error",
    [...good.slice(0, 2), '{"error":{"code":14,"message":"closing"}}'].join("\n"),
    "broken",
    /closing/,
  ]);
  cases.push(["an extra message", [...good, good[0]].join("\n"), "broken", /after the SHA-256 trailer/]);
  const skewed = [good[0], good[2], good[1], ...good.slice(3)];
  cases.push(["counts that do not add up", skewed.join("\n"), "broken", /do not add up/]);
  for (const [what, text, failure, message] of cases) {
    const { chunks, state, error } = await read(answer(text, 333));
    assert.ok(error instanceof SnapshotError, `${what}: ${error}`);
    assert.equal(error.failure, failure, what);
    assert.match(error.message, message, what);
    assert.ok(total(chunks) <= 5_000, `${what}: no trailer yielded`);
    assert.equal(state.sha256, undefined, what);
  }
});

Deno.test("a member that stops sending is stalled, not waited on", async () => {
  const { lines } = framed(5_000);
  const { error } = await read(answer(lines.slice(0, 2).join("\n") + "\n", 100, true), 200);
  assert.ok(error instanceof SnapshotError);
  assert.equal(error.failure, "stalled");
});

Deno.test("a backup's record comes back from its object's metadata and last 32 bytes; other objects are none", () => {
  const metadata = {
    format: FORMAT,
    revision: "42",
    member: "7",
    endpoint: EP,
    time: "2026-01-01T00:00:00.000Z",
    reason: "manual",
  };
  const tail = new Uint8Array(32).fill(171);
  assert.deepEqual(recordOf({ key: "p/x.db", size: 1000, metadata, tail }), {
    key: "p/x.db",
    size: 1000,
    revision: "42",
    member: "7",
    endpoint: EP,
    time: metadata.time,
    reason: "manual",
    sha256: "ab".repeat(32),
  });
  assert.equal(recordOf({ key: "k", size: 1000, metadata: { ...metadata, format: "other" }, tail }), undefined);
  assert.equal(recordOf({ key: "k", size: 1000, metadata: { format: FORMAT }, tail }), undefined);
  assert.equal(recordOf({ key: "k", size: 32, metadata, tail }), undefined);
});
