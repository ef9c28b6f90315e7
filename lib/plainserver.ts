/**
 * A plain-TCP HTTP/1.1 server for `/metrics`, `/healthz` and `/readyz`, with
 * the webhook's discipline: a deadline for the request head, a small body
 * limit, an idle timeout, and a cap on open connections (past it the oldest
 * connection not serving a request is closed), so a client that holds
 * sockets open or sends bytes slowly cannot grow NICO's memory or keep the
 * kubelet's probes from being answered.
 *
 * @module
 */
import { serveConnection } from "./http1.ts";

/** Limits of a {@link servePlain} server; each has a default. */
export interface PlainLimits {
  /** Request head within this long of connecting (default 5 s). */
  headerTimeoutMs?: number;
  /** A kept-alive connection with no new request (default 30 s). */
  idleTimeoutMs?: number;
  /** Open connections before the oldest idle one is closed (default 64). */
  maxConnections?: number;
  /** Largest request body (default 16 KiB: these endpoints take none). */
  maxBodyBytes?: number;
}

export interface PlainServerOptions extends PlainLimits {
  hostname: string;
  port: number;
  fetch: (request: Request) => Response | Promise<Response>;
  /** Aborting stops the server: no new connections; requests in flight finish. */
  signal?: AbortSignal;
}

export interface PlainServer {
  /** The port it listens on (useful with port 0). */
  port: number;
  /** Open connections now. */
  connections(): number;
  /** Resolves when the server has stopped and its connections are closed. */
  finished: Promise<void>;
}

/** Starts listening at once; see the module doc. */
export function servePlain(o: PlainServerOptions): PlainServer {
  const headerTimeoutMs = o.headerTimeoutMs ?? 5_000;
  const maxConnections = o.maxConnections ?? 64;
  const listener = Deno.listen({ hostname: o.hostname, port: o.port, transport: "tcp" });
  /** Open connections, oldest first, with whether each is serving a request now. */
  const open = new Map<Deno.Conn, { busy: boolean }>();
  const tasks = new Set<Promise<void>>();
  let stopping = false;
  const close = (c: Deno.Conn) => {
    try {
      c.close();
    } catch { /* already closed */ }
  };
  const stop = () => {
    if (stopping) return;
    stopping = true;
    try {
      listener.close();
    } catch { /* already closed */ }
    for (const [c, s] of open) if (!s.busy) close(c);
  };
  o.signal?.addEventListener("abort", stop, { once: true });
  if (o.signal?.aborted) stop();

  const accept = async () => {
    for (;;) {
      let conn: Deno.Conn;
      try {
        conn = await listener.accept();
      } catch {
        return; // the listener was closed
      }
      if (stopping) {
        close(conn);
        continue;
      }
      if (open.size >= maxConnections) {
        const victim = [...open].find(([, s]) => !s.busy)?.[0];
        if (victim) {
          close(victim);
          open.delete(victim);
        } else {
          close(conn); // every connection is answering a request: refuse this one
          continue;
        }
      }
      const state = { busy: false };
      open.set(conn, state);
      const task = serveConnection(conn, {
        hostname: o.hostname,
        scheme: "http",
        headerTimeoutMs,
        bodyTimeoutMs: headerTimeoutMs,
        idleTimeoutMs: o.idleTimeoutMs ?? 30_000,
        maxBodyBytes: o.maxBodyBytes ?? 16 * 1024,
        fetch: o.fetch,
        reserve: () => true,
        release: () => {},
        busy(isBusy) {
          state.busy = isBusy;
          if (!isBusy && stopping) close(conn);
        },
        stopping: () => stopping,
      }).finally(() => {
        open.delete(conn);
        tasks.delete(task);
      });
      tasks.add(task);
    }
  };
  const finished = accept().then(async () => {
    while (tasks.size) await Promise.allSettled([...tasks]);
  });
  return { port: (listener.addr as Deno.NetAddr).port, connections: () => open.size, finished };
}
