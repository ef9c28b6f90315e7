/**
 * NICO at scale, on the local control plane with the simulated NIO applying
 * instantly (prints figures; not a timed test). See docs/benchmark.md.
 *
 * For each size (`--sizes`, default 20x5 and 200x5), on a fresh control plane
 * with the API server's audit log recording NICO's user only:
 *   1. provisioning: N clusters of M machines created at once → wall time
 *      until every NixosConfiguration exists and until every cluster is Ready;
 *   2. the ceiling: the same Secrets, NixosConfigurations and status writes
 *      made directly by one client, `--concurrency` in flight, no operator
 *      (then again with NICO's extra requests, and with every extra request
 *      of the run, to split the gap);
 *   3. API cost: NICO's requests by verb and resource (audit log), per cluster;
 *   4. idle: NICO's writes and CPU time over `--idle-seconds` of nothing changing;
 *   5. memory: NICO's peak RSS (VmHWM);
 * and on the largest size, with NICO still running:
 *   6. rollout: a gitRepo change through `--rollout-clusters` clusters, with
 *      the simulated NIO taking `--rollout-apply-ms` per apply, against the
 *      minimum the ordering rules allow.
 *
 * NICO runs as a subprocess (`deno run -A main.ts run`), watching all
 * namespaces, as user `nico` (a client certificate in system:masters). The
 * simulated NIO runs here, one per namespace (`--namespaces`); `gitRepo` is a
 * local repository served over HTTP on loopback, so ref resolution works.
 *
 * Run from the repository root:
 *   deno run -A bench/scale.ts [--quick] [--sizes 20x5,200x5] [--cp 1] [--idle-seconds 60]
 *
 * @module
 */
import { parseArgs } from "node:util";
import type { KubernetesCluster } from "../crds/kubernetescluster.ts";
import type { KubeClient, KubeObject } from "../lib/kube/client.ts";
import { NAMESPACES, SECRETS } from "../lib/kube/resources.ts";
import { KUBERNETES_CLUSTERS } from "../crds/kubernetescluster.ts";
import { MACHINES, NIXOS_CONFIGURATIONS } from "../core/nio.ts";
import { CLUSTER_LABEL } from "../core/labels.ts";
import type { Machine, NixosConfiguration } from "../core/nio.ts";
import { type ControlPlane, startControlPlane } from "../testing/envtest/controlplane.ts";
import { freePort, type Guarded, startGuarded } from "../testing/envtest/process.ts";
import { type SimNio, startSimNio } from "../testing/sim-nio.ts";
import { auditFlags, auditPolicy, type AuditRequest, isWrite, readAudit, tally, within } from "./scale/audit.ts";
import { runCeiling, type Templates } from "./scale/ceiling.ts";
import { type GitServer, startGitServer } from "./scale/gitserver.ts";
import { importFootprint } from "./scale/imports.ts";
import { Observer, until } from "./scale/observer.ts";
import { forEachLimited } from "./scale/pool.ts";
import { cpuSeconds, findProgram, machineBusySeconds, memoryMiB, pidsMatching } from "./scale/procfs.ts";
import { delta, histogramQuantile, parseMetrics, type Sample, sum } from "./scale/promtext.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const NICO_USER = "nico";

// ---------------------------------------------------------------- options

interface Size {
  clusters: number;
  machinesPerCluster: number;
}

interface Options {
  sizes: Size[];
  cp: number;
  idleSeconds: number;
  rolloutClusters: number;
  rolloutApplyMs: number;
  concurrency: number;
  workers: number | undefined;
  namespaces: number;
  timeoutSeconds: number;
  nicoV8Flags: string | undefined;
  nicoLogLevel: string;
  keep: boolean;
  out: string;
  quick: boolean;
}

const USAGE = `Usage: deno run -A bench/scale.ts [flags]
  --clusters N               clusters at the largest size (default 200)
  --machines-per-cluster M   machines per cluster (default 5)
  --cp C                     control-plane machines per cluster; the rest are workers (default 1)
  --sizes LIST               sizes to run, e.g. 20x5,200x5 (default 20xM and NxM)
  --idle-seconds S           idle window after everything is Ready (default 60)
  --rollout-clusters R       clusters in the rollout phase, 0 to skip (default 50)
  --rollout-apply-ms D       simulated apply time during the rollout phase (default 2000)
  --concurrency K            requests in flight for the ceiling and the benchmark's own creates (default 32)
  --workers W                NICO's --workers (default: NICO's default, 2)
  --namespaces K             spread clusters over K namespaces, one simulated NIO each (default 8; one
                             simulated NIO reconciles one object at a time and becomes the bottleneck)
  --timeout-seconds T        give up waiting for a phase after T seconds (default 300)
  --nico-v8-flags FLAGS      run NICO with deno --v8-flags=FLAGS (experiments)
  --nico-log-level LEVEL     NICO's --log-level (default info)
  --keep                     keep the temporary folders (NICO's log, the audit log) and print where
  --out DIR                  where the JSON goes (default bench/results)
  --quick                    smoke run: 20x5, idle 10 s, rollout 5 clusters`;

function parseOptions(args: string[]): Options {
  const { values } = parseArgs({
    args,
    options: {
      clusters: { type: "string" },
      "machines-per-cluster": { type: "string" },
      cp: { type: "string" },
      sizes: { type: "string" },
      "idle-seconds": { type: "string" },
      "rollout-clusters": { type: "string" },
      "rollout-apply-ms": { type: "string" },
      concurrency: { type: "string" },
      workers: { type: "string" },
      namespaces: { type: "string" },
      "timeout-seconds": { type: "string" },
      "nico-v8-flags": { type: "string" },
      "nico-log-level": { type: "string" },
      keep: { type: "boolean", default: false },
      out: { type: "string" },
      quick: { type: "boolean", default: false },
      help: { type: "boolean", short: "h", default: false },
    },
  });
  if (values.help) {
    console.log(USAGE);
    Deno.exit(0);
  }
  const int = (v: string | undefined, d: number, min = 0) => {
    if (v === undefined) return d;
    const n = Number(v);
    if (!Number.isInteger(n) || n < min) throw new Error(`expected an integer >= ${min}, got '${v}'\n${USAGE}`);
    return n;
  };
  const quick = values.quick ?? false;
  const m = int(values["machines-per-cluster"], 5, 1);
  const n = int(values.clusters, quick ? 20 : 200, 1);
  const cp = int(values.cp, 1, 1);
  if (cp > m) throw new Error(`--cp ${cp} is more than --machines-per-cluster ${m}`);
  const sizes: Size[] = values.sizes
    ? values.sizes.split(",").map((s) => {
      const [c, mm] = s.split("x").map(Number);
      if (!Number.isInteger(c) || !Number.isInteger(mm) || c! < 1 || mm! < cp) {
        throw new Error(`bad size '${s}': expected CLUSTERSxMACHINES, e.g. 200x5`);
      }
      return { clusters: c!, machinesPerCluster: mm! };
    })
    : [...new Set(quick ? [n] : [Math.min(20, n), n])].map((c) => ({ clusters: c, machinesPerCluster: m }));
  sizes.sort((a, b) => a.clusters * a.machinesPerCluster - b.clusters * b.machinesPerCluster);
  return {
    sizes,
    cp,
    idleSeconds: int(values["idle-seconds"], quick ? 10 : 60),
    rolloutClusters: int(values["rollout-clusters"], quick ? 5 : 50),
    rolloutApplyMs: int(values["rollout-apply-ms"], 2000, 1),
    concurrency: int(values.concurrency, 32, 1),
    workers: values.workers === undefined ? undefined : int(values.workers, 2, 1),
    namespaces: int(values.namespaces, 8, 1),
    timeoutSeconds: int(values["timeout-seconds"], 300, 1),
    nicoV8Flags: values["nico-v8-flags"],
    nicoLogLevel: values["nico-log-level"] ?? "info",
    keep: values.keep ?? false,
    out: values.out ?? `${ROOT}bench/results`,
    quick,
  };
}

// ---------------------------------------------------------------- helpers

const round = (x: number, d = 2) => Math.round(x * 10 ** d) / 10 ** d;
const secs = (ms: number) => round(ms / 1000, 2);
/** Temporary folders to remove if the run is interrupted (the guards stop the processes by themselves). */
const tempDirs = new Set<string>();
const log = (s: string) => console.error(`[scale ${new Date().toISOString().slice(11, 19)}] ${s}`);

function quantile(xs: number[], q: number): number | undefined {
  if (!xs.length) return undefined;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))];
}

function dist(ms: number[]) {
  const q = (p: number) => {
    const v = quantile(ms, p);
    return v === undefined ? null : secs(v);
  };
  return { p50: q(0.5), p90: q(0.9), max: q(1), n: ms.length };
}

const clusterName = (i: number) => `c-${String(i).padStart(4, "0")}`;
const machineNames = (cluster: string, m: number) => Array.from({ length: m }, (_, j) => `${cluster}-n${j}`);

function clusterSpec(names: string[], cp: number, gitRepo: string): KubernetesCluster["spec"] {
  return {
    gitRepo,
    controlPlane: { machines: names.slice(0, cp) },
    dataPlane: { machines: names.slice(cp) },
  } as KubernetesCluster["spec"];
}

async function createMachines(client: KubeClient, namespace: string, names: string[], concurrency: number) {
  await forEachLimited(names, concurrency, async (name, i) => {
    await client.create<Machine>(MACHINES, {
      metadata: { name, namespace, labels: { "bench.nico/pool": "scale" } },
      spec: {
        host: `127.${1 + Math.floor(i / 62500)}.${Math.floor(i / 250) % 250}.${(i % 250) + 1}`,
        sshUser: "root",
        sshKeySecretRef: { name: `${name}-ssh` },
      },
    });
  });
}

async function createClusters(
  client: KubeClient,
  placement: { ns: string; name: string }[],
  m: number,
  cp: number,
  gitRepo: string,
  concurrency: number,
) {
  await forEachLimited(placement, concurrency, async ({ ns, name }) => {
    await client.create<KubernetesCluster>(KUBERNETES_CLUSTERS, {
      apiVersion: "nico.homystack.com/v1alpha1",
      kind: "KubernetesCluster",
      metadata: { name, namespace: ns },
      spec: clusterSpec(machineNames(name, m), cp, gitRepo),
    });
  });
}

async function waitHttp(url: string, proc: Guarded, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const ok = await fetch(url).then(async (r) => (await r.body?.cancel(), r.ok), () => false);
    if (ok) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${proc.name} not ready at ${url} within ${timeoutMs / 1000}s:\n${await proc.tail(20)}`);
}

/** CPU seconds of several processes at once. */
async function cpuOf(pids: Record<string, number | undefined>): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const [k, pid] of Object.entries(pids)) out[k] = pid === undefined ? NaN : (await cpuSeconds(pid)) ?? NaN;
  out.machine = await machineBusySeconds();
  return out;
}

/** CPU seconds and cores used per process over a window; `others` is the rest of the machine (other people's work). */
function cpuDelta(a: Record<string, number>, b: Record<string, number>, wallS: number) {
  const out: Record<string, { seconds: number; cores: number }> = {};
  let ours = 0;
  for (const k of Object.keys(b)) {
    const d = b[k]! - a[k]!;
    if (k !== "machine" && Number.isFinite(d)) ours += d;
    out[k] = { seconds: round(d, 2), cores: round(d / wallS, 2) };
  }
  const others = b.machine! - a.machine! - ours;
  out.others = { seconds: round(others, 2), cores: round(others / wallS, 2) };
  return out;
}

/** `create events` (audit verb) → `POST events` (apiserver_request_total verb). */
function httpVerb(key: string): string {
  const [verb, resource] = key.split(" ", 2) as [string, string];
  const map: Record<string, string> = {
    create: "POST",
    patch: "PATCH",
    update: "PUT",
    get: "GET",
    list: "LIST",
    watch: "WATCH",
    delete: "DELETE",
    deletecollection: "DELETE",
  };
  return `${map[verb] ?? verb.toUpperCase()} ${resource}`;
}

/** The API server's own counters: every client's requests, and the watch events it sent. */
async function apiserverMetrics(client: KubeClient): Promise<Sample[]> {
  return parseMetrics(await client.getText("/metrics"));
}

/** Deltas of the API server's request and watch counters over a window (all clients, not only NICO). */
function apiserverWork(before: Sample[], after: Sample[], clusters: number) {
  const byVerb = new Map<string, number>();
  const key = (s: Sample) =>
    `${s.labels.verb} ${s.labels.resource}${s.labels.subresource ? `/${s.labels.subresource}` : ""}`;
  for (const [list, sign] of [[after, 1], [before, -1]] as const) {
    for (const s of list) {
      if (s.name !== "apiserver_request_total" || !s.labels.resource) continue;
      byVerb.set(key(s), (byVerb.get(key(s)) ?? 0) + sign * s.value);
    }
  }
  const requests = [...byVerb.values()].reduce((a, b) => a + b, 0);
  const watchEvents = delta(before, after, "apiserver_watch_events_total");
  const watchBytes = delta(before, after, "apiserver_watch_events_sizes_sum");
  return {
    requests,
    requestsPerCluster: round(requests / clusters, 1),
    watchEventsSent: watchEvents,
    watchEventsPerCluster: round(watchEvents / clusters, 1),
    watchMiBSent: round(watchBytes / 2 ** 20, 1),
    byVerbResource: Object.fromEntries(
      [...byVerb.entries()].filter(([, v]) => v > 0).sort((a, b) => b[1] - a[1]),
    ),
  };
}

// ---------------------------------------------------------------- NICO

interface Nico {
  proc: Guarded;
  pid: number;
  metricsUrl: string;
  logPath: string;
  metrics(): Promise<Sample[]>;
}

async function startNico(cp: ControlPlane, dir: string, opts: Options): Promise<Nico> {
  const kubeconfig = await cp.userKubeconfig(NICO_USER, ["system:masters"]);
  const metricsPort = freePort();
  const healthPort = freePort();
  const logPath = `${dir}/nico.log`;
  const proc = startGuarded("nico", Deno.execPath(), [
    "run",
    "--allow-all",
    ...(opts.nicoV8Flags ? [`--v8-flags=${opts.nicoV8Flags}`] : []),
    `${ROOT}main.ts`,
    "run",
    `--kubeconfig=${kubeconfig}`,
    "--leader-elect=false",
    "--webhook-cert-mode=off",
    `--metrics-addr=127.0.0.1:${metricsPort}`,
    `--health-addr=127.0.0.1:${healthPort}`,
    `--log-level=${opts.nicoLogLevel}`,
    ...(opts.workers ? [`--workers=${opts.workers}`] : []),
  ], logPath);
  await waitHttp(`http://127.0.0.1:${healthPort}/readyz`, proc, 60_000);
  const pid = await findProgram(proc.pid, "main.ts");
  const metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
  return {
    proc,
    pid,
    metricsUrl,
    logPath,
    metrics: async () => parseMetrics(await (await fetch(metricsUrl)).text()),
  };
}

/** Waits until NICO has reconciled nothing for `quietMs` with an empty queue; answers how long that took. */
async function settle(nico: Nico, quietMs: number, timeoutMs: number): Promise<number> {
  const started = Date.now();
  let last = -1;
  let since = Date.now();
  while (Date.now() - started < timeoutMs) {
    const m = await nico.metrics();
    const n = sum(m, "controller_runtime_reconcile_total") + sum(m, "workqueue_adds_total");
    const depth = sum(m, "workqueue_depth");
    if (n !== last || depth > 0) {
      last = n;
      since = Date.now();
    } else if (Date.now() - since >= quietMs) {
      return since - started;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return Date.now() - started;
}

function nicoControllerFigures(before: Sample[], after: Sample[], wallS: number, workers: number) {
  const d = (name: string, match: Record<string, string> = {}) => delta(before, after, name, match);
  const reconciles = d("controller_runtime_reconcile_total");
  const reconcileSeconds = d("controller_runtime_reconcile_time_seconds_sum");
  return {
    reconciles,
    byResult: Object.fromEntries(
      ["success", "requeue", "error", "terminal"].map((
        r,
      ) => [r, d("controller_runtime_reconcile_total", { result: r })]),
    ),
    reconcileMeanMs: reconciles ? round((reconcileSeconds / reconciles) * 1000, 1) : null,
    reconcileP50s: histogramQuantile(before, after, "controller_runtime_reconcile_time_seconds", 0.5) ?? null,
    reconcileP99s: histogramQuantile(before, after, "controller_runtime_reconcile_time_seconds", 0.99) ?? null,
    queueAdds: d("workqueue_adds_total"),
    queueRetries: d("workqueue_retries_total"),
    queueWaitMeanMs: d("workqueue_queue_duration_seconds_count")
      ? round((d("workqueue_queue_duration_seconds_sum") / d("workqueue_queue_duration_seconds_count")) * 1000, 1)
      : null,
    /** Reconcile time over (workers × wall time): near 1 means the workers were the bottleneck. */
    workerUtilisation: round(reconcileSeconds / (workers * wallS), 2),
  };
}

// ---------------------------------------------------------------- phases

interface Env {
  cp: ControlPlane;
  dir: string;
  auditPath: string;
  bench: KubeClient;
  observer: Observer;
  nico: Nico;
  pids: Record<string, number | undefined>;
  git: GitServer;
  opts: Options;
}

function placements(prefix: string, clusters: number, namespaces: number) {
  const nss = Array.from({ length: namespaces }, (_, k) => (namespaces === 1 ? prefix : `${prefix}-${k}`));
  return {
    namespaces: nss,
    clusters: Array.from({ length: clusters }, (_, i) => ({ ns: nss[i % namespaces]!, name: clusterName(i) })),
  };
}

async function prepare(
  env: Env,
  prefix: string,
  size: Size,
  applyDelayMs: number,
): Promise<{ nss: Set<string>; placement: { ns: string; name: string }[]; nios: SimNio[] }> {
  const { bench, observer, opts } = env;
  const p = placements(prefix, size.clusters, opts.namespaces);
  for (const ns of p.namespaces) await bench.create(NAMESPACES, { metadata: { name: ns } });
  let nioErrors = 0;
  const nios = p.namespaces.map((ns) =>
    startSimNio(bench, {
      namespace: ns,
      applyDelayMs,
      removeDelayMs: 0,
      onError: (err, what) => {
        if (nioErrors++ < 5) log(`sim-nio ${ns}: ${what}: ${(err as Error).message}`);
      },
    })
  );
  const t = Date.now();
  for (const ns of p.namespaces) {
    const names = p.clusters.filter((c) => c.ns === ns).flatMap((c) => machineNames(c.name, size.machinesPerCluster));
    await createMachines(bench, ns, names, opts.concurrency);
  }
  const total = size.clusters * size.machinesPerCluster;
  const ok = await until(
    () => p.namespaces.reduce((n, ns) => n + (observer.discoverable.get(ns)?.size ?? 0), 0) >= total,
    opts.timeoutSeconds * 1000,
  );
  if (!ok) throw new Error(`the simulated NIO did not discover ${total} machines in ${opts.timeoutSeconds}s`);
  log(`${total} machines created and discovered in ${secs(Date.now() - t)} s`);
  return { nss: new Set(p.namespaces), placement: p.clusters, nios };
}

async function provision(env: Env, size: Size, nss: Set<string>, placement: { ns: string; name: string }[]) {
  const { bench, observer, nico, opts } = env;
  const nodes = size.clusters * size.machinesPerCluster;
  await settle(nico, 1000, 10_000);
  const a0 = await apiserverMetrics(bench);
  const cpu0 = await cpuOf(env.pids);
  const m0 = await nico.metrics();
  const t0 = Date.now();
  await createClusters(bench, placement, size.machinesPerCluster, opts.cp, env.git.url("flake"), opts.concurrency);
  const tCreated = Date.now();
  const progress = () => {
    const cfgs = observer.configsIn(nss).length;
    const ready = observer.clustersIn(nss).filter(([, c]) => c.ready.size > 0).length;
    log(`  ${secs(Date.now() - t0)} s: ${cfgs}/${nodes} configurations, ${ready}/${size.clusters} clusters Ready`);
  };
  const timeout = opts.timeoutSeconds * 1000;
  const allConfigs = await until(() => observer.configsIn(nss).length >= nodes, timeout, progress);
  const cfgTimes = observer.configsIn(nss);
  const tConfigs = allConfigs ? Math.max(...cfgTimes.map((c) => c.seen)) : NaN;
  const allReady = await until(
    () => observer.clustersIn(nss).filter(([, c]) => c.ready.size > 0).length >= size.clusters,
    Math.max(1000, timeout - (Date.now() - t0)),
    progress,
  );
  const clusters = observer.clustersIn(nss);
  const tReady = allReady ? Math.max(...clusters.map(([, c]) => Math.min(...c.ready.values()))) : NaN;
  const tEnd = allReady ? tReady : Date.now();
  const cpu1 = await cpuOf(env.pids);
  const m1 = await nico.metrics();
  const a1 = await apiserverMetrics(bench);
  const wallS = (tEnd - t0) / 1000;

  // Per cluster: when its configurations appeared, when the bootstrap node was applied, when it was Ready.
  const byCluster = new Map<string, typeof cfgTimes>();
  for (const c of cfgTimes) {
    const list = byCluster.get(c.cluster) ?? [];
    list.push(c);
    byCluster.set(c.cluster, list);
  }
  const toReady: number[] = [];
  const serial: number[] = [];
  const bootstrapApply: number[] = [];
  const afterBootstrap: number[] = [];
  for (const [key, ct] of clusters) {
    const ready = ct.ready.size ? Math.min(...ct.ready.values()) : undefined;
    if (ready !== undefined) toReady.push(ready - t0);
    const cfgs = byCluster.get(key) ?? [];
    if (cfgs.length < size.machinesPerCluster) continue;
    const first = Math.min(...cfgs.map((c) => c.seen));
    const last = Math.max(...cfgs.map((c) => c.seen));
    serial.push(last - first);
    const boot = cfgs.find((c) => c.bootstrap);
    const bootApplied = boot?.applied.get(1);
    if (boot && bootApplied !== undefined) {
      bootstrapApply.push(bootApplied - boot.seen);
      const next = cfgs.filter((c) => c !== boot).map((c) => c.seen);
      if (next.length) afterBootstrap.push(Math.min(...next) - bootApplied);
    }
  }
  const result = {
    clusters: size.clusters,
    machines: nodes,
    complete: allConfigs && allReady,
    createSeconds: secs(tCreated - t0),
    allConfigurationsSeconds: allConfigs ? secs(tConfigs - t0) : null,
    allReadySeconds: allReady ? secs(tReady - t0) : null,
    clusterReadySeconds: dist(toReady),
    /** From a cluster's first to its last NixosConfiguration: what one-at-a-time ordering costs per cluster. */
    orderingSpanSeconds: dist(serial),
    /** Bootstrap configuration created → applied by the simulated NIO (apply delay 0). */
    bootstrapApplySeconds: dist(bootstrapApply),
    /** Bootstrap applied → NICO creates the next configuration of the cluster. */
    nicoReactionSeconds: dist(afterBootstrap),
    cpu: cpuDelta(cpu0, cpu1, wallS),
    /** Everything the API server served meanwhile: NICO, the simulated NIO and the benchmark's watches. */
    apiserver: apiserverWork(a0, a1, size.clusters),
    nicoController: nicoControllerFigures(m0, m1, wallS, opts.workers ?? 2),
  };
  return { result, t0, tEnd };
}

async function idle(env: Env) {
  const { nico, opts } = env;
  const settleMs = await settle(nico, 3000, 60_000);
  const m0 = await nico.metrics();
  const cpu0 = await cpuSeconds(nico.pid);
  const t0 = Date.now();
  // CPU per 10 s slice (reading /proc costs NICO nothing): tells a GC tail after the burst from steady work.
  const slices: number[] = [];
  let prev = cpu0 ?? NaN;
  while (Date.now() - t0 < opts.idleSeconds * 1000) {
    await new Promise((r) => setTimeout(r, Math.min(10_000, opts.idleSeconds * 1000 - (Date.now() - t0))));
    const c = (await cpuSeconds(nico.pid)) ?? NaN;
    slices.push(round(c - prev, 3));
    prev = c;
  }
  const t1 = Date.now();
  const cpu1 = await cpuSeconds(nico.pid);
  const m1 = await nico.metrics();
  const cpuS = (cpu1 ?? NaN) - (cpu0 ?? NaN);
  return {
    settleSeconds: secs(settleMs),
    t0,
    t1,
    seconds: secs(t1 - t0),
    nicoCpuSeconds: round(cpuS, 3),
    nicoCpuPercent: round((100 * cpuS) / ((t1 - t0) / 1000), 2),
    nicoCpuPer10sSlice: slices,
    reconciles: delta(m0, m1, "controller_runtime_reconcile_total"),
  };
}

async function rollout(env: Env, machinesPerCluster: number) {
  const { bench, observer, opts } = env;
  const size = { clusters: opts.rolloutClusters, machinesPerCluster };
  log(`rollout: ${size.clusters} clusters of ${machinesPerCluster}, simulated apply ${opts.rolloutApplyMs} ms`);
  const { nss, placement, nios } = await prepare(env, "rollout", size, opts.rolloutApplyMs);
  try {
    const workers = machinesPerCluster - opts.cp;
    const d = opts.rolloutApplyMs;
    // Provisioning with the apply delay: bootstrap first, then the other control-plane nodes one at a time;
    // workers start as soon as the bootstrap node is up, so they overlap the control plane.
    const provisionSteps = Math.max(opts.cp, workers > 0 ? 2 : 1);
    const t0 = Date.now();
    await createClusters(bench, placement, machinesPerCluster, opts.cp, env.git.url("flake"), opts.concurrency);
    const timeout = opts.timeoutSeconds * 1000;
    const provisioned = await until(
      () => observer.clustersIn(nss).filter(([, c]) => c.ready.size > 0).length >= size.clusters,
      timeout,
    );
    if (!provisioned) throw new Error("rollout clusters did not become Ready");
    const tProv = Math.max(...observer.clustersIn(nss).map(([, c]) => Math.min(...c.ready.values())));
    await new Promise((r) => setTimeout(r, 1000));

    // The change: a new gitRepo on every cluster at once.
    const newRepo = env.git.url("flake-v2");
    const gens = new Map<string, number>();
    const r0 = Date.now();
    await forEachLimited(placement, opts.concurrency, async ({ ns, name }) => {
      const c = await bench.mergePatch<KubernetesCluster>(KUBERNETES_CLUSTERS, name, ns, {
        spec: { gitRepo: newRepo },
      });
      gens.set(`${ns}/${name}`, c.metadata.generation ?? 0);
    });
    const done = () =>
      [...gens.entries()].every(([k, g]) => observer.clusters.get(k)?.ready.has(g)) &&
      observer.configsIn(nss).every((c) => c.gitRepo === newRepo && c.applied.has(c.generation));
    const ok = await until(done, timeout, () => {
      const n = [...gens.entries()].filter(([k, g]) => observer.clusters.get(k)?.ready.has(g)).length;
      log(`  ${secs(Date.now() - r0)} s: ${n}/${gens.size} clusters rolled out`);
    });
    const tDone = ok ? Math.max(...[...gens.entries()].map(([k, g]) => observer.clusters.get(k)!.ready.get(g)!)) : NaN;

    // Steps per cluster, from the configurations' generations: updated (spec changed) → applied.
    const reaction: number[] = [];
    const nioLag: number[] = [];
    const perCluster: number[] = [];
    const cfgs = observer.configsIn(nss);
    for (const [k, g] of gens) {
      const steps = cfgs.filter((c) => c.cluster === k && c.generation >= 2).map((c) => ({
        updated: c.genSeen.get(c.generation)!,
        applied: c.applied.get(c.generation),
      })).sort((a, b) => a.updated - b.updated);
      if (steps.some((s) => s.applied === undefined)) continue;
      let prev = r0;
      for (const s of steps) {
        reaction.push(s.updated - prev);
        nioLag.push(s.applied! - s.updated - d);
        prev = s.applied!;
      }
      const ready = observer.clusters.get(k)?.ready.get(g);
      if (ready !== undefined) perCluster.push(ready - r0);
    }
    const steps = workers + opts.cp; // maxUnavailable 1: workers one at a time, then the control plane one at a time
    return {
      clusters: size.clusters,
      machinesPerCluster,
      applyMs: d,
      provisioning: {
        seconds: secs(tProv - t0),
        minimumSeconds: secs(provisionSteps * d),
        steps: provisionSteps,
      },
      complete: ok,
      seconds: ok ? secs(tDone - r0) : null,
      minimumSeconds: secs(steps * d),
      sequentialSteps: steps,
      ratio: ok ? round((tDone - r0) / (steps * d), 2) : null,
      overheadPerStepSeconds: ok ? round((tDone - r0 - steps * d) / steps / 1000, 3) : null,
      clusterSeconds: dist(perCluster),
      /** Previous node applied (or the spec change) → NICO updates the next node's configuration. */
      nicoReactionSeconds: dist(reaction),
      /** Configuration updated → applied, minus the apply delay: the simulated NIO's own latency. */
      nioLatencySeconds: dist(nioLag),
      window: { from: r0, to: ok ? tDone : Date.now() },
    };
  } finally {
    for (const n of nios) await n.stop();
  }
}

/** What NICO's informers hold, as JSON bytes, and how much of it is metadata.managedFields. */
async function cacheFootprint(bench: KubeClient) {
  const out: Record<string, { objects: number; jsonMiB: number; managedFieldsMiB: number }> = {};
  const lists: [string, Promise<{ items: KubeObject[] }>][] = [
    ["kubernetesclusters", bench.list(KUBERNETES_CLUSTERS)],
    ["machines", bench.list(MACHINES)],
    ["nixosconfigurations", bench.list(NIXOS_CONFIGURATIONS)],
    ["secrets (labelled)", bench.list(SECRETS, { labelSelector: CLUSTER_LABEL })],
  ];
  for (const [name, p] of lists) {
    const { items } = await p;
    let bytes = 0;
    let mf = 0;
    for (const i of items) {
      bytes += JSON.stringify(i).length;
      mf += JSON.stringify((i.metadata as { managedFields?: unknown }).managedFields ?? null).length;
    }
    out[name] = { objects: items.length, jsonMiB: round(bytes / 2 ** 20, 2), managedFieldsMiB: round(mf / 2 ** 20, 2) };
  }
  return out;
}

/** Copies of one Ready cluster's objects, for the ceiling. */
async function templates(bench: KubeClient, ns: string, name: string): Promise<Templates> {
  const cluster = (await bench.get<KubernetesCluster>(KUBERNETES_CLUSTERS, name, ns))!;
  const secrets = (await bench.list<Templates["secrets"][number]>(SECRETS, {
    namespace: ns,
    labelSelector: `${CLUSTER_LABEL}=${name}`,
  })).items;
  const configs = (await bench.list<NixosConfiguration>(NIXOS_CONFIGURATIONS, {
    namespace: ns,
    labelSelector: `${CLUSTER_LABEL}=${name}`,
  })).items;
  const machine = (await bench.get<Machine>(MACHINES, configs[0]!.spec.machineRef.name, ns))!;
  return { cluster, secrets, configs, machineStatus: machine.status! };
}

// ---------------------------------------------------------------- one size

async function runSize(opts: Options, size: Size, largest: boolean) {
  const label = `${size.clusters}x${size.machinesPerCluster}`;
  log(`size ${label}: ${size.clusters * size.machinesPerCluster} machines; starting a control plane`);
  const dir = await Deno.makeTempDir({ prefix: "nico-bench-scale-" });
  if (!opts.keep) tempDirs.add(dir);
  const policy = `${dir}/audit-policy.yaml`;
  const auditPath = `${dir}/audit.log`;
  await Deno.writeTextFile(policy, auditPolicy(NICO_USER));
  const cp = await startControlPlane({ apiserverArgs: auditFlags(policy, auditPath) });
  const bench = cp.client.with({ userAgent: "nico-bench", fieldManager: "nico-bench" });
  const observer = new Observer(bench);
  const git = await startGitServer(dir, ["flake", "flake-v2"]);
  let nico: Nico | undefined;
  let nios: SimNio[] = [];
  try {
    const [apiserver] = await pidsMatching(cp.dir, "kube-apiserver");
    const [etcd] = await pidsMatching(cp.dir, "etcd");
    await observer.start();
    nico = await startNico(cp, dir, opts);
    const baseline = await memoryMiB(nico.pid);
    const env: Env = {
      cp,
      dir,
      auditPath,
      bench,
      observer,
      nico,
      pids: { nico: nico.pid, apiserver, etcd, bench: Deno.pid },
      git,
      opts,
    };
    const prep = await prepare(env, "scale", size, 0);
    nios = prep.nios;
    log(`provisioning ${size.clusters} clusters`);
    const prov = await provision(env, size, prep.nss, prep.placement);
    const p = prov.result;
    log(
      `  configurations ${p.allConfigurationsSeconds} s, Ready ${p.allReadySeconds} s; NICO reconcile mean ${p.nicoController.reconcileMeanMs} ms`,
    );
    log(`idle: ${opts.idleSeconds} s`);
    const idleResult = await idle(env);
    const memAfterIdle = await memoryMiB(nico.pid);
    const cached = await cacheFootprint(bench);
    let rolloutResult: Awaited<ReturnType<typeof rollout>> | undefined;
    if (largest && opts.rolloutClusters > 0) {
      rolloutResult = await rollout(env, size.machinesPerCluster);
      log(`  rollout ${rolloutResult.seconds} s (minimum ${rolloutResult.minimumSeconds} s)`);
    }
    const memEnd = await memoryMiB(nico.pid);

    const readyOne = prep.placement.find((c) => observer.clusters.get(`${c.ns}/${c.name}`)?.ready.size);
    const tpl = readyOne ? await templates(bench, readyOne.ns, readyOne.name) : undefined;
    for (const n of nios) await n.stop();
    nios = [];
    await nico.proc.stop();

    // NICO's requests, from the audit log.
    const audit: AuditRequest[] = await readAudit(auditPath);
    const provReqs = within(audit, prov.t0, prov.tEnd + 1);
    const provTally = tally(provReqs);
    const perCluster = Object.fromEntries(
      Object.entries(provTally.byVerbResource).map(([k, v]) => [k, round(v / size.clusters, 2)]),
    );

    // The ceiling: same control plane, NICO and NIO stopped, namespaces of its own. Then the same with
    // NICO's extra requests added, and with every extra request of the run added (the simulator's too).
    const cpuPids = { apiserver: env.pids.apiserver, etcd: env.pids.etcd, bench: Deno.pid };
    const ceilingIn = async (ns: string, extras: Record<string, number>) => {
      await bench.create(NAMESPACES, { metadata: { name: ns } });
      const names = Array.from(
        { length: size.clusters },
        (_, i) => machineNames(clusterName(i), size.machinesPerCluster),
      );
      await createMachines(bench, ns, names.flat(), opts.concurrency);
      const c0 = await cpuOf(cpuPids);
      const a0 = await apiserverMetrics(bench);
      const c = await runCeiling(
        bench,
        ns,
        size.clusters,
        (i) => names[i]!,
        clusterName,
        (n) => clusterSpec(n, opts.cp, git.url("flake")),
        tpl!,
        opts.concurrency,
        extras,
      );
      const c1 = await cpuOf(cpuPids);
      const work = apiserverWork(a0, await apiserverMetrics(bench), size.clusters);
      log(`  ${ns}: ${c.seconds.toFixed(2)} s for ${c.requests} requests`);
      return { ...c, seconds: round(c.seconds, 2), cpu: cpuDelta(c0, c1, c.seconds), apiserver: work };
    };
    let ceiling: Awaited<ReturnType<typeof ceilingIn>> | undefined;
    let withNicoExtras: Awaited<ReturnType<typeof ceilingIn>> | undefined;
    let withAllExtras: Awaited<ReturnType<typeof ceilingIn>> | undefined;
    if (tpl) {
      log(`ceiling: ${size.clusters} clusters, ${opts.concurrency} requests in flight`);
      ceiling = await ceilingIn("ceiling", {});
      const base = ceiling.apiserver.byVerbResource;
      const minus = (counts: Record<string, number>) =>
        Object.fromEntries(
          Object.entries(counts).map(([k, v]): [string, number] => [k, v - (base[k] ?? 0)]).filter(([, v]) => v > 0),
        );
      const nicoCounts = Object.fromEntries(
        Object.entries(provTally.byVerbResource).map(([k, v]) => [httpVerb(k), v]),
      );
      withNicoExtras = await ceilingIn("ceiling-nico", minus(nicoCounts));
      const runCounts = Object.fromEntries(
        Object.entries(p.apiserver.byVerbResource).filter(([k]) =>
          !/^(WATCH|LIST) /.test(k) && k !== "PUT leases" && k !== "POST kubernetesclusters"
        ),
      );
      withAllExtras = await ceilingIn("ceiling-all", minus(runCounts));
    }

    const settleReqs = within(audit, prov.tEnd + 1, idleResult.t0);
    const idleReqs = within(audit, idleResult.t0, idleResult.t1);
    const idleTally = tally(idleReqs);
    const rolloutTally = rolloutResult
      ? tally(within(audit, rolloutResult.window.from, rolloutResult.window.to + 1))
      : undefined;

    const ready = p.allReadySeconds;
    return {
      size: label,
      machines: size.clusters * size.machinesPerCluster,
      layout: { controlPlane: opts.cp, workers: size.machinesPerCluster - opts.cp },
      provisioning: p,
      ceiling: ceiling
        ? {
          ...ceiling,
          withNicoExtras: withNicoExtras ?? null,
          withAllExtras: withAllExtras ?? null,
          ratioReady: ready !== null ? round(ready / ceiling.seconds, 2) : null,
          ratioConfigurations: p.allConfigurationsSeconds !== null
            ? round(p.allConfigurationsSeconds / ceiling.seconds, 2)
            : null,
        }
        : null,
      api: {
        provisioning: {
          requests: provTally.total,
          writes: provTally.writes,
          errors: provTally.errors,
          requestsPerCluster: round(provTally.total / size.clusters, 2),
          writesPerCluster: round(provTally.writes / size.clusters, 2),
          byVerbResource: provTally.byVerbResource,
          perCluster,
          errorCodes: provTally.errorCodes,
        },
        afterReady: { seconds: idleResult.settleSeconds, ...tally(settleReqs) },
        idle: {
          ...idleTally,
          writeRequests: idleReqs.filter(isWrite).map((r) => `${r.verb} ${r.resource} ${r.code}`).slice(0, 20),
        },
        rollout: rolloutTally ?? null,
      },
      idle: {
        seconds: idleResult.seconds,
        writes: idleTally.writes,
        requests: idleTally.total,
        reconciles: idleResult.reconciles,
        nicoCpuSeconds: idleResult.nicoCpuSeconds,
        nicoCpuPercent: idleResult.nicoCpuPercent,
        nicoCpuPer10sSlice: idleResult.nicoCpuPer10sSlice,
        settleSeconds: idleResult.settleSeconds,
      },
      memory: {
        baselineRssMiB: baseline ? round(baseline.rss, 1) : null,
        peakRssMiB: memEnd ? round(memEnd.hwm, 1) : null,
        peakRssBeforeRolloutMiB: memAfterIdle ? round(memAfterIdle.hwm, 1) : null,
        rssAfterIdleMiB: memAfterIdle ? round(memAfterIdle.rss, 1) : null,
        cachedObjects: cached,
      },
      rollout: rolloutResult ? { ...rolloutResult, window: undefined } : null,
    };
  } catch (err) {
    if (nico) log(`NICO's log tail:\n${await nico.proc.tail(30)}`);
    throw err;
  } finally {
    for (const n of nios) await n.stop().catch(() => {});
    await nico?.proc.stop();
    await observer.stop();
    await git.stop();
    await cp.stop();
    if (opts.keep) log(`kept ${dir} (nico.log, audit.log)`);
    else await Deno.remove(dir, { recursive: true }).catch(() => {});
    tempDirs.delete(dir);
  }
}

// ---------------------------------------------------------------- report

type SizeResult = Awaited<ReturnType<typeof runSize>>;

function table(rows: [string, ...string[]][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? "").length)));
  return rows.map((r) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  "))
    .join("\n");
}

const f = (v: number | null | undefined, unit = "") => (v === null || v === undefined ? "-" : `${v}${unit}`);

function report(results: SizeResult[], opts: Options): { text: string; targets: Record<string, unknown> } {
  const head: [string, ...string[]] = ["", ...results.map((r) => `${r.size} (${r.machines} machines)`)];
  const col = (g: (r: SizeResult) => string): string[] => results.map(g);
  const rows: [string, ...string[]][] = [
    head,
    ["layout per cluster", ...col((r) => `${r.layout.controlPlane} cp + ${r.layout.workers} workers`)],
    ["all NixosConfigurations exist", ...col((r) => f(r.provisioning.allConfigurationsSeconds, " s"))],
    ["all clusters Ready", ...col((r) => f(r.provisioning.allReadySeconds, " s"))],
    [
      "cluster Ready p50 / p90",
      ...col((r) => `${f(r.provisioning.clusterReadySeconds.p50)} / ${f(r.provisioning.clusterReadySeconds.p90)} s`),
    ],
    ["ceiling (direct writes)", ...col((r) => f(r.ceiling?.seconds, " s"))],
    ["NICO / ceiling (Ready)", ...col((r) => f(r.ceiling?.ratioReady, "x"))],
    ["ceiling + NICO's extra requests", ...col((r) => f(r.ceiling?.withNicoExtras?.seconds, " s"))],
    ["ceiling + every extra request of the run", ...col((r) => f(r.ceiling?.withAllExtras?.seconds, " s"))],
    [
      "API server requests per cluster (all clients)",
      ...col((r) => `${r.provisioning.apiserver.requestsPerCluster} vs ${f(r.ceiling?.apiserver.requestsPerCluster)}`),
    ],
    [
      "API server CPU-s per cluster",
      ...col((r) =>
        `${f(round(r.provisioning.cpu.apiserver!.seconds / r.provisioning.clusters, 3))} vs ${
          f(r.ceiling ? round(r.ceiling.cpu.apiserver!.seconds / r.provisioning.clusters, 3) : null)
        }`
      ),
    ],
    [
      "watch events sent per cluster",
      ...col((r) =>
        `${r.provisioning.apiserver.watchEventsPerCluster} vs ${f(r.ceiling?.apiserver.watchEventsPerCluster)}`
      ),
    ],
    ["ordering span per cluster p50", ...col((r) => f(r.provisioning.orderingSpanSeconds.p50, " s"))],
    ["NICO requests per cluster", ...col((r) => f(r.api.provisioning.requestsPerCluster))],
    ["NICO writes per cluster", ...col((r) => f(r.api.provisioning.writesPerCluster))],
    [
      "NICO reconciles (mean ms)",
      ...col((r) =>
        `${r.provisioning.nicoController.reconciles} (${f(r.provisioning.nicoController.reconcileMeanMs)})`
      ),
    ],
    ["NICO worker utilisation", ...col((r) => f(r.provisioning.nicoController.workerUtilisation))],
    [
      "cores nico/apiserver/etcd/bench/others",
      ...col((r) => {
        const c = r.provisioning.cpu;
        return [c.nico, c.apiserver, c.etcd, c.bench, c.others].map((x) => f(x?.cores)).join("/");
      }),
    ],
    [
      "ceiling cores apiserver/etcd/bench/others",
      ...col((r) => {
        const c = r.ceiling?.cpu;
        return c ? [c.apiserver, c.etcd, c.bench, c.others].map((x) => f(x?.cores)).join("/") : "-";
      }),
    ],
    ["idle writes", ...col((r) => `${r.idle.writes} in ${r.idle.seconds} s`)],
    ["idle NICO CPU", ...col((r) => `${r.idle.nicoCpuSeconds} s (${r.idle.nicoCpuPercent}%)`)],
    ["NICO peak RSS", ...col((r) => f(r.memory.peakRssBeforeRolloutMiB, " MiB"))],
  ];
  const largest = results.at(-1)!;
  const smallest = results[0]!;
  const lines = [table(rows)];
  const perCluster = Object.entries(largest.api.provisioning.perCluster).slice(0, 14)
    .map(([k, v]) => `    ${k.padEnd(40)} ${v}`);
  lines.push(
    `\nNICO's requests per cluster provisioned at ${largest.size} (audit log, user ${NICO_USER}):`,
    ...perCluster,
  );
  if (largest.rollout) {
    const r = largest.rollout;
    lines.push(
      `\nRollout of a gitRepo change through ${r.clusters} clusters of ${r.machinesPerCluster} (apply ${r.applyMs} ms):`,
      `    measured ${
        f(r.seconds, " s")
      }; minimum ${r.minimumSeconds} s (${r.sequentialSteps} sequential steps x ${r.applyMs} ms); ratio ${
        f(r.ratio, "x")
      }`,
      `    per step: NICO reaction p50 ${f(r.nicoReactionSeconds.p50, " s")}, NIO latency beyond the delay p50 ${
        f(r.nioLatencySeconds.p50, " s")
      }`,
    );
  }
  const ratio = largest.ceiling?.ratioReady ?? null;
  const rss1000 = largest.memory.peakRssBeforeRolloutMiB;
  const growth = results.length > 1 && rss1000 !== null && smallest.memory.peakRssBeforeRolloutMiB !== null
    ? round((rss1000 - smallest.memory.peakRssBeforeRolloutMiB) / ((largest.machines - smallest.machines) / 100), 2)
    : null;
  const targets = {
    provisioningWithin1_5xCeiling: { measured: ratio, met: ratio !== null && ratio <= 1.5 },
    zeroIdleWrites: { measured: results.map((r) => r.idle.writes), met: results.every((r) => r.idle.writes === 0) },
    rssUnder150MiBAt1000Machines: {
      measured: rss1000,
      machines: largest.machines,
      met: rss1000 !== null && rss1000 < 150 && largest.machines >= 1000,
      growthMiBPer100Machines: growth,
    },
  };
  lines.push(
    "\nTargets:",
    `    provisioning within 1.5x the ceiling: ${f(ratio, "x")} at ${largest.size} → ${
      targets.provisioningWithin1_5xCeiling.met ? "met" : "MISSED"
    }`,
    `    zero idle writes: ${targets.zeroIdleWrites.measured.join(", ")} → ${
      targets.zeroIdleWrites.met ? "met" : "MISSED"
    }`,
    `    RSS under 150 MB at 1,000 machines: ${f(rss1000, " MiB")} at ${largest.machines} machines` +
      (growth !== null ? ` (+${growth} MiB per 100 machines)` : "") +
      ` → ${
        targets.rssUnder150MiBAt1000Machines.met ? "met" : largest.machines < 1000 ? "not measured at 1,000" : "MISSED"
      }`,
  );
  if (opts.quick) lines.push("    (quick run: smoke figures only)");
  return { text: lines.join("\n"), targets };
}

// ---------------------------------------------------------------- main

async function main(): Promise<number> {
  let opts: Options;
  try {
    opts = parseOptions(Deno.args);
  } catch (err) {
    console.error((err as Error).message);
    return 2;
  }
  const started = new Date();
  const load0 = (await Deno.readTextFile("/proc/loadavg")).trim();
  log("memory of a bare NICO: one process per import");
  const footprint = await importFootprint();
  const results: SizeResult[] = [];
  for (const [i, size] of opts.sizes.entries()) {
    results.push(await runSize(opts, size, i === opts.sizes.length - 1));
  }
  const load1 = (await Deno.readTextFile("/proc/loadavg")).trim();
  const { text, targets } = report(results, opts);
  console.log(text);
  console.log(
    "\nRSS of a fresh deno process importing only (MiB): " +
      footprint.map((x) => `${x.label} ${x.rssMiB}`).join(", "),
  );
  const out = {
    benchmark: "scale",
    started: started.toISOString(),
    seconds: secs(Date.now() - started.getTime()),
    machine: {
      cores: navigator.hardwareConcurrency,
      memoryGiB: round(Deno.systemMemoryInfo().total / 2 ** 30, 1),
      loadavgBefore: load0,
      loadavgAfter: load1,
      deno: Deno.version.deno,
    },
    options: { ...opts, out: undefined },
    importFootprint: footprint,
    results,
    targets,
  };
  await Deno.mkdir(opts.out, { recursive: true });
  const path = `${opts.out.replace(/\/+$/, "")}/scale-${started.toISOString().replace(/[:.]/g, "-")}.json`;
  await Deno.writeTextFile(path, JSON.stringify(out, null, 2) + "\n");
  console.log(`\nresults: ${path} (${out.seconds} s in all)`);
  return 0;
}

if (import.meta.main) {
  const interrupted = () => {
    for (const d of tempDirs) {
      try {
        Deno.removeSync(d, { recursive: true });
      } catch { /* already gone */ }
    }
    Deno.exit(130);
  };
  Deno.addSignalListener("SIGINT", interrupted);
  Deno.addSignalListener("SIGTERM", interrupted);
  Deno.exit(await main());
}
