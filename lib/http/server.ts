/**
 * NICO's one HTTP server, for the admission webhook (TLS) and the probes and
 * metrics (plain TCP), with one connection policy (policy.ts):
 *
 * - every phase of every connection has a deadline (conn.ts), writing the
 *   answer included, and with TLS the TCP front owns the raw socket, so a
 *   deadline closes it even inside a handshake (Deno cannot close a TLS
 *   connection whose handshake never finishes, but closing its TCP side
 *   ends it); the pipe also stops a write that does not move;
 * - body and answer bytes are held under one budget, per connection, and
 *   released when it closes; a request that does not fit pushes out
 *   connections holding more than it asks, else gets 503;
 * - past `maxConnections` the connection that sent nothing for longest (then
 *   idle, then stalled writes and bodies) is closed to make room, once older
 *   than `evictAfterMs`; at twice that, whichever qualifies at any age;
 * - the accept loop outlives transient errors (EMFILE, a reset), backing
 *   off; {@link HttpServer.healthy} is false while accepting fails;
 * - IPv4 and IPv6 addresses (`::1`, `::`).
 *
 * @module
 */
import { type ByteConn, serveConnection } from "./conn.ts";
import type { HttpLimits } from "./policy.ts";
import { ConnectionTable, EarlyArrivals } from "./table.ts";
import type { CertPair, TlsTerminator } from "./tls.ts";
import { acceptLoop, type Link, pipe } from "./front.ts";

export type { HttpLimits } from "./policy.ts";
export type { CertPair, TlsTerminator } from "./tls.ts";

/** Defaults: those of the probes' plain server; the webhook passes its own. */
export const PLAIN_LIMITS: HttpLimits = {
  headerTimeoutMs: 5_000,
  idleTimeoutMs: 30_000,
  bodyTimeoutMs: 5_000,
  handlerTimeoutMs: 10_000,
  writeTimeoutMs: 10_000,
  maxConnections: 64,
  evictAfterMs: 0,
  maxBodyBytes: 16 * 1024,
  maxInflightBytes: 8 * 1024 * 1024,
};

/** Options of {@link serveHttp}. */
export interface HttpServerOptions extends Partial<HttpLimits> {
  /** An address (`127.0.0.1`, `::1`, `0.0.0.0`, `::`), brackets allowed. */
  hostname: string;
  port: number;
  fetch: (request: Request) => Response | Promise<Response>;
  /** TLS behind the front; plain HTTP without. */
  tls?: TlsTerminator;
  /** Aborting it stops the server. */
  signal?: AbortSignal;
  /** Text of the 503 when the budget is full. */
  busyMessage?: string;
  /** Told about accept errors (each once per streak). */
  onAcceptError?: (err: unknown) => void;
  /** The TCP listener (tests pass one that fails); default `Deno.listen`. */
  listen?: (o: { hostname: string; port: number }) => Deno.Listener;
}

/** A running server. */
export interface HttpServer {
  hostname: string;
  port: number;
  /** Open connections now. */
  connections(): number;
  /** Body and answer bytes held now. */
  held(): number;
  /** False while accepting fails, and once the listener is gone for good. */
  healthy(): boolean;
  setCertificate(pair: CertPair): Promise<void>;
  /** Stops accepting, closes idle connections, waits for requests in flight (at most the write timeout). */
  stop(): Promise<void>;
  /** Resolves once stopped. */
  finished: Promise<void>;
}

/** A URL origin for `hostname`: IPv6 in brackets, the unspecified addresses as loopback. */
export function originOf(scheme: "http" | "https", hostname: string, port: number): string {
  const h = hostname.replace(/^\[|\]$/g, "");
  const shown = h === "0.0.0.0" ? "127.0.0.1" : h === "::" ? "::1" : h;
  return `${scheme}://${shown.includes(":") ? `[${shown}]` : shown}:${port}`;
}

function closeQuietly(c: { close(): void } | undefined): void {
  try {
    c?.close();
  } catch { /* already closed */ }
}

/** The limits of `o`, each filled from {@link PLAIN_LIMITS}. */
function limitsOf(o: Partial<HttpLimits>): HttpLimits {
  const lim: HttpLimits = { ...PLAIN_LIMITS };
  for (const k of Object.keys(PLAIN_LIMITS) as (keyof HttpLimits)[]) if (o[k] !== undefined) lim[k] = o[k]!;
  return lim;
}

/**
 * When HTTP on `link` is over. With TLS, after an answer the pipe still
 * carries it out and ends on its own once the TLS side closed (the write
 * timeout bounds it); otherwise (a deadline, a reset) the link goes now:
 * closing a TLS connection inside its handshake does not end it.
 */
function afterServing(link: Link, table: ConnectionTable, tls: boolean, writeTimeoutMs: number): void {
  if (!tls || link.state.phase !== "write") return table.drop(link);
  clearTimeout(link.timer);
  link.timer = setTimeout(() => table.drop(link), writeTimeoutMs);
}

/** Starts listening at once; resolves when the TLS side (if any) is up. */
export async function serveHttp(o: HttpServerOptions): Promise<HttpServer> {
  const lim = limitsOf(o);
  const hostname = o.hostname.replace(/^\[|\]$/g, "");
  const listener = (o.listen ?? ((a) => Deno.listen(a)))({ hostname, port: o.port });
  const port = (listener.addr as Deno.NetAddr).port;
  const table = new ConnectionTable(lim);
  const early = new EarlyArrivals();
  const tasks = new Set<Promise<void>>();
  let stopping = false;
  const track = (p: Promise<void>) => {
    tasks.add(p);
    void p.finally(() => tasks.delete(p));
  };
  const ctx = {
    ...lim,
    origin: originOf(o.tls ? "https" : "http", hostname, port),
    fetch: o.fetch,
    budget: table,
    stopping: () => stopping,
    busyMessage: o.busyMessage ?? "the server is busy reading other requests; try again",
  };
  const serve = (link: Link, conn: ByteConn) => {
    link.http = conn;
    const after = () => afterServing(link, table, o.tls !== undefined, lim.writeTimeoutMs);
    track(serveConnection(conn, { ...ctx, state: link.state }).finally(after));
  };
  await o.tls?.start((conn, pipePort) => {
    const link = table.byPipePort.get(pipePort);
    if (link) serve(link, conn);
    else early.put(pipePort, conn); // the TLS side can be quicker than the front's bookkeeping
  });
  const admit = (outer: Deno.Conn) => {
    const now = performance.now();
    if (stopping || !table.makeRoom(now)) return closeQuietly(outer);
    const link = table.add(outer, now);
    if (!o.tls) return serve(link, outer);
    // The handshake and the first head: the whole connection goes if they are not in by then.
    link.timer = setTimeout(() => link.state.phase === "head" && table.drop(link), lim.headerTimeoutMs);
    const connected = (pipePort: number) => {
      table.byPipePort.set(pipePort, link);
      const waiting = early.take(pipePort);
      if (waiting) serve(link, waiting);
    };
    track(pipe(link, o.tls.port(), lim.writeTimeoutMs, connected).finally(() => table.drop(link)));
  };
  const loop = acceptLoop(listener, admit, () => stopping, o.onAcceptError);
  const finished = loop.done.then(async () => {
    while (tasks.size) await Promise.allSettled([...tasks]);
  });
  let stopped: Promise<void> | undefined;
  const stop = () => {
    stopped ??= (async () => {
      stopping = true;
      closeQuietly(listener);
      await loop.done;
      const links = () => [...table.links.values()];
      for (const link of links()) if (link.state.phase === "head" || link.state.phase === "idle") table.drop(link);
      const force = setTimeout(() => links().forEach((l) => table.drop(l)), lim.writeTimeoutMs);
      o.tls?.close();
      early.clear();
      await finished;
      clearTimeout(force);
    })();
    return stopped;
  };
  o.signal?.addEventListener("abort", () => void stop(), { once: true });
  if (o.signal?.aborted) void stop();
  return {
    hostname,
    port,
    connections: () => table.size,
    held: () => table.used,
    healthy: () => !stopping && loop.healthy() && (o.tls?.healthy?.() ?? true),
    setCertificate: (pair) => o.tls ? o.tls.setCertificate(pair) : Promise.resolve(),
    stop,
    finished,
  };
}
