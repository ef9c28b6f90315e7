/**
 * Properties of NICO's HTTP layer (lib/http/), on in-memory connections:
 * random segmentation, the smuggling corpus, random mutations, trickled
 * bodies and clients that never read. Each case must end in well-formed
 * answers or a close, never a hang, a held byte of budget, or a request the
 * sender did not frame. Seeded (testing/fuzz.ts): the suite runs a fixed
 * number of cases for each of its seeds; `deno task fuzz` explores fresh ones,
 * and NICO_FUZZ_SEED replays one (a failure names its seed).
 */
import assert from "node:assert/strict";
import { type Budget, type ByteConn, type ConnState, serveConnection } from "../../lib/http/conn.ts";
import { headEnd, MAX_HEAD_BYTES, parseHead } from "../../lib/http/head.ts";
import { forEachSeed } from "../../testing/fuzz.ts";
import { FOUND, SMUGGLING } from "./http_corpus.ts";

const enc = new TextEncoder();
const dec = new TextDecoder("latin1");

/** A connection in memory: reads `segments` (one per read, `gapMs` apart), collects what is written. */
class MemConn implements ByteConn {
  out: Uint8Array[] = [];
  closed = false;
  #wake: (() => void) | undefined;
  constructor(
    private segments: Uint8Array[],
    private o: { gapMs?: number; hold?: boolean; stallWrites?: boolean } = {},
  ) {}
  async read(p: Uint8Array): Promise<number | null> {
    if (this.o.gapMs) await new Promise((r) => setTimeout(r, this.o.gapMs)); // pacing: a client that trickles bytes
    while (!this.closed && this.segments.length === 0 && this.o.hold) await new Promise<void>((r) => (this.#wake = r));
    const s = this.segments[0];
    if (this.closed || !s) return null;
    const n = Math.min(p.length, s.length);
    p.set(s.subarray(0, n));
    if (n === s.length) this.segments.shift();
    else this.segments[0] = s.subarray(n);
    return n;
  }
  write(p: Uint8Array): Promise<number> {
    if (this.closed) return Promise.reject(new Error("closed"));
    if (this.o.stallWrites) return new Promise(() => {});
    this.out.push(p.slice());
    return Promise.resolve(p.length);
  }
  close(): void {
    this.closed = true;
    this.#wake?.();
  }
  text(): string {
    return this.out.map((b) => dec.decode(b)).join("");
  }
}

/** A budget that counts what is held, to check nothing stays held. */
function countingBudget(max = 1 << 20): Budget & { used: number } {
  const b = {
    used: 0,
    reserve(s: ConnState, n: number) {
      if (b.used - s.held + n > max) return false;
      b.hold(s, n);
      return true;
    },
    hold(s: ConnState, n: number) {
      if (s.closed) n = 0;
      b.used += n - s.held;
      s.held = n;
    },
  };
  return b;
}

interface Seen {
  method: string;
  path: string;
  body: string;
}

/** Serves `conn` to the end with short deadlines; answers what the handler saw, the answers, and how long it took. */
async function serve(conn: MemConn, timeouts: Partial<Record<string, number>> = {}) {
  const seen: Seen[] = [];
  const budget = countingBudget();
  const now = performance.now();
  const state: ConnState = { phase: "head", since: now, opened: now, held: 0, closed: false };
  const started = performance.now();
  await serveConnection(conn, {
    headerTimeoutMs: 300,
    idleTimeoutMs: 300,
    bodyTimeoutMs: 300,
    handlerTimeoutMs: 300,
    writeTimeoutMs: 300,
    ...timeouts,
    maxBodyBytes: 64 * 1024,
    origin: "http://127.0.0.1:1",
    budget,
    state,
    stopping: () => false,
    busyMessage: "busy",
    fetch: async (req) => {
      seen.push({ method: req.method, path: new URL(req.url).pathname, body: await req.text() });
      return new Response(`seen ${seen.length}`);
    },
  });
  assert.equal(budget.used, 0, "budget bytes still held after the connection closed");
  assert.ok(conn.closed, "the connection was not closed");
  return { seen, answers: statuses(conn.text()), ms: performance.now() - started };
}

/** Status codes of the answers in `text`, each checked to be well formed (head, then exactly its body). */
function statuses(text: string): number[] {
  const out: number[] = [];
  let rest = text;
  while (rest.length) {
    const end = rest.indexOf("\r\n\r\n");
    assert.ok(end > 0, `an answer without a complete head: ${JSON.stringify(rest.slice(0, 80))}`);
    const head = rest.slice(0, end);
    const m = /^HTTP\/1\.1 (\d{3}) [^\r\n]*\r\n/.exec(head);
    assert.ok(m, `a malformed status line: ${JSON.stringify(head.slice(0, 80))}`);
    const len = Number(/\r\ncontent-length: (\d+)/.exec(head)?.[1] ?? NaN);
    assert.ok(Number.isInteger(len), "an answer without content-length");
    out.push(Number(m[1]));
    rest = rest.slice(end + 4 + len);
  }
  return out;
}

function request(path: string, body = "", extra = ""): string {
  const length = body ? `Content-Length: ${enc.encode(body).length}\r\n` : "";
  return `POST ${path} HTTP/1.1\r\nHost: x\r\n${length}${extra}\r\n${body}`;
}

/** Deadlines no test of framing can reach: only the end of the client's bytes closes the connection. */
const PATIENT = {
  headerTimeoutMs: 30_000,
  idleTimeoutMs: 30_000,
  bodyTimeoutMs: 30_000,
  handlerTimeoutMs: 30_000,
  writeTimeoutMs: 30_000,
};

/** Cuts `bytes` into random pieces of 1 to `max` bytes. */
function cut(bytes: Uint8Array, rand: () => number, max = 64): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let at = 0; at < bytes.length;) {
    const n = 1 + Math.floor(rand() * max);
    out.push(bytes.subarray(at, at + n));
    at += n;
  }
  return out;
}

Deno.test("random segmentation: pipelined requests are seen the same however the bytes are cut", async () => {
  let round = 0;
  await forEachSeed("segmentation", 150, async (rand) => {
    round++;
    const count = 1 + Math.floor(rand() * 4);
    const sent: Seen[] = Array.from({ length: count }, (_, i) => ({
      method: "POST",
      path: `/r${round}/${i}`,
      body: "b".repeat(Math.floor(rand() * 300)),
    }));
    const wire = enc.encode(sent.map((s) => request(s.path, s.body)).join(""));
    // Whole requests, then the end of the stream: no deadline is part of this test, so none may fire on a busy
    // machine (300 ms is short when the process is starved of CPU).
    const r = await serve(new MemConn(cut(wire, rand, 1 + Math.floor(rand() * 200))), PATIENT);
    assert.deepEqual(r.seen, sent.map((s) => ({ ...s, body: s.body })));
    assert.deepEqual(r.answers, sent.map(() => 200));
  });
});

Deno.test("the smuggling corpus: refused with its status, nothing reaches the handler, then closed", async () => {
  for (const [name, raw, status] of SMUGGLING) {
    const r = await serve(new MemConn([enc.encode(raw)]));
    assert.deepEqual(r.answers, [status], name);
    assert.equal(r.seen.length, 0, `${name}: the handler saw ${JSON.stringify(r.seen)}`);
  }
});

Deno.test("identical duplicate Content-Length is one length; a HEAD answer has no body; 16 KiB of head and no more", async () => {
  const same = await serve(
    new MemConn([enc.encode(request("/a", "", "Content-Length: 3\r\nContent-Length: 3\r\n") + "abc")]),
  );
  assert.deepEqual(same.seen, [{ method: "POST", path: "/a", body: "abc" }]);
  const head = new MemConn([enc.encode("HEAD /h HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")]);
  await serve(head);
  assert.match(head.text(), /content-length: 6\r\nconnection: close\r\n\r\n$/, "HEAD answered with a body");
  const pad = (n: number) => `GET / HTTP/1.1\r\nHost: x\r\nX-Pad: ${"p".repeat(n)}\r\nConnection: close\r\n\r\n`;
  const fits = pad(MAX_HEAD_BYTES - pad(0).length);
  assert.equal(enc.encode(fits).length, MAX_HEAD_BYTES);
  assert.deepEqual((await serve(new MemConn([enc.encode(fits)]))).answers, [200]);
  assert.deepEqual((await serve(new MemConn([enc.encode(pad(MAX_HEAD_BYTES))]))).answers, [431]);
});

/**
 * What the server may do with `m`, one request's bytes with a few mutated: the handler sees at most one request
 * (the bytes hold one request line: three changed bytes cannot make a second `METHOD /target HTTP/1.1`), and only
 * one the strict parser accepts; each request it saw is answered by it, and at most one refusal follows, last
 * (then the connection closes). Two answers are right when the mutation ended the head early: a request without a
 * length has an empty body, and what follows is a next message, refused (`FOUND` in the corpus).
 */
function checkMutated(m: Uint8Array, r: Awaited<ReturnType<typeof serve>>): void {
  const what = JSON.stringify(dec.decode(m));
  assert.ok(r.seen.length <= 1, `${what} framed ${r.seen.length} requests`);
  const ours = r.answers.slice(0, r.seen.length);
  const after = r.answers.slice(r.seen.length);
  assert.ok(ours.every((s) => s === 200 || s === 503), `${what}: the handler's answers are ${ours}`);
  assert.ok(after.length <= 1 && after.every((s) => s >= 400), `${what}: answers ${r.answers} after the requests`);
  assert.ok(r.ms < 1_500, `${what} took ${r.ms} ms`);
  const parsed = parseHead(m.subarray(0, Math.max(0, headEnd(m))));
  if (r.seen.length === 1) assert.ok(!("status" in parsed), "the handler saw a request the parser refuses");
}

Deno.test("inputs the mutations once failed on: framed and answered as RFC 9112 says", async () => {
  for (const [raw, seen, answers] of FOUND) {
    const r = await serve(new MemConn([enc.encode(raw)]));
    assert.deepEqual(r.seen, seen, JSON.stringify(raw));
    assert.deepEqual(r.answers, answers, JSON.stringify(raw));
    checkMutated(enc.encode(raw), r);
  }
});

Deno.test("random mutations of a request end in answers or a close, within the deadlines, never two requests", async () => {
  const base = enc.encode(request("/m", "0123456789", "Connection: close\r\n"));
  const bytes = [0, 9, 10, 13, 32, 43, 44, 45, 48, 49, 58, 120, 127, 255];
  await forEachSeed("mutations", 2_000, async (rand) => {
    const m = base.slice();
    for (let k = 1 + Math.floor(rand() * 3); k > 0; k--) {
      m[Math.floor(rand() * m.length)] = bytes[Math.floor(rand() * bytes.length)]!;
    }
    const r = await serve(new MemConn(cut(m, rand, 32)));
    checkMutated(m, r);
  });
});

Deno.test("a body trickled one byte at a time is cut off at the body deadline, not one per byte", async () => {
  const head = enc.encode("POST /t HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n");
  const trickle = [head, ...Array.from({ length: 1000 }, () => enc.encode("x"))];
  const r = await serve(new MemConn(trickle, { gapMs: 20 }), { bodyTimeoutMs: 300 });
  assert.deepEqual(r.answers, [408]);
  assert.ok(r.ms < 1_000, `the trickle held the connection ${r.ms} ms`);
  assert.equal(r.seen.length, 0);
});

Deno.test("a client that never reads is cut off at the write deadline and its budget released", async () => {
  const wire = enc.encode(request("/w", "x".repeat(5000)));
  const conn = new MemConn([wire], { stallWrites: true, hold: true });
  const r = await serve(conn, { writeTimeoutMs: 200 });
  assert.equal(r.seen.length, 1);
  assert.ok(r.ms < 1_000, `a stalled write held the connection ${r.ms} ms`);
});
