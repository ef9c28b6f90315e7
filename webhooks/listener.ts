/**
 * What the webhook's listeners share: their limits and the small interface
 * `startWebhookServer` drives (a port, a connection count, a certificate
 * switch, a stop).
 *
 * @module
 */
import type { KeyPair } from "../lib/pki.ts";

/** The limits of a webhook listener; each has a default. */
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
  /** Body bytes held at once over all requests (default 8 MiB: two bodies of the largest size). */
  maxInflightBytes?: number;
}

/** The defaults of {@link ServerLimits}. */
export const DEFAULT_LIMITS: Required<ServerLimits> = {
  headerTimeoutMs: 10_000,
  bodyTimeoutMs: 10_000,
  idleTimeoutMs: 60_000,
  maxConnections: 512,
  maxBodyBytes: 3 * 1024 * 1024,
  maxInflightBytes: 8 * 1024 * 1024,
};

/** What a listener is started with. */
export interface ListenerArgs {
  fetch: (request: Request) => Response | Promise<Response>;
  hostname: string;
  port: number;
  pair: KeyPair;
  limits: Required<ServerLimits>;
  /** Require client certificates signed by this CA bundle. */
  clientCaPem?: string | undefined;
}

/** A running listener. */
export interface Listener {
  port: number;
  connections(): number;
  /** Serves `pair` from now on (new connections); throws, keeping the old one, when it cannot. */
  setCertificate(pair: KeyPair): Promise<void>;
  /** Stops accepting, closes idle connections, lets requests in flight finish (at most the body timeout). */
  stop(): Promise<void>;
}
