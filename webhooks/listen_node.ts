/**
 * The webhook listener when client certificates are required
 * (`--webhook-client-ca`): `node:https`, because Deno's own TLS listener
 * cannot ask for them. The same deadlines, caps and eviction as the default
 * listener, enforced by NICO where Deno's `node:http` does not (it has no
 * working `headersTimeout`); but `node:http` reads every byte a client
 * sends, so bodies NICO refuses still pass through memory (see
 * docs/operations.md, Security).
 *
 * @module
 */
import https from "node:https";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { errorMessage } from "../lib/runtime/log.ts";
import type { Listener, ListenerArgs } from "./listener.ts";

/** A short text answer; with `close`, the connection is dropped once it is sent (no unread body is kept). */
function plain(res: ServerResponse, status: number, text: string, close = false): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.writeHead(status, { "content-type": "text/plain; charset=utf-8", ...(close ? { connection: "close" } : {}) });
  res.end(text);
  if (close) {
    res.once("finish", () => {
      const socket = res.socket;
      socket?.end();
      setTimeout(() => socket?.destroy(), 200);
    });
  }
}

/** Starts the listener; resolves once it listens. */
export async function listenNode(a: ListenerArgs): Promise<Listener> {
  const lim = a.limits;
  const deadlines = new Map<Socket, ReturnType<typeof setTimeout>>();
  const busy = new Set<Socket>();
  const open = new Set<Socket>();
  /** Connections that have not sent a request yet, oldest first: the ones evicted at the cap. */
  const waiting = new Set<Socket>();
  let inflight = 0;

  /**
   * Closes `socket`: `end()` first (Deno's node:tls does not always close a
   * socket on `destroy()` alone when it has nothing pending), then `destroy()`.
   */
  const drop = (socket: Socket) => {
    socket.end();
    socket.destroy();
    (socket as Socket & { _parent?: Socket })._parent?.destroy();
  };
  /** Closes `socket` unless something clears the deadline first. */
  const deadline = (socket: Socket, ms: number) => {
    clearTimeout(deadlines.get(socket));
    deadlines.set(socket, setTimeout(() => drop(socket), ms));
  };
  const clear = (socket: Socket) => {
    clearTimeout(deadlines.get(socket));
    deadlines.delete(socket);
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const socket = req.socket;
    clear(socket);
    waiting.delete(socket);
    busy.add(socket);
    let reserved = 0;
    const release = () => {
      inflight -= reserved;
      reserved = 0;
    };
    res.on("close", () => {
      release();
      busy.delete(socket);
      if (!socket.destroyed) {
        waiting.add(socket); // idle again: evictable, newest last
        deadline(socket, lim.idleTimeoutMs);
      }
    });
    const declared = Number(req.headers["content-length"] ?? "0");
    if (!Number.isFinite(declared) || declared < 0) return plain(res, 400, "bad Content-Length", true);
    if (declared > lim.maxBodyBytes) {
      return plain(res, 413, `bad AdmissionReview: the body is larger than ${lim.maxBodyBytes} bytes`, true);
    }
    // A chunked body may grow up to the limit: reserve that much.
    const want = req.headers["content-length"] !== undefined ? declared : lim.maxBodyBytes;
    if (inflight + want > lim.maxInflightBytes) {
      return plain(res, 503, "NICO's webhook is busy reading other requests; try again", true);
    }
    inflight += want;
    reserved = want;

    const chunks: Uint8Array[] = [];
    let size = 0;
    const body = await new Promise<Uint8Array<ArrayBuffer> | string>((resolve) => {
      const timer = setTimeout(() => resolve("timeout"), lim.bodyTimeoutMs);
      const done = (v: Uint8Array<ArrayBuffer> | string) => {
        clearTimeout(timer);
        resolve(v);
      };
      req.on("data", (chunk: Uint8Array) => {
        size += chunk.length;
        if (size > want) {
          req.removeAllListeners("data");
          done("too large");
        } else chunks.push(chunk);
      });
      req.on("end", () => {
        const all = new Uint8Array(size);
        let at = 0;
        for (const c of chunks) {
          all.set(c, at);
          at += c.length;
        }
        done(all);
      });
      req.on("error", () => done("aborted"));
      req.on("close", () => done("aborted"));
    });
    chunks.length = 0;
    if (body === "timeout") return plain(res, 408, `the body did not arrive within ${lim.bodyTimeoutMs} ms`, true);
    if (body === "too large") {
      return plain(res, 413, `bad AdmissionReview: the body is larger than ${lim.maxBodyBytes} bytes`, true);
    }
    if (typeof body === "string") return void res.destroy();

    const headers = new Headers();
    for (const [k, v] of Object.entries(req.headers)) {
      if (typeof v === "string") headers.set(k, v);
      else if (Array.isArray(v)) { for (const x of v) headers.append(k, x); }
    }
    const method = req.method ?? "GET";
    const url = `https://${a.hostname}${req.url ?? "/"}`;
    let response: Response;
    try {
      const hasBody = method !== "GET" && method !== "HEAD";
      response = await a.fetch(new Request(url, { method, headers, ...(hasBody ? { body } : {}) }));
    } catch (err) {
      return plain(res, 500, `NICO's webhook failed: ${errorMessage(err)}`);
    }
    const out = new Uint8Array(await response.arrayBuffer());
    const outHeaders: Record<string, string> = {};
    response.headers.forEach((v, k) => (outHeaders[k] = v));
    outHeaders["content-length"] = String(out.length);
    res.writeHead(response.status, outHeaders);
    res.end(out);
  };

  const server = https.createServer({
    cert: a.pair.certPem,
    key: a.pair.keyPem,
    handshakeTimeout: lim.headerTimeoutMs,
    ...(a.clientCaPem ? { ca: a.clientCaPem, requestCert: true, rejectUnauthorized: true } : {}),
  }, (req, res) => void handle(req, res));
  server.maxConnections = 2 * lim.maxConnections;
  server.keepAliveTimeout = lim.idleTimeoutMs;
  server.on("secureConnection", (socket: Socket) => {
    open.add(socket);
    waiting.add(socket);
    deadline(socket, lim.headerTimeoutMs);
    if (open.size > lim.maxConnections) {
      const oldest = waiting.values().next().value;
      if (oldest && oldest !== socket) deadline(oldest, 0);
      else socket.destroy();
    }
    socket.on("close", () => {
      open.delete(socket);
      waiting.delete(socket);
      clear(socket);
      busy.delete(socket);
    });
  });
  server.on("tlsClientError", () => {});
  server.on("clientError", (_err: Error, socket: Socket) => socket.destroy());

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(a.port, a.hostname, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;

  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // Idle connections go now; busy ones when their answer is sent, or after the body timeout.
      const closeIdle = () => {
        for (const socket of open) if (!busy.has(socket)) socket.destroy();
      };
      closeIdle();
      const idle = setInterval(closeIdle, 50);
      const force = setTimeout(() => {
        for (const socket of open) socket.destroy();
      }, lim.bodyTimeoutMs);
      await closed;
      clearTimeout(force);
      clearInterval(idle);
      for (const t of deadlines.values()) clearTimeout(t);
      deadlines.clear();
    })();
    return stopping;
  };
  return {
    port,
    connections: () => open.size,
    setCertificate(pair) {
      server.setSecureContext({
        cert: pair.certPem,
        key: pair.keyPem,
        ...(a.clientCaPem ? { ca: a.clientCaPem } : {}),
      });
      return Promise.resolve();
    },
    stop,
  };
}
