/**
 * `nico run`: the controllers (on the leader) and, on every replica, the
 * caches, the admission webhook, /metrics, /healthz and /readyz.
 *
 * @module
 */

import { clusterController } from "../controllers/cluster/controller.ts";
import { clusterSettings } from "../controllers/cluster/settings.ts";
import { detectNioGeneration, servedNioResources } from "./niogen.ts";
import { missingNioResources, nioMissingMessage } from "../core/contract/nioinstall.ts";
import type { NioGeneration } from "../core/contract/nio.ts";
import { installCrd } from "../crds/install.ts";
import { type EventRecorder, eventRecorder } from "../lib/events.ts";
import { KubeClient } from "../lib/kube/client.ts";
import { LeaderFence, runLeaderElection } from "../lib/leader.ts";
import { Metrics } from "../lib/metrics.ts";
import { sleep } from "../lib/runtime/sleep.ts";
import { errorMessage, jsonLogger, type Logger, type LogLevel, textLogger } from "../lib/runtime/log.ts";
import { OptionsError, parseRunOptions, type RunOptions, usage, workloadWatching } from "./options.ts";
import { runWebhookCertificates } from "../webhooks/certificates.ts";
import { startWebhook, webhookNames } from "./webhook.ts";
import { watchUnowned } from "../controllers/shards.ts";
import { Informer } from "../lib/runtime/informer.ts";
import { KUBERNETES_CLUSTERS, type KubernetesCluster } from "../crds/kubernetescluster.ts";
import { DEFAULT_SHARD, namedShard, shardLeaseName } from "../core/contract/shards.ts";
import { parseHostPolicy } from "../lib/git/hosts.ts";
import type { WebhookServer } from "../webhooks/server.ts";
import type { HttpServer } from "../lib/http/server.ts";
import { serveProbes } from "./probes.ts";
import { ownAddresses, publicRoots } from "./trust.ts";
import denoJson from "../deno.json" with { type: "json" };

export const USER_AGENT = `nico/${denoJson.version}`;

/** A logger in the chosen format: JSON lines, or `time level message key=value`. */
export function makeLogger(level: LogLevel, format: "json" | "text"): Logger {
  return format === "json" ? jsonLogger({ level }) : textLogger({ level });
}

/** The options of `nico run`, or the exit code when there is nothing to run (`--help`, or bad options). */
function optionsOrExit(args: string[]): RunOptions | number {
  if (args.includes("--help") || args.includes("-h")) {
    console.log(usage());
    return 0;
  }
  try {
    return parseRunOptions(args, Deno.env.toObject());
  } catch (err) {
    if (err instanceof OptionsError) {
      console.error(`nico run: ${err.message}`);
      return 2;
    }
    throw err;
  }
}

/** The client of the management cluster, from the kubeconfig and the rate limits chosen. */
function loadClient(o: RunOptions, log: Logger): KubeClient {
  return KubeClient.load(o.kubeconfig, {
    userAgent: USER_AGENT,
    fieldManager: "nico",
    context: o.context,
    allowInsecure: o.allowInsecureKubeconfig,
    rateLimit: { qps: o.kubeQps, burst: o.kubeBurst },
    retries429: o.kubeRetries,
    onThrottle: (t) => t.source === "server" && log.info("the API server asked NICO to slow down (429)", { ...t }),
  });
}

/** What one running replica holds: the steps of {@link run} share it, and shutdown stops it. */
interface Replica {
  o: RunOptions;
  log: Logger;
  /** The plain client: the webhook and the leader election use it. */
  client: KubeClient;
  /** The client that writes as the leader: it refuses once the fence no longer holds. */
  writer: KubeClient;
  /** Aborted on SIGTERM/SIGINT (or the caller's signal), and at shutdown. */
  stop: AbortController;
  metrics: Metrics;
  identity: string;
  fence: LeaderFence;
  recorder: EventRecorder;
  parts: ReturnType<typeof clusterController>;
  /** Whether this replica leads now (always, without leader election). */
  leading: boolean;
  /** The admission webhook, once it serves. */
  webhook?: WebhookServer | undefined;
  /** Every cluster, whatever its shard: admission reads them (the controller's cache holds its shard's only). */
  allClusters?: Informer<KubernetesCluster> | undefined;
  /** The webhook and its certificates, waited for at shutdown. */
  background: Promise<unknown>[];
}

/** Builds the controllers and starts the caches (on every replica: the webhook reads them, a standby takes over at once). */
function startReplica(
  o: RunOptions,
  client: KubeClient,
  log: Logger,
  stop: AbortController,
  nio: NioGeneration,
  nioMissing: string[],
): Replica {
  const metrics = new Metrics();
  const identity = o.identity ?? `${Deno.hostname()}-${crypto.randomUUID().slice(0, 6)}`;
  // Fencing: everything that writes as the leader goes through `writer`, which refuses once the
  // renew deadline passed. The webhook and the leader election itself use the plain client.
  const fence = new LeaderFence();
  // Each write the fence lets through is logged at debug: one sent by a process stopped right after the check
  // reaches the API server when the process resumes, and the log shows it was let through in time.
  const writer = o.leaderElect
    ? client.with({
      mayWrite: () => fence.holds(),
      onWrite: (method, path) => log.debug("write let through the fence", { method, path }),
    })
    : client;
  const recorder = eventRecorder(
    writer,
    "nico.homystack.com/nico",
    identity,
    (err) => log.debug("event not recorded", { error: errorMessage(err) }),
  );
  const parts = clusterController({
    client: writer,
    recorder,
    log,
    // The flags whole (each setting takes the flag of its name), with what NICO found at start.
    settings: clusterSettings({ ...o, nio, nioMissing, shard: namedShard(o.shard) }),
    gitAllowedHosts: parseHostPolicy(o.gitAllowedHosts),
    hooks: metrics.controllerHooks("kubernetescluster"),
    ...(o.workloadConnections ? { workloads: workloadWatching(o, ownAddresses(Deno.env.toObject())) } : {}),
  });
  // Not the informers of NIO resources the API server does not serve: they would fail every 30 s and never sync.
  for (const inf of parts.caches) inf.start(stop.signal);
  const r: Replica = {
    o,
    log,
    client,
    writer,
    stop,
    metrics,
    identity,
    fence,
    recorder,
    parts,
    leading: !o.leaderElect,
    background: [],
  };
  if (o.webhookCertMode !== "off") {
    r.allClusters = new Informer<KubernetesCluster>(client, KUBERNETES_CLUSTERS, {
      logger: log,
      ...(o.namespace ? { namespace: o.namespace } : {}),
    });
    r.allClusters.start(stop.signal);
    serveWebhook(r, writer, r.allClusters);
  }
  return r;
}

/** The admission webhook and, when self-signed, the certificates it serves with (renewed by the leader). */
function serveWebhook(r: Replica, writer: KubeClient, allClusters: Informer<KubernetesCluster>): void {
  const { o, log, stop } = r;
  const serving = startWebhook(o, r.client, r.parts.informers, allClusters, r.parts.caches, r.metrics, log, stop.signal)
    .then((w) => (r.webhook = w));
  r.background.push(serving);
  if (o.webhookCertMode !== "self-signed") return;
  r.background.push(
    runWebhookCertificates({
      // Register the fail-closed webhook only once this replica serves (at most 10 s of waiting).
      beforeRegister: () => Promise.race([serving.then(() => {}), sleep(10_000, stop.signal)]),
      client: writer,
      namespace: o.leaseNamespace,
      ...webhookNames(o),
      webhook: o.webhookUrl
        ? { url: o.webhookUrl }
        : { service: { namespace: o.leaseNamespace, name: o.webhookService } },
      leader: () => r.leading,
      log,
      signal: stop.signal,
    }).catch((err) => log.error("webhook certificates stopped", { error: errorMessage(err) })),
  );
}

/** On the default shard's leader: Events on clusters labelled for a shard nobody runs (controllers/shards.ts). */
async function lookForUnowned(r: Replica, signal: AbortSignal): Promise<void> {
  if (namedShard(r.o.shard) !== undefined) return;
  await watchUnowned({
    client: r.writer,
    recorder: r.recorder,
    log: r.log,
    leaseNamespace: r.o.leaseNamespace,
    leaseName: r.o.leaseName,
    namespace: r.o.namespace,
    intervalMs: r.o.shardCheckInterval,
    onCount: (n) => r.metrics.unowned.set(n),
  }, signal);
}

/** Runs the controllers: at once, or while this replica holds the Lease. Answers the exit code (1: lease lost). */
async function lead(r: Replica): Promise<number> {
  const { o } = r;
  const leaseName = shardLeaseName(o.leaseName, namedShard(o.shard));
  if (!o.leaderElect) {
    await r.parts.controller.run(r.stop.signal);
    return 0;
  }
  // 0 until this replica leads: with every replica a standby, `sum(leader_election_master_status) == 0` (NicoNoLeader)
  // needs their zeros, not silence.
  r.metrics.leader.set({ name: leaseName }, 0);
  const outcome = await runLeaderElection({
    client: r.client,
    namespace: o.leaseNamespace,
    name: leaseName,
    identity: r.identity,
    log: r.log,
    fence: r.fence,
    onStartedLeading: async (signal) => {
      r.leading = true;
      r.metrics.leader.set({ name: leaseName }, 1);
      await Promise.all([r.parts.controller.run(signal), lookForUnowned(r, signal)]);
    },
    onStoppedLeading: () => {
      r.leading = false;
      r.metrics.leader.set({ name: leaseName }, 0);
      r.parts.memory.forgetAll(); // another replica reconciles the clusters now: nothing of them stays behind
    },
  }, r.stop.signal);
  return outcome === "lost" ? 1 : 0;
}

/** Stops everything the replica started, then flushes the Events and closes the client. */
async function shutDown(r: Replica, servers: HttpServer[]): Promise<void> {
  r.stop.abort();
  await Promise.allSettled(r.background);
  await r.webhook?.stop();
  await Promise.all(Object.values(r.parts.informers).map((i) => i.stop()));
  await r.allClusters?.stop();
  await r.parts.revisions?.stop();
  await r.parts.workloads?.closeAll();
  await r.parts.memory.closeEtcd();
  await r.recorder.flush();
  await Promise.all(servers.map((s) => s.finished));
  await r.client.close();
}

/** Entry point of `nico run`; answers the exit code. */
export async function run(args: string[], signal?: AbortSignal): Promise<number> {
  const o = optionsOrExit(args);
  if (typeof o === "number") return o;
  const log = makeLogger(o.logLevel, o.logFormat);
  const roots = publicRoots(Deno.env.toObject());
  if (roots) {
    log.info(
      `TLS to workload clusters and etcd also trusts public root CAs (${roots}); see docs/operations.md, Security`,
    );
  }
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
    client = loadClient(o, log);
  } catch (err) {
    console.error(`nico run: ${errorMessage(err)}`);
    return 2;
  }
  if (o.installCrds) await installCrd(client);
  const nio = await detectNioGeneration(client, o.nioGeneration);
  const nioMissing = missingNioResources(nio.generation, await servedNioResources(client));
  const r = startReplica(o, client, log, stop, nio.generation, nioMissing);
  const servers = await serveProbes(
    o,
    r.metrics,
    r.parts.informers,
    () =>
      r.parts.caches.every((i) => i.hasSynced()) && (r.allClusters?.hasSynced() ?? true) &&
      (o.webhookCertMode === "off" || (r.webhook?.ready() ?? false)),
    stop.signal,
    log,
  );
  log.info("nico started", {
    version: denoJson.version,
    namespace: o.namespace ?? "(all)",
    leaderElect: o.leaderElect,
    shard: namedShard(o.shard) ?? DEFAULT_SHARD,
    identity: r.identity,
    nio: `${nio.generation} (${nio.source})`,
  });
  if (nioMissing.length) {
    log.error("NIO is not fully installed", {
      missing: nioMissing.join(", "),
      what: nioMissingMessage(nio.generation, nioMissing),
    });
  }

  let code = 0;
  try {
    code = await lead(r);
  } finally {
    await shutDown(r, servers);
    if (!signal) {
      Deno.removeSignalListener("SIGTERM", onSignal);
      Deno.removeSignalListener("SIGINT", onSignal);
    }
  }
  log.info("nico stopped", { code });
  return code;
}
