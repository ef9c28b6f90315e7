/**
 * HTTP/1.1 on one connection (TLS for the webhook, plain TCP for the probes
 * and metrics), reading only what NICO asked for: the
 * headers (at most 16 KiB, within a deadline), then a body only once its
 * bytes fit under the in-flight cap. A body NICO refuses is never read, so
 * memory follows what NICO accepts, not what a client sends (Deno's
 * `node:http` reads every byte a client sends, whatever the handler does).
 *
 * Enough HTTP for the API server: `Content-Length` bodies (no chunked
 * uploads), keep-alive, `Connection: close`. The API server offers HTTP/2
 * and HTTP/1.1 over ALPN; this server speaks HTTP/1.1.
 *
 * @module
 */
import { errorMessage } from "./runtime/log.ts";

/** Largest request head (request line and headers). */
export const MAX_HEAD_BYTES = 16 * 1024;

/** What a connection needs from its server. */
export interface ConnectionContext {
  /** Host name for request URLs. */
  hostname: string;
  /** Scheme of request URLs (default https). */
  scheme?: "http" | "https";
  headerTimeoutMs: number;
  bodyTimeoutMs: number;
  idleTimeoutMs: number;
  maxBodyBytes: number;
  fetch: (request: Request) => Response | Promise<Response>;
  /** Reserves `bytes` of the in-flight cap; false when they do not fit. */
  reserve(bytes: number): boolean;
  release(bytes: number): void;
  /** Called when a request starts (the connection is busy) and when it is idle again. */
  busy(isBusy: boolean): void;
  /** True once the server stops: no new request on this connection. */
  stopping(): boolean;
}

const CRLF2 = new Uint8Array([13, 10, 13, 10]);
const enc = new TextEncoder();

function indexOf(hay: Uint8Array, needle: Uint8Array, from = 0): number {
  outer: for (let i = Math.max(0, from); i <= hay.length - needle.length; i++) {
    for (let j = 0; j < needle.length; j++) if (hay[i + j] !== needle[j]) continue outer;
    return i;
  }
  return -1;
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  if (a.length === 0) return b.slice();
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

/** A read that gives up at `deadline` (ms since the epoch of performance.now): `null` on EOF, "timeout" then. */
async function readBefore(conn: Deno.Conn, buf: Uint8Array, deadline: number): Promise<number | null | "timeout"> {
  const ms = deadline - performance.now();
  if (ms <= 0) return "timeout";
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<"timeout">((resolve) => (timer = setTimeout(() => resolve("timeout"), ms)));
  try {
    return await Promise.race([conn.read(buf), late]);
  } finally {
    clearTimeout(timer);
  }
}

async function writeAll(conn: Deno.Conn, data: Uint8Array): Promise<void> {
  let at = 0;
  while (at < data.length) at += await conn.write(data.subarray(at));
}

const REASONS: Record<number, string> = {
  200: "OK",
  400: "Bad Request",
  404: "Not Found",
  408: "Request Timeout",
  411: "Length Required",
  413: "Content Too Large",
  431: "Request Header Fields Too Large",
  500: "Internal Server Error",
  503: "Service Unavailable",
};

async function respond(
  conn: Deno.Conn,
  status: number,
  headers: [string, string][],
  body: Uint8Array,
  close: boolean,
): Promise<void> {
  const lines = [`HTTP/1.1 ${status} ${REASONS[status] ?? "Status"}`];
  for (const [k, v] of headers) {
    if (k !== "content-length" && k !== "connection" && k !== "transfer-encoding") lines.push(`${k}: ${v}`);
  }
  lines.push(`content-length: ${body.length}`, `connection: ${close ? "close" : "keep-alive"}`, "", "");
  await writeAll(conn, concat(enc.encode(lines.join("\r\n")), body));
}

const text = (status: number, message: string, conn: Deno.Conn) =>
  respond(conn, status, [["content-type", "text/plain; charset=utf-8"]], enc.encode(message), true);

interface Head {
  method: string;
  target: string;
  version: string;
  headers: [string, string][];
}

function parseHead(raw: string): Head | undefined {
  const [line = "", ...rest] = raw.split("\r\n");
  const m = /^([A-Z]+) (\S+) HTTP\/(1\.[01])$/.exec(line);
  if (!m) return undefined;
  const headers: [string, string][] = [];
  for (const h of rest) {
    const i = h.indexOf(":");
    if (i <= 0) return undefined;
    headers.push([h.slice(0, i).trim().toLowerCase(), h.slice(i + 1).trim()]);
  }
  return { method: m[1]!, target: m[2]!, version: m[3]!, headers };
}

/** Serves requests on `conn` until the client closes it, a deadline passes, or the server stops. */
export async function serveConnection(conn: Deno.Conn, ctx: ConnectionContext): Promise<void> {
  let pending: Uint8Array = new Uint8Array(0);
  const buf = new Uint8Array(MAX_HEAD_BYTES);
  let first = true;
  try {
    while (!ctx.stopping()) {
      // The head: within the header timeout of connecting, or the idle timeout of the last answer.
      const headDeadline = performance.now() + (first ? ctx.headerTimeoutMs : ctx.idleTimeoutMs);
      first = false;
      let end = indexOf(pending, CRLF2);
      while (end < 0) {
        if (pending.length > MAX_HEAD_BYTES) return await text(431, "request headers too large", conn);
        const n = await readBefore(conn, buf, headDeadline);
        if (n === null || n === "timeout") return;
        pending = concat(pending, buf.subarray(0, n));
        end = indexOf(pending, CRLF2, pending.length - n - 3);
      }
      const head = parseHead(new TextDecoder().decode(pending.subarray(0, end)));
      pending = pending.subarray(end + 4);
      if (!head) return await text(400, "bad request line or header", conn);
      const get = (name: string) => head.headers.find(([k]) => k === name)?.[1];
      if (get("transfer-encoding") !== undefined) {
        return await text(411, "send the body with Content-Length (chunked bodies are not accepted)", conn);
      }
      const declared = Number(get("content-length") ?? "0");
      if (!Number.isSafeInteger(declared) || declared < 0) return await text(400, "bad Content-Length", conn);
      if (declared > ctx.maxBodyBytes) {
        return await text(413, `bad AdmissionReview: the body is larger than ${ctx.maxBodyBytes} bytes`, conn);
      }
      if (!ctx.reserve(declared)) {
        return await text(503, "NICO's webhook is busy reading other requests; try again", conn);
      }
      ctx.busy(true);
      try {
        // The body: exactly Content-Length bytes, within the body timeout.
        const body = new Uint8Array(declared);
        const have = Math.min(pending.length, declared);
        body.set(pending.subarray(0, have));
        pending = pending.subarray(have);
        let at = have;
        const bodyDeadline = performance.now() + ctx.bodyTimeoutMs;
        while (at < declared) {
          const n = await readBefore(conn, body.subarray(at), bodyDeadline);
          if (n === null) return;
          if (n === "timeout") return await text(408, `the body did not arrive within ${ctx.bodyTimeoutMs} ms`, conn);
          at += n;
        }
        const close = head.version === "1.0" || get("connection")?.toLowerCase() === "close" || ctx.stopping();
        const headers = new Headers();
        for (const [k, v] of head.headers) headers.append(k, v);
        const hasBody = head.method !== "GET" && head.method !== "HEAD";
        let status = 500;
        let outHeaders: [string, string][] = [["content-type", "text/plain; charset=utf-8"]];
        let out: Uint8Array;
        try {
          const res = await ctx.fetch(
            new Request(`${ctx.scheme ?? "https"}://${ctx.hostname}${head.target}`, {
              method: head.method,
              headers,
              ...(hasBody ? { body } : {}),
            }),
          );
          status = res.status;
          outHeaders = [...res.headers];
          out = new Uint8Array(await res.arrayBuffer());
        } catch (err) {
          out = enc.encode(`NICO failed to answer: ${errorMessage(err)}`);
        }
        await respond(conn, status, outHeaders, out, close);
        if (close) return;
      } finally {
        ctx.release(declared);
        ctx.busy(false);
      }
    }
  } catch {
    // A reset or a closed connection: nothing to answer.
  } finally {
    try {
      conn.close();
    } catch { /* already closed */ }
  }
}
