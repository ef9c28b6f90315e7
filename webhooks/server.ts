/**
 * The webhook's HTTPS listener, built to stay up when someone other than
 * the API server talks to it (a fail-closed webhook that dies blocks every
 * cluster write). On `node:https`, whose knobs Deno implements, plus NICO's
 * own per-connection deadlines where Deno's version does not enforce
 * node's (`headersTimeout` is not):
 *
 * - a TLS handshake and the request headers must arrive within
 *   `headerTimeoutMs` of connecting; the next request's headers within
 *   `idleTimeoutMs` of the previous answer (keep-alive);
 * - the body must be complete within `bodyTimeoutMs` of the headers;
 * - at most `maxConnections` connections: past that, the oldest connection
 *   that has not sent a request yet is closed to make room (held-open
 *   connections cannot lock the API server out), and past twice that, new
 *   connections are refused;
 * - at most `maxBodyBytes` per body (413) and `maxInflightBytes` over all
 *   bodies being read or answered (503, the API server retries).
 *
 * HTTP/1.1 only: the API server falls back to it when the webhook does not
 * offer HTTP/2. A renewed certificate is switched in place
 * (`setSecureContext`), without closing the listener.
 *
 * @module
 */
import https from "node:https";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import type { AddressInfo } from "node:net";
import { certInfo, type KeyPair } from "../lib/pki.ts";
import { errorMessage, type Logger, silentLogger } from "../lib/runtime/log.ts";
import { sleep } from "../lib/runtime/sleep.ts";
import { staticTls, type TlsProvider } from "./tls.ts";

/** The limits of {@link startWebhookServer}; each has a default. */
export interface ServerLimits {
  /** TLS handshake plus request headers, from connecting (default 10 s). */
  headerTimeoutMs?: number;
  /** The whole body, from the end of the headers (default 10 s; the API server gives up after 10 s at most). */
  bodyTimeoutMs?: number;
  /** A kept-alive connection with no new request (default 60 s). */
  idleTimeoutMs?: number;
  /** Open connections before idle ones are evicted (default 512; the API server needs a few dozen). */
  maxConnections?: number;
  /** Largest body (default 3 MiB, the API server's own request limit). */
  maxBodyBytes?: number;
  /** Body bytes held at once over all requests (default 16 MiB; each byte costs a few more while parsed). */
  maxInflightBytes?: number;
}

/** Options of {@link startWebhookServer}. */
export interface WebhookServerOptions extends ServerLimits {
  /** Anything with a fetch handler: the app of `webhookApp`. */
  app: { fetch: (request: Request) => Response | Promise<Response> };
  /** Address to listen on (default `0.0.0.0`; `127.0.0.1` in tests). */
  hostname?: string;
  /** Port (default 9443; 0 picks a free one). */
  port?: number;
  /** A fixed certificate, or a provider asked again every `reloadIntervalMs`. */
  tls: KeyPair | TlsProvider;
  /** CA bundle (PEM) clients must present a certificate of (`--webhook-client-ca`); default: none asked. */
  clientCaPem?: string;
  /** How often a provider is asked for a renewed certificate (default 60 s). */
  reloadIntervalMs?: number;
  log?: Logger;
  /** Aborting it stops the server. */
  signal?: AbortSignal;
}

/** A running webhook server. */
export interface WebhookServer {
  hostname: string;
  port: number;
  /** Open connections now. */
  connections(): number;
  /** Whether it listens with a certificate that is valid now (for /readyz). */
  ready(): boolean;
  /** Loads the certificate again and switches to it when it changed; answers whether it did. */
  reload(): Promise<boolean>;
  /** Stops listening, closes idle connections and waits for requests in flight (at most `bodyTimeoutMs`). */
  stop(): Promise<void>;
}

/** The defaults of {@link ServerLimits}. */
export const DEFAULT_LIMITS: Required<ServerLimits> = {
  headerTimeoutMs: 10_000,
  bodyTimeoutMs: 10_000,
  idleTimeoutMs: 60_000,
  maxConnections: 512,
  maxBodyBytes: 3 * 1024 * 1024,
  maxInflightBytes: 16 * 1024 * 1024,
};

function isProvider(tls: KeyPair | TlsProvider): tls is TlsProvider {
  return typeof (tls as TlsProvider).load === "function";
}

/** Loads the first certificate, retrying while it is not there yet (a new replica before the leader wrote it). */
async function firstLoad(provider: TlsProvider, log: Logger, signal?: AbortSignal): Promise<KeyPair> {
  let delay = 200;
  while (true) {
    try {
      return await provider.load();
    } catch (err) {
      if (signal?.aborted) throw err;
      log.info("waiting for the webhook certificate", {
        source: provider.describe(),
        error: errorMessage(err),
        retryInMs: delay,
      });
      await sleep(delay, signal);
      if (signal?.aborted) throw new Error("stopped before the webhook certificate was available");
      delay = Math.min(delay * 2, 2_000);
    }
  }
}

/** Throws when the TLS stack refuses the pair (unreadable, or a key that does not match). */
function checkPair(pair: KeyPair): void {
  try {
    Deno.listenTls({ hostname: "127.0.0.1", port: 0, cert: pair.certPem, key: pair.keyPem }).close();
  } catch (err) {
    throw new Error(`the renewed webhook certificate is unusable: ${errorMessage(err)}`);
  }
}

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

/** Starts the HTTPS server; resolves once it listens. */
export async function startWebhookServer(opts: WebhookServerOptions): Promise<WebhookServer> {
  const log = opts.log ?? silentLogger;
  const provider = isProvider(opts.tls) ? opts.tls : staticTls(opts.tls);
  const hostname = opts.hostname ?? "0.0.0.0";
  const lim: Required<ServerLimits> = { ...DEFAULT_LIMITS };
  for (const k of Object.keys(DEFAULT_LIMITS) as (keyof ServerLimits)[]) {
    if (opts[k] !== undefined) lim[k] = opts[k];
  }

  let pair = await firstLoad(provider, log, opts.signal);
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
    const url = `https://${hostname}${req.url ?? "/"}`;
    let response: Response;
    try {
      const hasBody = method !== "GET" && method !== "HEAD";
      response = await opts.app.fetch(new Request(url, { method, headers, ...(hasBody ? { body } : {}) }));
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
    cert: pair.certPem,
    key: pair.keyPem,
    handshakeTimeout: lim.headerTimeoutMs,
    ...(opts.clientCaPem ? { ca: opts.clientCaPem, requestCert: true, rejectUnauthorized: true } : {}),
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
    server.listen(opts.port ?? 9443, hostname, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  log.info("webhook listening", { hostname, port, certificate: provider.describe() });

  let stopped = false;
  let switching: Promise<boolean> | undefined;
  const reload = (): Promise<boolean> => {
    switching ??= (async () => {
      const next = await provider.load();
      if (stopped || (next.certPem === pair.certPem && next.keyPem === pair.keyPem)) return false;
      checkPair(next); // throws on a bad certificate or key: the old one stays
      server.setSecureContext({
        cert: next.certPem,
        key: next.keyPem,
        ...(opts.clientCaPem ? { ca: opts.clientCaPem } : {}),
      });
      pair = next;
      log.info("webhook certificate reloaded", { port, certificate: provider.describe() });
      return true;
    })().finally(() => (switching = undefined));
    return switching;
  };

  let timer: ReturnType<typeof setTimeout> | undefined;
  const every = opts.reloadIntervalMs ?? 60_000;
  const schedule = () => {
    if (stopped || !isProvider(opts.tls) || !(every > 0)) return;
    timer = setTimeout(async () => {
      try {
        await reload();
      } catch (err) {
        log.error("webhook certificate reload failed", { certificate: provider.describe(), error: errorMessage(err) });
      }
      schedule();
    }, every);
  };
  schedule();

  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      stopped = true;
      clearTimeout(timer);
      await switching?.catch(() => false);
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
  opts.signal?.addEventListener("abort", () => void stop(), { once: true });
  const ready = () => {
    if (stopped) return false;
    return Date.now() < certInfo(pair.certPem).notAfter.getTime();
  };
  return { hostname, port, connections: () => open.size, ready, reload, stop };
}
