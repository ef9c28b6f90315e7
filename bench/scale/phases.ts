/** The phases of one size: prepare, provision, idle, and what NICO caches (the rollout is in rollout.ts). */
import { defaultWorkers } from "../../cli/options.ts";
import type { CacheFigures, IdleWindow, ProvisionFigures } from "./result.ts";
import type { KubernetesCluster } from "../../crds/kubernetescluster.ts";
import type { KubeClient, KubeObject } from "../../lib/kube/client.ts";
import { NAMESPACES, SECRETS } from "../../lib/kube/resources.ts";
import { KUBERNETES_CLUSTERS } from "../../crds/kubernetescluster.ts";
import { MACHINES, NIXOS_CONFIGURATIONS } from "../../core/contract/nio.ts";
import { CLUSTER_LABEL } from "../../core/contract/labels.ts";
import type { Machine, NixosConfiguration } from "../../core/contract/nio.ts";
import { type ControlPlane } from "../../testing/envtest/controlplane.ts";
import { type SimNio, startSimNio } from "../../testing/sim-nio.ts";
import { type Templates } from "./ceiling.ts";
import { type GitServer } from "./gitserver.ts";
import { type ClusterTimes, type ConfigTimes, Observer, until } from "./observer.ts";
import { cpuSecondsOf } from "./procfs.ts";
import { delta } from "./promtext.ts";
import { Options, Size } from "./options.ts";
import {
  apiserverMetrics,
  apiserverWork,
  clusterName,
  cpuDelta,
  cpuOf,
  createClusters,
  createMachines,
  dist,
  log,
  machineNames,
  round,
  secs,
} from "./util.ts";
import { Nico, nicoControllerFigures, settle } from "./nico.ts";

// ---------------------------------------------------------------- phases

export interface Env {
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

export function placements(prefix: string, clusters: number, namespaces: number) {
  const nss = Array.from({ length: namespaces }, (_, k) => (namespaces === 1 ? prefix : `${prefix}-${k}`));
  return {
    namespaces: nss,
    clusters: Array.from({ length: clusters }, (_, i) => ({ ns: nss[i % namespaces]!, name: clusterName(i) })),
  };
}

export async function prepare(
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
      jitterMs: opts.jitterMs,
      generation: opts.nio,
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

export async function provision(
  env: Env,
  size: Size,
  nss: Set<string>,
  placement: { ns: string; name: string }[],
): Promise<{ result: ProvisionFigures; t0: number; tEnd: number }> {
  const { bench, observer, nico, opts } = env;
  const nodes = size.clusters * size.machinesPerCluster;
  await settle(nico, 1000, 10_000);
  const a0 = await apiserverMetrics(bench);
  const cpu0 = await cpuOf(env.pids);
  const m0 = await nico.metrics();
  const t0 = Date.now();
  await createClusters(
    bench,
    placement,
    size.machinesPerCluster,
    opts.cp,
    env.git.url("flake"),
    opts.concurrency,
    opts.shards,
  );
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

  const { toReady, serial, bootstrapApply, afterBootstrap } = clusterTimings(clusters, cfgTimes, size, t0);
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
    nicoController: nicoControllerFigures(m0, m1, wallS, (opts.workers ?? defaultWorkers()) * opts.shards),
  };
  return { result, t0, tEnd };
}

/** Per cluster: when its configurations appeared, when the bootstrap node was applied, when it was Ready. */
function clusterTimings(
  clusters: [string, ClusterTimes][],
  cfgTimes: ConfigTimes[],
  size: Size,
  t0: number,
) {
  const byCluster = new Map<string, ConfigTimes[]>();
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
  return { toReady, serial, bootstrapApply, afterBootstrap };
}

export async function idle(env: Env): Promise<IdleWindow> {
  const { nico, opts } = env;
  const settleMs = await settle(nico, 3000, 60_000);
  const m0 = await nico.metrics();
  const cpu0 = await cpuSecondsOf(nico.pids);
  const t0 = Date.now();
  // CPU per 10 s slice (reading /proc costs NICO nothing): tells a GC tail after the burst from steady work.
  const slices: number[] = [];
  let prev = cpu0 ?? NaN;
  while (Date.now() - t0 < opts.idleSeconds * 1000) {
    await new Promise((r) => setTimeout(r, Math.min(10_000, opts.idleSeconds * 1000 - (Date.now() - t0))));
    const c = (await cpuSecondsOf(nico.pids)) ?? NaN;
    slices.push(round(c - prev, 3));
    prev = c;
  }
  const t1 = Date.now();
  const cpu1 = await cpuSecondsOf(nico.pids);
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

/** What NICO's informers hold, as JSON bytes, and how much of it is metadata.managedFields. */
export async function cacheFootprint(bench: KubeClient): Promise<CacheFigures> {
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
export async function templates(bench: KubeClient, ns: string, name: string): Promise<Templates> {
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
