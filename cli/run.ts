/**
 * `nico run`: the controllers (on the leader) and, on every replica, the
 * caches, the admission webhook, /metrics, /healthz and /readyz.
 *
 * @module
 */

import { clusterController } from "../controllers/cluster/controller.ts";
import { detectNioGeneration } from "./niogen.ts";
import { observeClusters } from "../controllers/cluster/metrics.ts";
import { installCrd } from "../crds/install.ts";
import { eventRecorder } from "../lib/events.ts";
import { KubeClient } from "../lib/kube/client.ts";
import { LeaderFence, runLeaderElection } from "../lib/leader.ts";
import { Metrics } from "../lib/metrics.ts";
import { sleep } from "../lib/runtime/sleep.ts";
import { errorMessage, jsonLogger, type Logger, type LogLevel, textLogger } from "../lib/runtime/log.ts";
import { listenOn, OptionsError, parseRunOptions, type RunOptions, usage } from "./options.ts";
import type { ClusterInformers } from "../controllers/cluster/reconciler.ts";
import { runWebhookCertificates, serviceDnsNames } from "../webhooks/certificates.ts";
import { webhookApp } from "../webhooks/app.ts";
import { informerLookup } from "../webhooks/lookup.ts";
import { subjectAccessReviews } from "../webhooks/authorize.ts";
import { parseHostPolicy } from "../lib/git/hosts.ts";
import { startWebhookServer, type WebhookServer } from "../webhooks/server.ts";
import { fileTls, secretTls } from "../webhooks/tls.ts";
import { type HttpServer, serveHttp } from "../lib/http/server.ts";
import denoJson from "../deno.json" with { type: "json" };

export const USER_AGENT = `nico/${denoJson.version}`;

/** A logger in the chosen format: JSON lines, or `time level message key=value`. */
export function makeLogger(level: LogLevel, format: "json" | "text"): Logger {
  return format === "json" ? jsonLogger({ level }) : textLogger({ level });
}

/** Serves /metrics, /healthz and /readyz (one server when both addresses are equal); /readyz is red while either cannot accept. */
async function serveProbes(
  o: RunOptions,
  metrics: Metrics,
  informers: ClusterInformers,
  ready: () => boolean,
  signal: AbortSignal,
  logger: Logger,
) {
  const servers: HttpServer[] = [];
  const handler = async (req: Request): Promise<Response> => {
    const path = new URL(req.url).pathname;
    if (path === "/healthz") return new Response("ok\n");
    if (path === "/readyz") {
      const synced = Object.values(informers).every((i) => i.hasSynced()) && ready() &&
        servers.every((s) => s.healthy());
      return new Response(synced ? "ok\n" : "caches not synced\n", { status: synced ? 200 : 503 });
    }
    if (path === "/metrics") {
      observeClusters(metrics, informers.clusters.list());
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

/** Names the webhook's serving certificate covers: the Service's, or the host of --webhook-url. */
export function webhookNames(
  o: Pick<RunOptions, "webhookUrl" | "webhookService" | "leaseNamespace">,
): { dnsNames: string[]; ipAddresses: string[] } {
  if (!o.webhookUrl) return { dnsNames: serviceDnsNames(o.webhookService, o.leaseNamespace), ipAddresses: [] };
  const host = new URL(o.webhookUrl).hostname.replace(/^\[|\]$/g, "");
  const isIp = /^[\d.]+$/.test(host) || host.includes(":");
  return isIp ? { dnsNames: [], ipAddresses: [host] } : { dnsNames: [host], ipAddresses: [] };
}

/** The admission webhook on this replica, counted in the metrics; resolves once it serves. */
async function startWebhook(
  o: RunOptions,
  client: KubeClient,
  informers: ClusterInformers,
  metrics: Metrics,
  log: Logger,
  signal: AbortSignal,
): Promise<WebhookServer> {
  const app = webhookApp({
    lookup: informerLookup({ machines: informers.machines, configs: informers.configs, clusters: informers.clusters }),
    access: subjectAccessReviews(client),
    gitAllowedHosts: parseHostPolicy(o.gitAllowedHosts),
    ...(o.defaultGitRepo ? { defaultGitRepo: o.defaultGitRepo } : {}),
    metrics,
    log,
  });
  const tls = o.webhookCertMode === "cert-manager"
    ? fileTls(`${o.webhookCertDir}/tls.crt`, `${o.webhookCertDir}/tls.key`)
    : secretTls(client, o.leaseNamespace);
  const clientCaPem = o.webhookClientCa ? await Deno.readTextFile(o.webhookClientCa) : undefined;
  const server = await startWebhookServer({
    app,
    ...listenOn(o.webhookAddr),
    tls,
    ...(clientCaPem ? { clientCaPem } : {}),
    log,
    signal,
  });
  log.info("webhook serving", {
    address: `${server.hostname}:${server.port}`,
    certificates: o.webhookCertMode,
    clientCertificates: clientCaPem ? "required" : "not asked",
  });
  return server;
}

/** Entry point of `nico run`; answers the exit code. */
export async function run(args: string[], signal?: AbortSignal): Promise<number> {
  if (args.includes("--help") || args.includes("-h")) {
    console.log(usage());
    return 0;
  }
  let o: RunOptions;
  try {
    o = parseRunOptions(args, Deno.env.toObject());
  } catch (err) {
    if (err instanceof OptionsError) {
      console.error(`nico run: ${err.message}`);
      return 2;
    }
    throw err;
  }
  const log = makeLogger(o.logLevel, o.logFormat);
  const stop = new AbortController();
  const onSignal = () => {
    log.info("shutting down", {});
    stop.abort();
  };
  if (signal) signal.addEventListener("abort", onSignal, { once: true });
  else {
    Deno.addSignalListener("SIGTERM", onSignal);
    Deno.addSignalListener("SIGINT", onSignal);
  }

  let client: KubeClient;
  try {
    client = KubeClient.load(o.kubeconfig, {
      userAgent: USER_AGENT,
      fieldManager: "nico",
      context: o.context,
      allowInsecure: o.allowInsecureKubeconfig,
      rateLimit: { qps: o.kubeQps, burst: o.kubeBurst },
      retries429: o.kubeRetries,
      onThrottle: (t) => t.source === "server" && log.info("the API server asked NICO to slow down (429)", { ...t }),
    });
  } catch (err) {
    console.error(`nico run: ${errorMessage(err)}`);
    return 2;
  }
  if (o.installCrds) await installCrd(client);
  const nio = await detectNioGeneration(client, o.nioGeneration);

  const metrics = new Metrics();
  const identity = o.identity ?? `${Deno.hostname()}-${crypto.randomUUID().slice(0, 6)}`;
  // Fencing: everything that writes as the leader goes through `writer`, which refuses once the
  // renew deadline passed. The webhook and the leader election itself use the plain client.
  const fence = new LeaderFence();
  const writer = o.leaderElect ? client.with({ mayWrite: () => fence.holds() }) : client;
  const recorder = eventRecorder(
    writer,
    "nico.homystack.com/nico",
    identity,
    (err) => log.debug("event not recorded", { error: errorMessage(err) }),
  );
  const { controller, informers, revisions, workloads } = clusterController({
    client: writer,
    recorder,
    log,
    namespace: o.namespace,
    workers: o.workers,
    defaultGitRepo: o.defaultGitRepo,
    nodeTimeoutMs: o.nodeTimeout,
    resolveRefs: o.resolveRefs,
    refPollIntervalMs: o.refPollInterval,
    gitAllowedHosts: parseHostPolicy(o.gitAllowedHosts),
    hooks: metrics.controllerHooks("kubernetescluster"),
    nio: nio.generation,
    ...(o.workloadConnections
      ? { workloads: { maxOpen: o.maxWorkloadConnections, probeIntervalMs: o.workloadProbeInterval } }
      : {}),
  });
  // Every replica keeps the caches warm: the webhook reads them, and a standby takes over at once.
  for (const inf of Object.values(informers)) inf.start(stop.signal);
  let leading = !o.leaderElect;
  let webhook: WebhookServer | undefined;
  const background: Promise<unknown>[] = [];
  if (o.webhookCertMode !== "off") {
    const serving = startWebhook(o, client, informers, metrics, log, stop.signal).then((w) => (webhook = w));
    background.push(serving);
    if (o.webhookCertMode === "self-signed") {
      background.push(
        runWebhookCertificates({
          // Register the fail-closed webhook only once this replica serves (at most 10 s of waiting).
          beforeRegister: () => Promise.race([serving.then(() => {}), sleep(10_000, stop.signal)]),
          client: writer,
          namespace: o.leaseNamespace,
          ...webhookNames(o),
          webhook: o.webhookUrl
            ? { url: o.webhookUrl }
            : { service: { namespace: o.leaseNamespace, name: o.webhookService } },
          leader: () => leading,
          log,
          signal: stop.signal,
        }).catch((err) => log.error("webhook certificates stopped", { error: errorMessage(err) })),
      );
    }
  }
  const servers = await serveProbes(
    o,
    metrics,
    informers,
    () => o.webhookCertMode === "off" || (webhook?.ready() ?? false),
    stop.signal,
    log,
  );
  log.info("nico started", {
    version: denoJson.version,
    namespace: o.namespace ?? "(all)",
    leaderElect: o.leaderElect,
    identity,
    nio: `${nio.generation} (${nio.source})`,
  });

  let code = 0;
  try {
    if (o.leaderElect) {
      const outcome = await runLeaderElection({
        client,
        namespace: o.leaseNamespace,
        name: o.leaseName,
        identity,
        log,
        fence,
        onStartedLeading: async (signal) => {
          leading = true;
          metrics.leader.set({ name: o.leaseName }, 1);
          await controller.run(signal);
        },
        onStoppedLeading: () => {
          leading = false;
          metrics.leader.set({ name: o.leaseName }, 0);
        },
      }, stop.signal);
      if (outcome === "lost") code = 1;
    } else {
      await controller.run(stop.signal);
    }
  } finally {
    stop.abort();
    await Promise.allSettled(background);
    await webhook?.stop();
    await Promise.all(Object.values(informers).map((i) => i.stop()));
    await revisions?.stop();
    await workloads?.closeAll();
    await recorder.flush();
    await Promise.all(servers.map((s) => s.finished));
    await client.close();
    if (!signal) {
      Deno.removeSignalListener("SIGTERM", onSignal);
      Deno.removeSignalListener("SIGINT", onSignal);
    }
  }
  log.info("nico stopped", { code });
  return code;
}
