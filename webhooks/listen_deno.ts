/**
 * The default webhook listener: a plain TCP front on the webhook's port,
 * each connection piped to a `Deno.listenTls` listener on a private
 * loopback port, and NICO's own HTTP/1.1 (http1.ts) on the TLS side.
 *
 * - NICO's HTTP reads a body only when it fits under the in-flight cap, and
 *   the pipes carry bytes only as fast as it reads (back-pressure), so
 *   memory follows what NICO accepts, not what a client sends.
 * - The front owns the raw sockets, so every deadline really closes one:
 *   Deno cannot close a TLS connection whose handshake never finishes,
 *   but closing its TCP side ends it.
 * - At `maxConnections` the oldest connection that has not sent a request
 *   yet (handshakes included) is closed to make room, else the oldest
 *   kept-alive one between requests (either only when older than a
 *   second: a burst of real requests is not evicted), so connections held
 *   open by someone else cannot lock the API server out; beyond twice the
 *   limit new connections are closed at once.
 * - A renewed certificate starts a new TLS listener; new connections go to
 *   it, open ones finish on the old one.
 *
 * @module
 */
import type { KeyPair } from "../lib/pki.ts";
import { serveConnection } from "../lib/http1.ts";
import type { Listener, ListenerArgs } from "./listener.ts";

function closeQuietly(c: { close(): void } | undefined): void {
  try {
    c?.close();
  } catch { /* already closed */ }
}

/** One client connection: its TCP socket, the pipe's two ends, and whether it is inside a request. */
interface Link {
  outer: Deno.TcpConn;
  inner?: Deno.TcpConn;
  tls?: Deno.TlsConn;
  timer?: ReturnType<typeof setTimeout>;
  /** When it was accepted, or last became idle (performance.now()). */
  since: number;
}

/** A connection younger than this is never evicted: a burst of real requests is not an attack. */
const EVICT_AFTER_MS = 1_000;

/** Pipe buffer per direction: small, and reused (a stream pipe allocates 64 KiB per read). */
const PUMP_BYTES = 16 * 1024;

/** Copies `from` to `to` until either ends, one buffer at a time, so `from` is read only as fast as `to` takes it. */
async function pump(from: Deno.Conn, to: Deno.Conn): Promise<void> {
  const buf = new Uint8Array(PUMP_BYTES);
  try {
    for (let n = await from.read(buf); n !== null; n = await from.read(buf)) {
      let at = 0;
      while (at < n) at += await to.write(buf.subarray(at, n));
    }
  } finally {
    closeQuietly(to);
    closeQuietly(from);
  }
}

/** Starts the listener; resolves once it listens. */
export function listenDeno(a: ListenerArgs): Promise<Listener> {
  const lim = a.limits;
  let inflight = 0;
  let stopping = false;
  const links = new Set<Link>();
  /** Links that have not sent a request yet, oldest first: the first evicted at the cap. */
  const fresh = new Set<Link>();
  /** Kept-alive links between requests, oldest first: evicted only when no fresh one is left. */
  const idle = new Set<Link>();
  /** Links by the local port of their pipe's inner end, which the TLS listener sees as the remote port. */
  const byPipePort = new Map<number, Link>();
  const tasks = new Set<Promise<void>>();
  const track = (p: Promise<void>) => {
    tasks.add(p);
    void p.finally(() => tasks.delete(p));
  };

  const drop = (link: Link) => {
    clearTimeout(link.timer);
    closeQuietly(link.tls);
    closeQuietly(link.inner);
    closeQuietly(link.outer);
    links.delete(link);
    fresh.delete(link);
    idle.delete(link);
    if (link.inner) byPipePort.delete((link.inner.localAddr as Deno.NetAddr).port);
  };

  /** TLS connections accepted before their front link recorded its pipe port (the two race). */
  const early = new Map<number, Deno.TlsConn>();
  const serve = (conn: Deno.TlsConn) => {
    const pipePort = (conn.remoteAddr as Deno.NetAddr).port;
    const link = byPipePort.get(pipePort);
    if (!link) {
      early.set(pipePort, conn);
      setTimeout(() => {
        if (early.get(pipePort) === conn) {
          early.delete(pipePort);
          closeQuietly(conn);
        }
      }, 1_000);
      return;
    }
    link.tls = conn;
    track(
      serveConnection(conn, {
        hostname: a.hostname,
        // The front's deadline already covers the handshake and the first head.
        headerTimeoutMs: lim.headerTimeoutMs,
        bodyTimeoutMs: lim.bodyTimeoutMs,
        idleTimeoutMs: lim.idleTimeoutMs,
        maxBodyBytes: lim.maxBodyBytes,
        fetch: a.fetch,
        reserve(bytes) {
          if (inflight + bytes > lim.maxInflightBytes) return false;
          inflight += bytes;
          return true;
        },
        release(bytes) {
          inflight -= bytes;
        },
        busy(isBusy) {
          clearTimeout(link.timer);
          fresh.delete(link);
          if (isBusy) idle.delete(link);
          else if (links.has(link)) {
            link.since = performance.now();
            idle.add(link);
          }
        },
        stopping: () => stopping,
        // Closing the TLS side ends the pipe once the answer has gone out; then the front drops the link.
      }).finally(() => {
        clearTimeout(link.timer);
        link.timer = setTimeout(() => drop(link), 1_000);
      }),
    );
  };

  const bindTls = (pair: KeyPair) =>
    Deno.listenTls({
      hostname: "127.0.0.1",
      port: 0,
      cert: pair.certPem,
      key: pair.keyPem,
      alpnProtocols: ["http/1.1"],
    });
  const acceptTls = async (listener: Deno.TlsListener) => {
    try {
      for await (const conn of listener) serve(conn);
    } catch { /* closed */ }
  };
  let tls = bindTls(a.pair);
  track(acceptTls(tls));

  const admit = async (outer: Deno.TcpConn) => {
    if (stopping || links.size >= 2 * lim.maxConnections) return closeQuietly(outer);
    const link: Link = { outer, since: performance.now() };
    links.add(link);
    if (links.size > lim.maxConnections) {
      const cutoff = performance.now() - EVICT_AFTER_MS;
      const oldest = (set: Set<Link>) => {
        const first = set.values().next().value;
        return first && first.since < cutoff ? first : undefined;
      };
      const old = oldest(fresh) ?? oldest(idle);
      if (old) drop(old);
    }
    fresh.add(link);
    // Handshake and first head: the whole connection goes if they are not in by then.
    link.timer = setTimeout(() => drop(link), lim.headerTimeoutMs);
    try {
      const inner = await Deno.connect({ hostname: "127.0.0.1", port: (tls.addr as Deno.NetAddr).port });
      if (!links.has(link)) return closeQuietly(inner);
      link.inner = inner;
      inner.setNoDelay(true);
      outer.setNoDelay(true);
      const pipePort = (inner.localAddr as Deno.NetAddr).port;
      byPipePort.set(pipePort, link);
      const waiting = early.get(pipePort);
      if (waiting) {
        early.delete(pipePort);
        serve(waiting);
      }
      await Promise.allSettled([pump(outer, inner), pump(inner, outer)]);
    } catch { /* reset */ }
    drop(link);
  };

  const front = Deno.listen({ hostname: a.hostname, port: a.port });
  const acceptFront = async () => {
    try {
      for await (const conn of front) track(admit(conn));
    } catch { /* closed */ }
  };
  const accepting = acceptFront();

  return Promise.resolve({
    port: (front.addr as Deno.NetAddr).port,
    connections: () => links.size,
    setCertificate(pair) {
      const next = bindTls(pair);
      const old = tls;
      tls = next;
      track(acceptTls(next));
      closeQuietly(old); // open connections on it carry on
      return Promise.resolve();
    },
    async stop() {
      stopping = true;
      closeQuietly(front);
      await accepting;
      for (const link of [...fresh, ...idle]) drop(link);
      const force = setTimeout(() => {
        for (const link of links) drop(link);
      }, lim.bodyTimeoutMs);
      closeQuietly(tls);
      while (tasks.size) await Promise.all([...tasks]);
      clearTimeout(force);
    },
  });
}
