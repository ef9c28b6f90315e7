/**
 * The webhook's HTTPS listener. `Deno.serve` takes the certificate once, so
 * a renewed certificate is picked up by a new listener on the same port:
 * the new pair is checked first (a bad one leaves the old listener
 * serving), then the old listener stops accepting, the new one binds (a
 * few milliseconds later), and requests in flight on the old one finish.
 * (Overlapping listeners would need SO_REUSEPORT, which Deno allows for TLS
 * only under `--unstable-net`.)
 *
 * @module
 */
import type { KeyPair } from "../lib/pki.ts";
import { errorMessage, type Logger, silentLogger } from "../lib/runtime/log.ts";
import { sleep } from "../lib/runtime/sleep.ts";
import { staticTls, type TlsProvider } from "./tls.ts";

/** Options of {@link startWebhookServer}. */
export interface WebhookServerOptions {
  /** Anything with a fetch handler: the app of `webhookApp`. */
  app: { fetch: (request: Request) => Response | Promise<Response> };
  /** Address to listen on (default `0.0.0.0`; `127.0.0.1` in tests). */
  hostname?: string;
  /** Port (default 9443; 0 picks a free one). */
  port?: number;
  /** A fixed certificate, or a provider asked again every `reloadIntervalMs`. */
  tls: KeyPair | TlsProvider;
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
  /** Loads the certificate again and switches to it when it changed; answers whether it did. */
  reload(): Promise<boolean>;
  /** Stops listening and waits for requests in flight. */
  stop(): Promise<void>;
}

function isProvider(tls: KeyPair | TlsProvider): tls is TlsProvider {
  return typeof (tls as TlsProvider).load === "function";
}

/** Loads the first certificate, retrying while it is not there yet (a new replica before the leader wrote it). */
async function firstLoad(provider: TlsProvider, log: Logger, signal?: AbortSignal): Promise<KeyPair> {
  let delay = 500;
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
      delay = Math.min(delay * 2, 10_000);
    }
  }
}

/** Throws when Deno's TLS stack refuses the pair (unreadable, or a key that does not match). */
function checkPair(pair: KeyPair): void {
  try {
    Deno.listenTls({ hostname: "127.0.0.1", port: 0, cert: pair.certPem, key: pair.keyPem }).close();
  } catch (err) {
    throw new Error(`the renewed webhook certificate is unusable: ${errorMessage(err)}`);
  }
}

/** Binds again while the old listener lets go of the port (usually at once). */
async function bindAgain(bind: () => Deno.HttpServer<Deno.NetAddr>): Promise<Deno.HttpServer<Deno.NetAddr>> {
  for (let attempt = 0;; attempt++) {
    try {
      return bind();
    } catch (err) {
      if (!(err instanceof Deno.errors.AddrInUse) || attempt >= 200) throw err;
      await sleep(10);
    }
  }
}

/** Starts the HTTPS server; resolves once it listens. */
export async function startWebhookServer(opts: WebhookServerOptions): Promise<WebhookServer> {
  const log = opts.log ?? silentLogger;
  const provider = isProvider(opts.tls) ? opts.tls : staticTls(opts.tls);
  const hostname = opts.hostname ?? "0.0.0.0";
  const handler = (req: Request) => opts.app.fetch(req);

  const listen = (pair: KeyPair, port: number) =>
    Deno.serve({
      hostname,
      port,
      cert: pair.certPem,
      key: pair.keyPem,
      onListen: () => {},
      onError: (err) => new Response(`NICO's webhook failed: ${errorMessage(err)}`, { status: 500 }),
    }, handler);

  let pair = await firstLoad(provider, log, opts.signal);
  let server = listen(pair, opts.port ?? 9443);
  const port = server.addr.port;
  log.info("webhook listening", { hostname, port, certificate: provider.describe() });

  let stopped = false;
  let switching: Promise<boolean> | undefined;
  const reload = (): Promise<boolean> => {
    switching ??= (async () => {
      const next = await provider.load();
      if (stopped || (next.certPem === pair.certPem && next.keyPem === pair.keyPem)) return false;
      checkPair(next); // throws on a bad certificate or key: the old listener stays
      const closing = server.shutdown(); // stops accepting at once; requests in flight finish
      try {
        server = await bindAgain(() => listen(next, port));
        pair = next;
      } catch (err) {
        server = await bindAgain(() => listen(pair, port));
        throw err;
      } finally {
        await closing;
      }
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

  const stop = async () => {
    if (stopped) return;
    stopped = true;
    clearTimeout(timer);
    await switching?.catch(() => false);
    await server.shutdown();
  };
  opts.signal?.addEventListener("abort", () => void stop(), { once: true });
  return { hostname, port, reload, stop };
}
