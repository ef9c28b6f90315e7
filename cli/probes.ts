/**
 * `/metrics`, `/healthz` and `/readyz` of `nico run`, on every replica.
 *
 * @module
 */
import type { ClusterInformers } from "../controllers/cluster/reconciler.ts";
import { KubeconfigExpiries, observeClusters } from "../controllers/cluster/metrics.ts";
import { type HttpServer, serveHttp } from "../lib/http/server.ts";
import type { Metrics } from "../lib/metrics.ts";
import { errorMessage, type Logger } from "../lib/runtime/log.ts";
import { listenOn, type RunOptions } from "./options.ts";

/**
 * Serves /metrics, /healthz and /readyz (one server when both addresses are equal); /readyz is green once `ready`
 * says so (the caches NICO waits for have synced, the webhook serves) and while both can accept.
 */
export async function serveProbes(
  o: RunOptions,
  metrics: Metrics,
  informers: ClusterInformers,
  ready: () => boolean,
  signal: AbortSignal,
  logger: Logger,
) {
  const servers: HttpServer[] = [];
  const expiries = new KubeconfigExpiries((ns, name) => informers.secrets.get(ns, name));
  const handler = async (req: Request): Promise<Response> => {
    const path = new URL(req.url).pathname;
    if (path === "/healthz") return new Response("ok\n");
    if (path === "/readyz") {
      const synced = ready() && servers.every((s) => s.healthy());
      return new Response(synced ? "ok\n" : "caches not synced\n", { status: synced ? 200 : 503 });
    }
    if (path === "/metrics") {
      observeClusters(metrics, informers.clusters.list(), (c) => expiries.of(c));
      expiries.prune();
      return new Response(await metrics.text(), { headers: { "content-type": metrics.contentType } });
    }
    return new Response("not found\n", { status: 404 });
  };
  // Timeouts and a connection cap, as on the webhook: a client holding sockets cannot starve the probes.
  const log = (err: unknown) => logger.error("probe server accept failed; retrying", { error: errorMessage(err) });
  servers.push(await serveHttp({ ...listenOn(o.healthAddr), signal, fetch: handler, onAcceptError: log }));
  if (o.metricsAddr !== o.healthAddr) {
    servers.push(await serveHttp({ ...listenOn(o.metricsAddr), signal, fetch: handler, onAcceptError: log }));
  }
  return servers;
}
