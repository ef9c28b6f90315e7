/**
 * A snapshot of one etcd member's database, streamed over the HTTP/JSON
 * gateway (`POST /v3/maintenance/snapshot`) and checked as it streams.
 *
 * The gateway sends one JSON message per line, `{"result": {...}}` (or
 * `{"error": {...}}` when the member fails midway); each result carries a
 * base64 `blob` and `remaining_bytes`. The member first sends its whole bolt
 * database (`remaining_bytes` counting down to 0), then one last message
 * whose blob is the SHA-256 of everything it sent. The bytes yielded here
 * are the database and then those 32 bytes (what `etcdctl snapshot save`
 * writes to its file, and what `etcdutl snapshot restore` checks), and the
 * trailer is yielded only after the SHA-256 computed while streaming matched
 * it; a cut stream, an inconsistent count, a missing or wrong trailer or a
 * member that stops sending throws a {@link SnapshotError} instead, so a
 * consumer that completes only when the stream ended by itself (such as
 * ../s3/multipart.ts) never keeps a broken snapshot.
 *
 * Memory stays bounded: one gateway message (32 KiB of data, about 43 KiB of
 * JSON) at a time, whatever the database's size.
 *
 * @module
 */
import { createHash } from "node:crypto";
import type { EtcdClient, EtcdStatus } from "./client.ts";
import { errorMessage } from "../runtime/log.ts";

/** Why a snapshot failed: `broken` (cut, or not what etcd sends), `hash` (the trailer does not match), `stalled`. */
export type SnapshotFailure = "broken" | "hash" | "stalled";

/** A snapshot that must not be kept, naming the member's endpoint and why. */
export class SnapshotError extends Error {
  constructor(readonly endpoint: string, readonly failure: SnapshotFailure, message: string, options?: ErrorOptions) {
    super(`etcd snapshot from ${endpoint}: ${message}`, options);
    this.name = "SnapshotError";
  }
}

/** Who the snapshot comes from, as the member said just before it began. */
export interface SnapshotSource {
  endpoint: string;
  /** The member's id, a decimal uint64. */
  memberId: string;
  /** The member's store revision when the snapshot began (the snapshot holds at least this one). */
  revision: string;
  /** The database's size as the member reported it (the snapshot's may differ slightly). */
  dbSize: number;
  /** The member's etcd version. */
  version: string;
}

/** A snapshot being streamed: iterate it once for its bytes. */
export interface EtcdSnapshot extends AsyncIterable<Uint8Array> {
  readonly source: SnapshotSource;
  /** Bytes yielded so far (at the end: the database plus the 32-byte trailer). */
  readonly size: number;
  /** The database's SHA-256, hex, once the stream ended and the trailer matched; undefined before. */
  readonly sha256: string | undefined;
}

/** How {@link openSnapshot} streams. */
export interface SnapshotOptions {
  /** Stops the snapshot (the stream throws). */
  signal?: AbortSignal;
  /** The longest wait for more bytes (default 30 s); a member that sends nothing longer fails it as `stalled`. */
  idleMs?: number;
}

/** Longest gateway line accepted: a message carries 32 KiB of data (about 43 KiB as base64 in JSON). */
const MAX_LINE = 1024 * 1024;

/**
 * Asks the member at `endpoint` for its status (id and revision, for the record), then for its snapshot; answers
 * once the member accepted (the stream's headers arrived). Iterating the answer streams and checks the bytes.
 */
export async function openSnapshot(
  client: EtcdClient,
  endpoint: string,
  o: SnapshotOptions = {},
): Promise<EtcdSnapshot> {
  const status = await client.call(endpoint, "maintenance/status", {}, o.signal);
  const header = (status.header ?? {}) as Record<string, unknown>;
  const source: SnapshotSource = {
    endpoint,
    memberId: String(header.member_id ?? "0"),
    revision: String(header.revision ?? "0"),
    dbSize: Number(status.dbSize ?? 0),
    version: String(status.version ?? ""),
  };
  const idle = new AbortController();
  const signal = o.signal ? AbortSignal.any([o.signal, idle.signal]) : idle.signal;
  const res = await client.stream(endpoint, "maintenance/snapshot", {}, signal);
  const state = { size: 0, sha256: undefined as string | undefined, used: false };
  return {
    source,
    get size() {
      return state.size;
    },
    get sha256() {
      return state.sha256;
    },
    async *[Symbol.asyncIterator]() {
      if (state.used) throw new Error("a snapshot streams once");
      state.used = true;
      for await (const bytes of checked(endpoint, res, idle, o.idleMs ?? 30_000, state)) {
        state.size += bytes.byteLength;
        yield bytes;
      }
    },
  };
}

/** The database's bytes, then the trailer once it matched (see the module's comment). */
async function* checked(
  endpoint: string,
  res: Response,
  idle: AbortController,
  idleMs: number,
  state: { sha256: string | undefined },
): AsyncGenerator<Uint8Array> {
  const fail = (failure: SnapshotFailure, why: string, cause?: unknown) =>
    new SnapshotError(endpoint, failure, why, cause === undefined ? undefined : { cause });
  const hash = createHash("sha256");
  let total: number | undefined;
  let got = 0;
  let trailer: Uint8Array | undefined;
  for await (const line of lines(res, idle, idleMs, fail)) {
    let msg: { result?: Record<string, unknown>; error?: { message?: string } };
    try {
      msg = JSON.parse(line);
    } catch (err) {
      throw fail("broken", "a message that is not JSON", err);
    }
    if (msg.error || !msg.result) throw fail("broken", `the member failed: ${msg.error?.message ?? "no result"}`);
    const blob = Uint8Array.fromBase64(String(msg.result.blob ?? ""));
    const remaining = Number(msg.result.remaining_bytes ?? 0);
    total ??= remaining + blob.byteLength;
    if (trailer) throw fail("broken", "more messages after the SHA-256 trailer");
    if (got < total) {
      if (got + blob.byteLength + remaining !== total) throw fail("broken", "the byte counts do not add up");
      hash.update(blob);
      got += blob.byteLength;
      yield blob;
    } else if (blob.byteLength === 32) trailer = blob;
    else throw fail("broken", `a trailer of ${blob.byteLength} bytes, not a SHA-256`);
  }
  if (total === undefined || got < total) {
    throw fail("broken", `the stream ended after ${got} of ${total ?? "?"} bytes`);
  }
  if (!trailer) throw fail("hash", "the stream ended without its SHA-256 trailer");
  const ours = hash.digest("hex");
  const theirs = trailer.toHex();
  if (ours !== theirs) throw fail("hash", `the data's SHA-256 ${ours} is not the trailer's ${theirs}`);
  state.sha256 = ours;
  yield trailer;
}

/** The body's lines (without the newline), each at most {@link MAX_LINE} bytes; stalls and cuts become errors. */
async function* lines(
  res: Response,
  idle: AbortController,
  idleMs: number,
  fail: (f: SnapshotFailure, why: string, cause?: unknown) => SnapshotError,
): AsyncGenerator<string> {
  if (!res.body) throw fail("broken", "no body");
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  let pending: Uint8Array[] = [];
  let pendingBytes = 0;
  let timer = setTimeout(() => idle.abort(), idleMs);
  try {
    while (true) {
      let r: ReadableStreamReadResult<Uint8Array>;
      try {
        r = await reader.read();
      } catch (err) {
        if (idle.signal.aborted) throw fail("stalled", `no bytes for ${idleMs} ms`, err);
        throw fail("broken", `the stream broke: ${errorMessage(err)}`, err);
      }
      clearTimeout(timer);
      timer = setTimeout(() => idle.abort(), idleMs);
      if (r.done) break;
      let chunk = r.value;
      for (let nl = chunk.indexOf(10); nl >= 0; nl = chunk.indexOf(10)) {
        pending.push(chunk.subarray(0, nl));
        const line = dec.decode(join(pending, pendingBytes + nl)).trim();
        pending = [];
        pendingBytes = 0;
        chunk = chunk.subarray(nl + 1);
        if (line) yield line;
      }
      pending.push(chunk);
      pendingBytes += chunk.byteLength;
      if (pendingBytes > MAX_LINE) throw fail("broken", `a message longer than ${MAX_LINE} bytes`);
    }
    const last = dec.decode(join(pending, pendingBytes)).trim();
    if (last) yield last;
  } finally {
    clearTimeout(timer);
    reader.cancel().catch(() => {});
  }
}

function join(parts: Uint8Array[], n: number): Uint8Array {
  if (parts.length === 1) return parts[0]!;
  const out = new Uint8Array(n);
  let at = 0;
  for (const p of parts) out.set(p, at), at += p.byteLength;
  return out;
}

/** A member's client URL with its status (undefined: it did not answer). */
export interface MemberAnswer {
  endpoint: string;
  status?: EtcdStatus;
}

/**
 * The member to take a snapshot from: one that answered, reports no error, is a voting member and knows a leader;
 * a follower when there is one (it spares the leader), the most caught-up (highest applied index) first, then by
 * endpoint for a stable choice. Undefined when no member qualifies.
 */
export function snapshotMember(answers: MemberAnswer[]): MemberAnswer | undefined {
  const healthy = answers.filter((a) =>
    a.status && a.status.errors.length === 0 && !a.status.isLearner && a.status.leader !== "0"
  );
  const rank = (a: MemberAnswer) => (a.status!.memberId === a.status!.leader ? 1 : 0);
  return healthy.sort((a, b) =>
    rank(a) - rank(b) ||
    Number(BigInt(b.status!.raftAppliedIndex) - BigInt(a.status!.raftAppliedIndex) > 0n) -
      Number(BigInt(a.status!.raftAppliedIndex) - BigInt(b.status!.raftAppliedIndex) > 0n) ||
    (a.endpoint < b.endpoint ? -1 : a.endpoint > b.endpoint ? 1 : 0)
  )[0];
}
