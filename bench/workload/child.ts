/**
 * One size of `bench/workload.ts`, in a process of its own (started with the Deployment's V8 flags): opens `n`
 * workload clusters as NICO keeps them (a connection from the cache: `/readyz` probe and Nodes; the `/version` of
 * its control-plane node; an etcd observer) against the API server and etcd member the parent runs, and prints one
 * JSON line of figures.
 *
 *   deno run -A --v8-flags=... bench/workload/child.ts <setup.json> <n>
 *
 * @module
 */
import { getHeapStatistics } from "node:v8";
import { WorkloadCache } from "../../controllers/cluster/workload/cache.ts";
import { EtcdObserver, type EtcdWatching } from "../../controllers/cluster/etcd/observer.ts";
import { etcdClientCertificate } from "../../controllers/cluster/etcd/trust.ts";
import { issueKubeconfig } from "../../core/render/kubeconfig.ts";
import type { KeyPair } from "../../lib/pki.ts";
import { silentLogger } from "../../lib/runtime/log.ts";
import { type Sample, sample } from "./procfs.ts";

export interface Setup {
  server: string;
  host: string;
  ca: KeyPair;
  etcdCa: KeyPair;
  etcdUrl: string;
  nodes: number;
  settleMs: number;
  /** Figures are taken after this long even if some clusters are not ready yet (their count is printed). */
  openTimeoutMs: number;
  /** Extra options of the cache (e.g. `maxOpen`, `maxWatches`). */
  cache: Record<string, number>;
}

const setup = JSON.parse(await Deno.readTextFile(Deno.args[0]!)) as Setup;
const n = Number(Deno.args[1]);
const gc = (globalThis as { gc?: () => void }).gc ?? (() => {});
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function measure(): Promise<Sample> {
  gc();
  await sleep(200);
  gc();
  return await sample();
}

const kubeconfigs: string[] = [];
const etcdCerts: KeyPair[] = [];
for (let i = 0; i < n; i += 50) {
  const k = Math.min(n, i + 50) - i;
  kubeconfigs.push(
    ...await Promise.all(Array.from({ length: k }, (_, j) => issueKubeconfig(`c${i + j}`, setup.server, setup.ca))),
  );
  etcdCerts.push(...await Promise.all(Array.from({ length: k }, () => etcdClientCertificate(setup.etcdCa))));
}
const cache = new WorkloadCache({
  onChange: () => {},
  log: silentLogger,
  policy: "loopback",
  maxOpen: n,
  ...setup.cache,
});
const observers: EtcdObserver[] = [];
const targets = [{ machine: "cp-0", host: setup.host }];
const endpoints = [{ host: setup.host, url: setup.etcdUrl }];
await sleep(1_000);
const before = await measure();

const t0 = performance.now();
function ready(i: number): boolean {
  const key = `bench/c${i}`;
  const v = cache.view(key, kubeconfigs[i]);
  const versions = cache.connection(key)?.apiServerVersions(targets);
  const etcd = observers[i]?.snapshot();
  return v.api.state === "Available" && v.nodes?.size === setup.nodes && versions?.get("cp-0")?.version !== undefined &&
    etcd?.members !== undefined;
}
for (let i = 0; i < n; i++) {
  ready(i);
  const obs = new EtcdObserver(setup.etcdCa, etcdCerts[i]!, {
    intervalMs: 10_000,
    timeoutMs: 2_000,
    policy: "loopback",
    onChange: () => {},
    idle: (key) => !cache.watching?.(key),
    rounds: (cache as { rounds?: EtcdWatching["rounds"] }).rounds,
    key: `bench/c${i}`,
    log: silentLogger,
  });
  obs.watch(endpoints);
  observers.push(obs);
}
let waiting = Array.from({ length: n }, (_, i) => i);
while (waiting.length && performance.now() - t0 < setup.openTimeoutMs) {
  waiting = waiting.filter((i) => !ready(i));
  if (waiting.length) await sleep(100);
}
const notReady = waiting.length;
const openMs = performance.now() - t0;
const open = await measure();
await sleep(setup.settleMs);
let readyAtEnd = 0;
for (let i = 0; i < n; i++) if (ready(i)) readyAtEnd++; // a pass reads every cluster, as NICO's resync does
const steady = await measure();
const watching = (cache as { watchingCount?: number }).watchingCount;
const heapLimit = getHeapStatistics().heap_size_limit;
console.log(JSON.stringify({ n, openMs, notReady, readyAtEnd, watching, before, open, steady, heapLimit }));
await Promise.all([cache.closeAll(), ...observers.map((o) => o.close())]);
