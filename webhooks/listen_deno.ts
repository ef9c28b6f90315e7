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
 * - At `maxConnections` the oldest connection that is not inside a request
 *   (handshakes included) is closed to make room, so connections held open
 *   by someone else cannot lock the API server out; at twice that, new
 *   connections are closed at once.
 * - A renewed certificate starts a new TLS listener; new connections go to
 *   it, open ones finish on the old one.
 *
 * @module
 */
import type { KeyPair } from "../lib/pki.ts";
import { serveConnection } from "./http1.ts";
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
}

/** Starts the listener; resolves once it listens. */
export function listenDeno(a: ListenerArgs): Promise<Listener> {
  const lim = a.limits;
  let inflight = 0;
  let stopping = false;
  const links = new Set<Link>();
  /** Links not inside a request, oldest first: the ones evicted at the cap. */
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
    idle.delete(link);
    if (link.inner) byPipePort.delete((link.inner.localAddr as Deno.NetAddr).port);
  };

  const serve = (conn: Deno.TlsConn) => {
    const link = byPipePort.get((conn.remoteAddr as Deno.NetAddr).port);
    if (!link) return closeQuietly(conn);
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
          if (isBusy) idle.delete(link);
          else if (links.has(link)) idle.add(link);
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
    const link: Link = { outer };
    links.add(link);
    idle.add(link);
    if (links.size > lim.maxConnections) {
      for (const old of idle) {
        if (old !== link) {
          drop(old);
          break;
        }
      }
    }
    // Handshake and first head: the whole connection goes if they are not in by then.
    link.timer = setTimeout(() => drop(link), lim.headerTimeoutMs);
    try {
      const inner = await Deno.connect({ hostname: "127.0.0.1", port: (tls.addr as Deno.NetAddr).port });
      if (!links.has(link)) return closeQuietly(inner);
      link.inner = inner;
      inner.setNoDelay(true);
      outer.setNoDelay(true);
      byPipePort.set((inner.localAddr as Deno.NetAddr).port, link);
      await Promise.allSettled([
        outer.readable.pipeTo(inner.writable),
        inner.readable.pipeTo(outer.writable),
      ]);
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
      for (const link of idle) drop(link);
      const force = setTimeout(() => {
        for (const link of links) drop(link);
      }, lim.bodyTimeoutMs);
      closeQuietly(tls);
      while (tasks.size) await Promise.all([...tasks]);
      clearTimeout(force);
    },
  });
}
