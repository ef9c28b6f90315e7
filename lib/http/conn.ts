/**
 * HTTP/1.1 on one connection, every phase under a deadline: the head (within
 * `headerTimeoutMs` of connecting, `idleTimeoutMs` of the last answer), the
 * body (`bodyTimeoutMs` from the end of the head, for the whole body, however
 * it is cut), the handler (`handlerTimeoutMs`) and writing the answer
 * (`writeTimeoutMs` for the whole answer: a client that does not read is cut
 * off). A body is read only once the server's {@link Budget} holds its bytes;
 * the answer's bytes are held until written, and everything is released when
 * the connection closes, however it closes.
 *
 * @module
 */
import { errorMessage } from "../runtime/log.ts";
import { headEnd, MAX_HEAD_BYTES, parseHead, type RequestHead } from "./head.ts";

/** A byte stream to serve HTTP on: a Deno TCP or TLS connection, or an adapted Node socket. */
export interface ByteConn {
  read(p: Uint8Array): Promise<number | null>;
  write(p: Uint8Array): Promise<number>;
  close(): void;
}

/** Where a connection is: waiting for its first head or a next one, reading a body, in the handler, writing. */
export type Phase = "head" | "idle" | "body" | "handler" | "write";

/** What the server sees of a connection: its phase since when, and the budget bytes it holds. */
export interface ConnState {
  phase: Phase;
  /** performance.now() when the phase began. */
  since: number;
  /** performance.now() when the connection was accepted. */
  opened: number;
  held: number;
  closed: boolean;
}

/** The server's memory budget for bodies and answers. */
export interface Budget {
  /** Holds `bytes` for `state` if they fit (making room when it can); false when they do not. */
  reserve(state: ConnState, bytes: number): boolean;
  /** Holds exactly `bytes` for `state`, fitting or not (an answer already in memory). */
  hold(state: ConnState, bytes: number): void;
}

/** Deadlines of each phase, in ms. */
export interface Timeouts {
  headerTimeoutMs: number;
  idleTimeoutMs: number;
  bodyTimeoutMs: number;
  handlerTimeoutMs: number;
  writeTimeoutMs: number;
}

/** What {@link serveConnection} needs from its server. */
export interface ConnectionContext extends Timeouts {
  maxBodyBytes: number;
  /** Base of request URLs, such as `https://[::1]:9443`. */
  origin: string;
  fetch: (request: Request) => Response | Promise<Response>;
  budget: Budget;
  state: ConnState;
  /** True once the server stops: no new request on this connection. */
  stopping(): boolean;
  /** Text of the 503 answered when the budget is full. */
  busyMessage: string;
}

const enc = new TextEncoder();
const REASONS: Record<number, string> = {
  200: "OK",
  204: "No Content",
  400: "Bad Request",
  404: "Not Found",
  405: "Method Not Allowed",
  408: "Request Timeout",
  411: "Length Required",
  413: "Content Too Large",
  431: "Request Header Fields Too Large",
  500: "Internal Server Error",
  503: "Service Unavailable",
  505: "HTTP Version Not Supported",
};

/** `p`, or "timeout" once `deadline` (performance.now()) passes; a late rejection of `p` is ignored. */
async function before<T>(p: Promise<T>, deadline: number): Promise<T | "timeout"> {
  const ms = deadline - performance.now();
  if (ms <= 0) {
    p.catch(() => {});
    return "timeout";
  }
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<"timeout">((resolve) => (timer = setTimeout(() => resolve("timeout"), ms)));
  p.catch(() => {});
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

class WriteTimeout extends Error {}

async function writeAll(conn: ByteConn, data: Uint8Array, deadline: number): Promise<void> {
  for (let at = 0; at < data.length;) {
    const n = await before(conn.write(data.subarray(at)), deadline);
    if (n === "timeout") throw new WriteTimeout();
    at += n;
  }
}

/** Status line and headers, then the body unless `head` (HEAD requests, 204, 304). */
function encode(status: number, headers: [string, string][], body: Uint8Array, close: boolean, head: boolean) {
  const lines = [`HTTP/1.1 ${status} ${REASONS[status] ?? "Status"}`];
  for (const [k, v] of headers) {
    if (k !== "content-length" && k !== "connection" && k !== "transfer-encoding") lines.push(`${k}: ${v}`);
  }
  lines.push(`content-length: ${body.length}`, `connection: ${close ? "close" : "keep-alive"}`, "", "");
  const top = enc.encode(lines.join("\r\n"));
  if (head) return top;
  const out = new Uint8Array(top.length + body.length);
  out.set(top);
  out.set(body, top.length);
  return out;
}

function enter(state: ConnState, phase: Phase): void {
  state.phase = phase;
  state.since = performance.now();
}

/** A short text answer, then the connection closes. */
async function refuse(conn: ByteConn, ctx: ConnectionContext, status: number, message: string): Promise<void> {
  enter(ctx.state, "write");
  const body = enc.encode(`${message}\n`);
  const bytes = encode(status, [["content-type", "text/plain; charset=utf-8"]], body, true, false);
  await writeAll(conn, bytes, performance.now() + ctx.writeTimeoutMs);
}

type Got = { bytes: Uint8Array; rest: Uint8Array } | "closed" | "timeout" | "too large";

/** Reads until a head is complete, never holding more than {@link MAX_HEAD_BYTES}. */
async function readHead(conn: ByteConn, pending: Uint8Array, deadline: number): Promise<Got> {
  let have = pending;
  let end = headEnd(have);
  while (end < 0) {
    if (have.length >= MAX_HEAD_BYTES) return "too large";
    const buf = new Uint8Array(Math.min(4096, MAX_HEAD_BYTES - have.length));
    const n = await before(conn.read(buf), deadline);
    if (n === null || n === "timeout") return n ?? "closed";
    const next = new Uint8Array(have.length + n);
    next.set(have);
    next.set(buf.subarray(0, n), have.length);
    end = headEnd(next, have.length - 3);
    have = next;
  }
  return { bytes: have.subarray(0, end), rest: have.subarray(end) };
}

/** Exactly `length` bytes, the first from `pending`, all before `deadline`. */
async function readBody(conn: ByteConn, pending: Uint8Array, length: number, deadline: number): Promise<
  { body: Uint8Array<ArrayBuffer>; rest: Uint8Array } | "closed" | "timeout"
> {
  const body = new Uint8Array(length);
  const first = Math.min(pending.length, length);
  body.set(pending.subarray(0, first));
  for (let at = first; at < length;) {
    const n = await before(conn.read(body.subarray(at)), deadline);
    if (n === null || n === "timeout") return n ?? "closed";
    at += n;
  }
  return { body, rest: pending.subarray(first) };
}

/** The handler's answer as bytes, within the handler deadline. */
async function answer(ctx: ConnectionContext, head: RequestHead, body: Uint8Array<ArrayBuffer>) {
  const headers = new Headers();
  for (const [k, v] of head.headers) headers.append(k, v);
  const hasBody = head.method !== "GET" && head.method !== "HEAD";
  const request = new Request(ctx.origin + head.target, {
    method: head.method,
    headers,
    ...(hasBody ? { body } : {}),
  });
  const run = (async () => {
    const res = await ctx.fetch(request);
    return { status: res.status, headers: [...res.headers], body: new Uint8Array(await res.arrayBuffer()) };
  })();
  const got = await before(run, performance.now() + ctx.handlerTimeoutMs);
  if (got !== "timeout") return got;
  const text = enc.encode(`no answer within ${ctx.handlerTimeoutMs} ms\n`);
  return { status: 503, headers: [["content-type", "text/plain; charset=utf-8"]] as [string, string][], body: text };
}

/** One request on `conn` after its head; answers whether the connection stays open. */
async function exchange(conn: ByteConn, ctx: ConnectionContext, head: RequestHead, pending: Uint8Array) {
  const { state, budget } = ctx;
  if (head.contentLength > ctx.maxBodyBytes) {
    await refuse(conn, ctx, 413, `the body is larger than ${ctx.maxBodyBytes} bytes`);
    return undefined;
  }
  if (!budget.reserve(state, head.contentLength)) {
    await refuse(conn, ctx, 503, ctx.busyMessage);
    return undefined;
  }
  enter(state, "body");
  const got = await readBody(conn, pending, head.contentLength, performance.now() + ctx.bodyTimeoutMs);
  if (got === "closed") return undefined;
  if (got === "timeout") {
    budget.hold(state, 0);
    await refuse(conn, ctx, 408, `the body did not arrive within ${ctx.bodyTimeoutMs} ms`);
    return undefined;
  }
  enter(state, "handler");
  let out: { status: number; headers: [string, string][]; body: Uint8Array };
  try {
    out = await answer(ctx, head, got.body);
  } catch (err) {
    const text = enc.encode(`the server failed to answer: ${errorMessage(err)}\n`);
    out = { status: 500, headers: [["content-type", "text/plain; charset=utf-8"]], body: text };
  }
  const close = head.close || ctx.stopping() || out.status === 503;
  const bare = head.method === "HEAD" || out.status === 204 || out.status === 304;
  const bytes = encode(out.status, out.headers, out.body, close, bare);
  budget.hold(state, bytes.length); // the request body is garbage now; the answer is what is held
  enter(state, "write");
  await writeAll(conn, bytes, performance.now() + ctx.writeTimeoutMs);
  budget.hold(state, 0);
  return close ? undefined : got.rest;
}

/** Serves requests on `conn` until the client closes it, a deadline passes, or the server stops; then closes it. */
export async function serveConnection(conn: ByteConn, ctx: ConnectionContext): Promise<void> {
  let pending: Uint8Array | undefined = new Uint8Array(0);
  let first = true;
  try {
    while (pending && !ctx.stopping() && !ctx.state.closed) {
      enter(ctx.state, first ? "head" : "idle");
      const got = await readHead(conn, pending, performance.now() + (first ? ctx.headerTimeoutMs : ctx.idleTimeoutMs));
      first = false;
      if (got === "closed" || got === "timeout") return;
      if (got === "too large") return await refuse(conn, ctx, 431, "request headers too large");
      const head = parseHead(got.bytes);
      if ("status" in head) return await refuse(conn, ctx, head.status, head.message);
      pending = await exchange(conn, ctx, head, got.rest);
    }
  } catch {
    // A write past its deadline, a reset or a closed connection: nothing more to answer.
  } finally {
    ctx.budget.hold(ctx.state, 0);
    ctx.state.closed = true;
    try {
      conn.close();
    } catch { /* already closed */ }
  }
}
