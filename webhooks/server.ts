/**
 * The webhook's HTTPS server, built to stay up when someone other than the
 * API server talks to it (a fail-closed webhook that dies blocks every
 * cluster write):
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
 * offer HTTP/2. The default listener (listen_deno.ts) reads a body only
 * when it fits under the cap; with `clientCaPem` the listener is
 * `node:https` (listen_node.ts), which can ask for client certificates.
 * A provider's certificate is checked again every `reloadIntervalMs`.
 *
 * @module
 */
import { listenDeno } from "./listen_deno.ts";
import { listenNode } from "./listen_node.ts";
import { DEFAULT_LIMITS, type ServerLimits } from "./listener.ts";
import { certInfo, type KeyPair } from "../lib/pki.ts";
import { errorMessage, type Logger, silentLogger } from "../lib/runtime/log.ts";
import { sleep } from "../lib/runtime/sleep.ts";
import { staticTls, type TlsProvider } from "./tls.ts";

export { DEFAULT_LIMITS, type ServerLimits };

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
  const limits: Required<ServerLimits> = { ...DEFAULT_LIMITS };
  for (const k of Object.keys(DEFAULT_LIMITS) as (keyof ServerLimits)[]) {
    if (opts[k] !== undefined) limits[k] = opts[k];
  }
  let pair = await firstLoad(provider, log, opts.signal);
  const args = {
    fetch: (req: Request) => opts.app.fetch(req),
    hostname,
    port: opts.port ?? 9443,
    pair,
    limits,
    clientCaPem: opts.clientCaPem,
  };
  const listener = opts.clientCaPem ? await listenNode(args) : await listenDeno(args);
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
  const ready = () => !stopped && Date.now() < certInfo(pair.certPem).notAfter.getTime();
  return { hostname, port, connections: () => listener.connections(), ready, reload, stop };
}
