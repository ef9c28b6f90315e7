/**
 * The TCP front of `serveHttp`: an accept loop that outlives transient
 * errors, and the pipe from a raw connection to the TLS side, which stops a
 * write to the client that does not move within the write timeout.
 *
 * @module
 */
import type { ByteConn, ConnState } from "./conn.ts";

/** One client connection: its TCP socket, the pipe's inner end, the HTTP side, and its state. */
export interface Link {
  outer: Deno.Conn;
  inner?: Deno.Conn;
  /** What HTTP is served on: `outer` itself, or the decrypted TLS connection. */
  http?: ByteConn;
  pipePort?: number;
  timer?: ReturnType<typeof setTimeout>;
  state: ConnState;
}

/** Pipe buffer per direction: small, and reused. */
const PUMP_BYTES = 16 * 1024;

function closeQuietly(c: { close(): void } | undefined): void {
  try {
    c?.close();
  } catch { /* already closed */ }
}

/**
 * Copies `from` to `to` one buffer at a time (`from` is read only as fast as
 * `to` takes it); with `writeTimeoutMs`, a write that does not finish by then ends it.
 */
async function pump(from: Deno.Conn, to: Deno.Conn, writeTimeoutMs?: number): Promise<void> {
  const buf = new Uint8Array(PUMP_BYTES);
  try {
    for (let n = await from.read(buf); n !== null; n = await from.read(buf)) {
      let at = 0;
      while (at < n) {
        if (writeTimeoutMs === undefined) {
          at += await to.write(buf.subarray(at, n));
          continue;
        }
        let timer: ReturnType<typeof setTimeout> | undefined;
        const stuck = new Promise<never>((
          _,
          reject,
        ) => (timer = setTimeout(() => reject(new Error("stuck")), writeTimeoutMs)));
        try {
          at += await Promise.race([to.write(buf.subarray(at, n)), stuck]);
        } finally {
          clearTimeout(timer);
        }
      }
    }
  } finally {
    closeQuietly(to);
    closeQuietly(from);
  }
}

/** Connects `link` to the TLS side on `port` and pipes both ways until either side ends. */
export async function pipe(
  link: Link,
  port: number,
  writeTimeoutMs: number,
  connected: (pipePort: number) => void,
): Promise<void> {
  try {
    const inner = await Deno.connect({ hostname: "127.0.0.1", port });
    if (link.state.closed) return closeQuietly(inner);
    link.inner = inner;
    inner.setNoDelay(true);
    (link.outer as Deno.TcpConn).setNoDelay?.(true);
    link.pipePort = (inner.localAddr as Deno.NetAddr).port;
    connected(link.pipePort);
    await Promise.allSettled([pump(link.outer, inner), pump(inner, link.outer, writeTimeoutMs)]);
  } catch { /* reset */ }
}

/** Whether an accept error means the listener is gone for good (closed), not a passing shortage. */
function isFinal(err: unknown): boolean {
  return err instanceof Deno.errors.BadResource || err instanceof Deno.errors.Interrupted;
}

/**
 * Accepts connections until `stopping()`; a failed accept (EMFILE, a reset)
 * waits and tries again, 10 ms doubling to 1 s, and reports once per streak.
 */
export function acceptLoop(
  listener: Deno.Listener,
  admit: (conn: Deno.Conn) => void,
  stopping: () => boolean,
  onError?: (err: unknown) => void,
): { done: Promise<void>; healthy(): boolean } {
  let failing = false;
  let gone = false;
  const done = (async () => {
    let delay = 10;
    while (!stopping()) {
      let conn: Deno.Conn;
      try {
        conn = await listener.accept();
      } catch (err) {
        if (stopping() || isFinal(err)) {
          gone = !stopping();
          return;
        }
        if (!failing) onError?.(err);
        failing = true;
        await new Promise((r) => setTimeout(r, delay));
        delay = Math.min(delay * 2, 1_000);
        continue;
      }
      failing = false;
      delay = 10;
      admit(conn);
    }
  })();
  return { done, healthy: () => !failing && !gone };
}
