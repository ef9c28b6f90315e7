/**
 * The webhook's HTTPS server, built to stay up when someone other than the
 * API server talks to it (a fail-closed webhook that dies blocks every
 * cluster write): NICO's one HTTP layer (lib/http/server.ts) with TLS
 * behind its TCP front and the webhook's limits:
 *
 * - the TLS handshake and the request head within `headerTimeoutMs` of
 *   connecting, the next head within `idleTimeoutMs` of the last answer,
 *   the body within `bodyTimeoutMs` of its head, the answer written within
 *   `writeTimeoutMs` (a client that does not read is cut off);
 * - at most `maxConnections` connections before the oldest one that sent
 *   nothing (then idle, then stalled) is closed to make room;
 * - at most `maxBodyBytes` per body (413) and `maxInflightBytes` of bodies
 *   and answers held at once (a small request pushes out large holders,
 *   else 503 and the API server retries).
 *
 * HTTP/1.1 only: the API server falls back to it when the webhook does not
 * offer HTTP/2. With `clientCaPem` the TLS side is `node:tls`, which can ask
 * for client certificates. A provider's certificate is checked again every
 * `reloadIntervalMs`.
 *
 * @module
 */
import { type HttpLimits, serveHttp } from "../lib/http/server.ts";
import { denoTls, nodeTls } from "../lib/http/tls.ts";
import { certInfo, type KeyPair } from "../lib/pki.ts";
import { errorMessage, type Logger, silentLogger } from "../lib/runtime/log.ts";
import { sleep } from "../lib/runtime/sleep.ts";
import { staticTls, type TlsProvider } from "./tls.ts";
import { MAX_BODY_BYTES } from "./paths.ts";

/** The limits of the webhook server; each has a default ({@link DEFAULT_LIMITS}). */
export type ServerLimits = Partial<HttpLimits>;

/** The webhook's defaults: the API server gives up after 10 s at most and sends bodies of 3 MiB at most. */
export const DEFAULT_LIMITS: HttpLimits = {
  headerTimeoutMs: 10_000,
  bodyTimeoutMs: 10_000,
  handlerTimeoutMs: 10_000,
  writeTimeoutMs: 10_000,
  idleTimeoutMs: 60_000,
  maxConnections: 512,
  evictAfterMs: 1_000,
  maxBodyBytes: MAX_BODY_BYTES,
  maxInflightBytes: 8 * 1024 * 1024,
};

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
  /** Whether it accepts connections with a certificate that is valid now (for /readyz). */
  ready(): boolean;
  /** Loads the certificate again and switches to it when it changed; answers whether it did. */
  reload(): Promise<boolean>;
  /** Stops listening, closes idle connections and waits for requests in flight (at most `bodyTimeoutMs`). */
  stop(): Promise<void>;
}

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

/** Starts the HTTPS server; resolves once it listens. */
export async function startWebhookServer(opts: WebhookServerOptions): Promise<WebhookServer> {
  const log = opts.log ?? silentLogger;
  const provider = isProvider(opts.tls) ? opts.tls : staticTls(opts.tls);
  const hostname = opts.hostname ?? "0.0.0.0";
  let pair = await firstLoad(provider, log, opts.signal);
  const listener = await serveHttp({
    ...DEFAULT_LIMITS,
    ...Object.fromEntries(Object.entries(opts).filter(([k, v]) => k in DEFAULT_LIMITS && v !== undefined)),
    fetch: (req: Request) => opts.app.fetch(req),
    hostname,
    port: opts.port ?? 9443,
    tls: opts.clientCaPem ? nodeTls(pair, opts.clientCaPem) : denoTls(pair),
    busyMessage: "NICO's webhook is busy reading other requests; try again",
    onAcceptError: (err) => log.error("webhook accept failed; retrying", { error: errorMessage(err) }),
  });
  const port = listener.port;
  log.info("webhook listening", { hostname, port, certificate: provider.describe() });

  let stopped = false;
  let switching: Promise<boolean> | undefined;
  const reload = (): Promise<boolean> => {
    switching ??= (async () => {
      const next = await provider.load();
      if (stopped || (next.certPem === pair.certPem && next.keyPem === pair.keyPem)) return false;
      checkPair(next); // throws on a bad certificate or key: the old one stays
      await listener.setCertificate(next);
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
      await listener.stop();
    })();
    return stopping;
  };
  opts.signal?.addEventListener("abort", () => void stop(), { once: true });
  const ready = () => !stopped && listener.healthy() && Date.now() < certInfo(pair.certPem).notAfter.getTime();
  return { hostname, port, connections: () => listener.connections(), ready, reload, stop };
}
