/**
 * The two ways an etcd member streams its snapshot, read into the same
 * messages (`blob`, `remaining_bytes`) with bounded memory:
 * - gRPC (`etcdserverpb.Maintenance/Snapshot` over HTTP/2): each message a
 *   flag byte, a 4-byte big-endian length and a protobuf `SnapshotResponse`
 *   (field 2 `remaining_bytes`, field 3 `blob`);
 * - the HTTP/JSON gateway (`POST /v3/maintenance/snapshot`): one JSON
 *   message a line, `{"result": {...}}` with a base64 `blob` (or
 *   `{"error": {...}}` when the member fails midway), `remaining_bytes`
 *   left out when it is 0.
 *
 * A message's blob is a view that stays valid only until the next message is
 * asked for (buffers are reused): copy what must be kept.
 *
 * @module
 */
import { errorMessage } from "../runtime/log.ts";
import { concatBytes } from "../encoding.ts";

/** Why a snapshot failed: `broken` (cut, or not what etcd sends), `hash` (the trailer does not match), `stalled`. */
export type SnapshotFailure = "broken" | "hash" | "stalled";

/** A snapshot that must not be kept, naming the member's endpoint and why. */
export class SnapshotError extends Error {
  constructor(readonly endpoint: string, readonly failure: SnapshotFailure, message: string, options?: ErrorOptions) {
    super(`etcd snapshot from ${endpoint}: ${message}`, options);
    this.name = "SnapshotError";
  }
}

/** One message of the stream. */
export interface SnapshotMessage {
  blob: Uint8Array;
  remaining: number;
}

/** The longest message accepted: etcd sends 32 KiB of data a message (about 43 KiB as JSON). */
const MAX_MESSAGE = 4 * 1024 * 1024;

/**
 * The chunks of `res`'s body; a body that sends nothing for `idleMs` fails as `stalled` (and `idle` is aborted, which
 * should stop the request), one that breaks fails as `broken`. Read into one 64 KiB buffer, used again for every
 * chunk (a reader that allocates a buffer per chunk leaves garbage outside V8's heap that V8 is slow to collect: the
 * process grew by 42 to 85 MiB reading a 123 MiB snapshot, against a few MiB this way).
 */
export async function* bodyChunks(
  endpoint: string,
  res: Response,
  idle: AbortController,
  idleMs: number,
): AsyncGenerator<Uint8Array> {
  if (!res.body) throw new SnapshotError(endpoint, "broken", "no body");
  const body = res.body;
  const reader = byob(body);
  let buffer = new ArrayBuffer(64 * 1024);
  let stalled = false;
  const onIdle = () => {
    stalled = true;
    idle.abort(); // stops the request
    reader.cancel().catch(() => {}); // and ends a read that waits
  };
  const stall = (cause?: unknown) =>
    new SnapshotError(endpoint, "stalled", `no bytes for ${idleMs} ms`, cause === undefined ? undefined : { cause });
  let timer = setTimeout(onIdle, idleMs);
  try {
    while (true) {
      let r: ReadableStreamReadResult<Uint8Array>;
      try {
        r = await reader.read(new Uint8Array(buffer));
      } catch (err) {
        if (stalled) throw stall(err);
        throw new SnapshotError(endpoint, "broken", `the stream broke: ${errorMessage(err)}`, { cause: err });
      }
      if (stalled) throw stall();
      clearTimeout(timer);
      timer = setTimeout(onIdle, idleMs);
      if (r.done || !r.value) return;
      yield r.value;
      buffer = r.value.buffer as ArrayBuffer; // the same memory, handed back by the read
    }
  } finally {
    clearTimeout(timer);
    reader.cancel().catch(() => {});
  }
}

/** A reader into buffers of ours where the stream allows it (fetch's bodies do), else one that allocates them. */
function byob(body: ReadableStream<Uint8Array>) {
  try {
    return body.getReader({ mode: "byob" });
  } catch {
    const r = body.getReader();
    return { read: (_: Uint8Array<ArrayBuffer>) => r.read(), cancel: () => r.cancel() };
  }
}

/** The gRPC stream's messages (see the module's comment). */
export async function* grpcMessages(
  endpoint: string,
  chunks: AsyncIterable<Uint8Array>,
): AsyncGenerator<SnapshotMessage> {
  let pending = new Uint8Array(64 * 1024); // a message that spans chunks, gathered
  let have = 0;
  const lengthOf = (b: Uint8Array) => {
    const n = new DataView(b.buffer, b.byteOffset, 5).getUint32(1);
    if (n > MAX_MESSAGE) throw new SnapshotError(endpoint, "broken", `a message of ${n} bytes`);
    return n;
  };
  for await (let chunk of chunks) {
    while (chunk.byteLength > 0) {
      if (have === 0 && chunk.byteLength >= 5 && chunk.byteLength >= 5 + lengthOf(chunk)) {
        const n = lengthOf(chunk); // a whole message in the chunk: read in place
        yield decode(endpoint, chunk[0]!, chunk.subarray(5, 5 + n));
        chunk = chunk.subarray(5 + n);
        continue;
      }
      const want = have < 5 ? 5 : 5 + lengthOf(pending);
      if (pending.byteLength < want) {
        const bigger = new Uint8Array(want);
        bigger.set(pending.subarray(0, have));
        pending = bigger;
      }
      const take = Math.min(want - have, chunk.byteLength);
      pending.set(chunk.subarray(0, take), have);
      have += take;
      chunk = chunk.subarray(take);
      if (have >= 5 && have === 5 + lengthOf(pending)) {
        have = 0;
        yield decode(endpoint, pending[0]!, pending.subarray(5, 5 + lengthOf(pending)));
      }
    }
  }
  if (have > 0) throw new SnapshotError(endpoint, "broken", "the stream ended inside a message");
}

/** A `SnapshotResponse` from its protobuf bytes: field 2 (varint) and field 3 (bytes); others skipped. */
function decode(endpoint: string, flag: number, msg: Uint8Array): SnapshotMessage {
  const bad = (why: string) => new SnapshotError(endpoint, "broken", why);
  if (flag !== 0) throw bad("a compressed message (none was asked for)");
  let at = 0;
  const varint = () => {
    let v = 0;
    for (let scale = 1; at < msg.byteLength; scale *= 128) {
      const b = msg[at++]!;
      v += (b & 0x7f) * scale;
      if (b < 0x80) return v;
    }
    throw bad("a message cut inside a number");
  };
  let blob: Uint8Array = new Uint8Array(0);
  let remaining = 0;
  while (at < msg.byteLength) {
    const tag = varint();
    const field = Math.floor(tag / 8), wire = tag % 8;
    if (wire === 0) {
      const v = varint();
      if (field === 2) remaining = v;
    } else if (wire === 2) {
      const n = varint();
      if (at + n > msg.byteLength) throw bad("a message cut inside a field");
      if (field === 3) blob = msg.subarray(at, at + n);
      at += n;
    } else if (wire === 1 || wire === 5) at += wire === 1 ? 8 : 4;
    else throw bad(`a protobuf wire type ${wire}`);
  }
  return { blob, remaining };
}

/** The gateway's messages (see the module's comment). */
export async function* gatewayMessages(
  endpoint: string,
  chunks: AsyncIterable<Uint8Array>,
): AsyncGenerator<SnapshotMessage> {
  for await (const line of lines(endpoint, chunks)) {
    let msg: { result?: Record<string, unknown>; error?: { message?: string } };
    try {
      msg = JSON.parse(line);
    } catch (err) {
      throw new SnapshotError(endpoint, "broken", "a message that is not JSON", { cause: err });
    }
    if (msg.error || !msg.result) {
      throw new SnapshotError(endpoint, "broken", `the member failed: ${msg.error?.message ?? "no result"}`);
    }
    const blob = Uint8Array.fromBase64(String(msg.result.blob ?? ""));
    yield { blob, remaining: Number(msg.result.remaining_bytes ?? 0) };
  }
}

/** The lines of a stream of bytes (without the newline), each at most {@link MAX_MESSAGE} bytes. */
async function* lines(endpoint: string, chunks: AsyncIterable<Uint8Array>): AsyncGenerator<string> {
  const dec = new TextDecoder();
  let pending: Uint8Array[] = [];
  let pendingBytes = 0;
  for await (let chunk of chunks) {
    for (let nl = chunk.indexOf(10); nl >= 0; nl = chunk.indexOf(10)) {
      pending.push(chunk.subarray(0, nl));
      const line = dec.decode(join(pending)).trim();
      pending = [];
      pendingBytes = 0;
      chunk = chunk.subarray(nl + 1);
      if (line) yield line;
    }
    pending.push(chunk.slice()); // the chunk's buffer is used again for the next one
    pendingBytes += chunk.byteLength;
    if (pendingBytes > MAX_MESSAGE) throw new SnapshotError(endpoint, "broken", `a line over ${MAX_MESSAGE} bytes`);
  }
  const last = dec.decode(join(pending)).trim();
  if (last) yield last;
}

/** The parts as one array: the one part itself, without a copy, where there is one. */
function join(parts: Uint8Array[]): Uint8Array {
  return parts.length === 1 ? parts[0]! : concatBytes(parts);
}
