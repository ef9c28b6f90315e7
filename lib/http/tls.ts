/**
 * TLS behind the server's TCP front: the front pipes each raw connection to
 * a private loopback port where TLS is terminated, and the decrypted
 * connection comes back with the pipe's port so the front can pair the two.
 * `Deno.listenTls` by default; `node:tls` when client certificates are
 * required (Deno's own TLS listener cannot ask for them).
 *
 * @module
 */
import tls from "node:tls";
import type { Socket } from "node:net";
import type { ByteConn } from "./conn.ts";
import { acceptLoop } from "./front.ts";

/** A certificate chain and its key, PEM. */
export interface CertPair {
  certPem: string;
  keyPem: string;
}

/** A TLS endpoint on loopback that hands back decrypted connections. */
export interface TlsTerminator {
  /** The loopback port the front pipes to now. */
  port(): number;
  /** Starts handing decrypted connections to `accept`, with the port of the pipe each came from. */
  start(accept: (conn: ByteConn, pipePort: number) => void): Promise<void>;
  /** Serves `pair` to new connections from now on; open ones carry on. */
  setCertificate(pair: CertPair): Promise<void>;
  /** False while accepting on the TLS side fails. */
  healthy?(): boolean;
  close(): void;
}

function closeQuietly(c: { close(): void }): void {
  try {
    c.close();
  } catch { /* already closed */ }
}

/** `Deno.listenTls`, HTTP/1.1 over ALPN; a new certificate binds a new listener. */
export function denoTls(pair: CertPair): TlsTerminator {
  let accept: ((conn: ByteConn, pipePort: number) => void) | undefined;
  let loop: { healthy(): boolean } | undefined;
  const bind = (p: CertPair) => {
    const l = Deno.listenTls({
      hostname: "127.0.0.1",
      port: 0,
      cert: p.certPem,
      key: p.keyPem,
      alpnProtocols: ["http/1.1"],
    });
    let closed = false;
    // Accept errors (EMFILE) are waited out here too; a replaced listener's loop ends once it is closed.
    const hand = (conn: Deno.Conn) => accept?.(conn, (conn.remoteAddr as Deno.NetAddr).port);
    loop = acceptLoop(l, hand, () => closed);
    return {
      l,
      close: () => {
        closed = true;
        closeQuietly(l);
      },
    };
  };
  let listener = bind(pair);
  return {
    port: () => (listener.l.addr as Deno.NetAddr).port,
    start(fn) {
      accept = fn;
      return Promise.resolve();
    },
    setCertificate(p) {
      const old = listener;
      listener = bind(p);
      old.close();
      return Promise.resolve();
    },
    healthy: () => loop?.healthy() ?? true,
    close: () => listener.close(),
  };
}

/** A Node socket as a {@link ByteConn}: read only as fast as the server asks (the socket is paused in between). */
export function nodeConn(socket: Socket): ByteConn {
  const chunks: Uint8Array[] = [];
  let ended = false;
  let wake: (() => void) | undefined;
  const poke = () => {
    wake?.();
    wake = undefined;
  };
  socket.pause();
  socket.on("data", (c: Uint8Array) => {
    chunks.push(c);
    socket.pause();
    poke();
  });
  const end = () => {
    ended = true;
    poke();
  };
  socket.on("end", end);
  socket.on("close", end);
  socket.on("error", end);
  return {
    async read(p) {
      while (chunks.length === 0) {
        if (ended) return null;
        const woken = new Promise<void>((r) => (wake = r));
        socket.resume();
        await woken;
      }
      const c = chunks[0]!;
      const n = Math.min(p.length, c.length);
      p.set(c.subarray(0, n));
      if (n === c.length) chunks.shift();
      else chunks[0] = c.subarray(n);
      return n;
    },
    write(p) {
      return new Promise((resolve, reject) => {
        if (socket.destroyed) return reject(new Error("closed"));
        socket.write(p, (err) => (err ? reject(err) : resolve(p.length)));
      });
    },
    close() {
      socket.destroy();
    },
  };
}

/** `node:tls`, asking for a client certificate signed by `clientCaPem` and refusing the handshake without one. */
export function nodeTls(pair: CertPair, clientCaPem: string): TlsTerminator {
  const server = tls.createServer({
    cert: pair.certPem,
    key: pair.keyPem,
    ca: clientCaPem,
    requestCert: true,
    rejectUnauthorized: true,
    ALPNProtocols: ["http/1.1"],
  });
  server.on("tlsClientError", () => {});
  let port = 0;
  return {
    port: () => port,
    async start(accept) {
      server.on("secureConnection", (socket: tls.TLSSocket) => accept(nodeConn(socket), socket.remotePort ?? 0));
      await new Promise<void>((resolve, reject) => {
        server.once("error", reject);
        server.listen(0, "127.0.0.1", () => {
          server.off("error", reject);
          port = (server.address() as { port: number }).port;
          resolve();
        });
      });
    },
    setCertificate(p) {
      server.setSecureContext({ cert: p.certPem, key: p.keyPem, ca: clientCaPem });
      return Promise.resolve();
    },
    close: () => void server.close(),
  };
}
