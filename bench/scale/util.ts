/** Small helpers of the scale benchmark: rounding, distributions, object builders, CPU and API server figures. */
import type { KubernetesCluster } from "../../crds/kubernetescluster.ts";
import type { KubeClient } from "../../lib/kube/client.ts";
import { KUBERNETES_CLUSTERS } from "../../crds/kubernetescluster.ts";
import { MACHINES } from "../../core/contract/nio.ts";
import { FINALIZER, SHARD_LABEL } from "../../core/contract/labels.ts";
import type { Machine } from "../../core/contract/nio.ts";
import { type Guarded } from "../../testing/envtest/process.ts";
import { forEachLimited } from "./pool.ts";
import { cpuSeconds, machineBusySeconds } from "./procfs.ts";
import { delta, parseMetrics, type Sample } from "./promtext.ts";

export const ROOT = new URL("../../", import.meta.url).pathname;
export const NICO_USER = "nico";

// ---------------------------------------------------------------- helpers

export const round = (x: number, d = 2) => Math.round(x * 10 ** d) / 10 ** d;
export const secs = (ms: number) => round(ms / 1000, 2);
/** Temporary folders to remove if the run is interrupted (the guards stop the processes by themselves). */
export const tempDirs = new Set<string>();
export const log = (s: string) => console.error(`[scale ${new Date().toISOString().slice(11, 19)}] ${s}`);

export function quantile(xs: number[], q: number): number | undefined {
  if (!xs.length) return undefined;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))];
}

export function dist(ms: number[]) {
  const q = (p: number) => {
    const v = quantile(ms, p);
    return v === undefined ? null : secs(v);
  };
  return { p50: q(0.5), p90: q(0.9), max: q(1), n: ms.length };
}

export const clusterName = (i: number) => `c-${String(i).padStart(4, "0")}`;
/** The shard of cluster `i` when the run has `shards` shards: round-robin, the default shard (undefined) first. */
export const shardOf = (
  i: number,
  shards: number,
): string | undefined => (i % shards === 0 ? undefined : `s${i % shards}`);
export const machineNames = (cluster: string, m: number) => Array.from({ length: m }, (_, j) => `${cluster}-n${j}`);

export function clusterSpec(names: string[], cp: number, gitRepo: string): KubernetesCluster["spec"] {
  return {
    gitRepo,
    controlPlane: { machines: names.slice(0, cp) },
    dataPlane: { machines: names.slice(cp) },
  } as KubernetesCluster["spec"];
}

export async function createMachines(client: KubeClient, namespace: string, names: string[], concurrency: number) {
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

export async function createClusters(
  client: KubeClient,
  placement: { ns: string; name: string }[],
  m: number,
  cp: number,
  gitRepo: string,
  concurrency: number,
  shards = 1,
) {
  await forEachLimited(placement, concurrency, async ({ ns, name }, i) => {
    const shard = shardOf(i, shards);
    await client.create<KubernetesCluster>(KUBERNETES_CLUSTERS, {
      apiVersion: "nico.homystack.com/v1alpha1",
      kind: "KubernetesCluster",
      // With the finalizer, as NICO's mutating webhook adds it at admission (the benchmark runs NICO without
      // its webhook): otherwise NICO's first pass would be a finalizer patch no real install makes.
      metadata: {
        name,
        namespace: ns,
        finalizers: [FINALIZER],
        ...(shard ? { labels: { [SHARD_LABEL]: shard } } : {}),
      },
      spec: clusterSpec(machineNames(name, m), cp, gitRepo),
    });
  });
}

export async function waitHttp(url: string, proc: Guarded, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const ok = await fetch(url).then(async (r) => (await r.body?.cancel(), r.ok), () => false);
    if (ok) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${proc.name} not ready at ${url} within ${timeoutMs / 1000}s:\n${await proc.tail(20)}`);
}

/** CPU seconds of several processes at once. */
export async function cpuOf(pids: Record<string, number | undefined>): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const [k, pid] of Object.entries(pids)) out[k] = pid === undefined ? NaN : (await cpuSeconds(pid)) ?? NaN;
  out.machine = await machineBusySeconds();
  return out;
}

/** CPU seconds and cores used per process over a window; `others` is the rest of the machine (other people's work). */
export function cpuDelta(a: Record<string, number>, b: Record<string, number>, wallS: number) {
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
export function httpVerb(key: string): string {
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
export async function apiserverMetrics(client: KubeClient): Promise<Sample[]> {
  return parseMetrics(await client.getText("/metrics"));
}

/** Deltas of the API server's request and watch counters over a window (all clients, not only NICO). */
export function apiserverWork(before: Sample[], after: Sample[], clusters: number) {
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
