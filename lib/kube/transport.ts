/**
 * Connections to the API server: Deno HTTP clients carrying the kubeconfig's
 * CA, client certificate and proxy.
 *
 * @module
 */
import type { KubeConfig } from "./kubeconfig.ts";

/**
 * One HTTP client per kubeconfig and client certificate (exec plugins may
 * rotate certificates), HTTP/1.1 only so every watch has its own connection.
 */
export class Transport {
  #clients = new Map<string, Deno.HttpClient>();
  constructor(readonly kc: KubeConfig) {}

  /** The HTTP client for this client certificate (or none), made on first use. */
  client(cert: { cert: string; key: string } | undefined): Deno.HttpClient {
    const key = cert ? cert.cert : "";
    let c = this.#clients.get(key);
    if (!c) {
      c = Deno.createHttpClient({
        caCerts: this.kc.caCerts,
        http2: false,
        ...(this.kc.proxyUrl ? { proxy: { url: this.kc.proxyUrl } } : {}),
        ...(cert ?? {}),
      });
      this.#clients.set(key, c);
    }
    return c;
  }

  /** Closes every connection; later requests open new ones. */
  close(): void {
    for (const c of this.#clients.values()) c.close();
    this.#clients.clear();
  }
}

/** Transports by kubeconfig: every client made from one kubeconfig shares its connections. */
export const transports = new WeakMap<KubeConfig, Transport>();

/** The transport of a kubeconfig, made on first use. */
export function transportOf(kc: KubeConfig): Transport {
  let t = transports.get(kc);
  if (!t) transports.set(kc, t = new Transport(kc));
  return t;
}
