/**
 * A restore of etcd against its minimum (prints figures; not a timed test): a cluster of 1 + 2 and one of 3 + 2 on
 * the simulated NIO with real etcd members, a real store (versitygw) and the real `etcdutl`, backed up, every
 * control-plane host's member killed with its data, then a restore of the latest backup asked for. Measured from
 * the request: until `status.restore` says Succeeded, and until the cluster is Ready again with every member healthy
 * (the nodes get their normal configuration back after the restore: one more ordered roll of the control plane).
 * Its minimum is the sum of the control-plane applies it must wait for, one after the other (the bootstrap node's
 * restore, each rejoin, then each node's return to its normal configuration), each as long as the simulated NIO
 * took for it (from its start to its end, as its history says). The rest is NICO: seeing each step, the next one.
 *
 * Run: deno task bench:restore [--apply-ms 1000] [--nio v1|older]
 *
 * @module
 */
import { parseArgs } from "node:util";
import { KUBERNETES_CLUSTERS, type KubernetesCluster } from "../crds/kubernetescluster.ts";
import type { NioGeneration } from "../core/contract/nio.ts";
import { startControlPlane } from "../testing/envtest/controlplane.ts";
import { condition, type Scenario, startScenario } from "../testing/scenario.ts";
import { startS3Server } from "../testing/s3.ts";
import { BACKUP_REQUEST_ANNOTATION } from "../core/contract/labels.ts";
import { SECRETS } from "../lib/kube/resources.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: { "apply-ms": { type: "string", default: "1000" }, nio: { type: "string", default: "v1" } },
});
const applyMs = Number(values["apply-ms"]);
const generation = values.nio as NioGeneration;

const settled = (members: number) => (c: KubernetesCluster) =>
  c.status?.observedGeneration === c.metadata.generation && c.status?.phase === "Ready" &&
  condition(c, "UpToDate")?.status === "True" && condition(c, "EtcdHealthy")?.reason === "Healthy" &&
  c.status?.etcd?.healthyVoters === members && c.status.etcd.members.length === members;
const sec = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** The applies of `machines` that ended after `from`, each from its start to its end, one per spec. */
function appliesSince(s: Scenario, machines: string[], from: number): number[] {
  const started = new Map<string, number>();
  const out: number[] = [];
  for (const e of s.nio.history.filter((e) => e.at >= from)) {
    if (!machines.some((m) => e.name.endsWith(`.${m}`))) continue;
    const key = `${e.name}/${e.specHash}`;
    if (e.kind === "apply-started" && !started.has(key)) started.set(key, e.at);
    if (e.kind === "applied" && started.has(key)) {
      out.push(e.at - started.get(key)!);
      started.delete(key);
    }
  }
  return out;
}

/** One size: bring-up, a backup, every control-plane member lost, the restore; prints its figures. */
async function drill(cp: Awaited<ReturnType<typeof startControlPlane>>, cps: number, block: number) {
  const CP = Array.from({ length: cps }, (_, i) => `cp-${i + 1}`);
  const s = await startScenario(cp, `bench-restore-${cps}`, { hostBlock: block, applyDelayMs: applyMs, generation });
  await using store = await startS3Server({ host: `127.0.${block}.250`, buckets: ["etcd"] });
  try {
    const keys = { accessKeyId: store.accessKeyId, secretAccessKey: store.secretAccessKey };
    const data = Object.fromEntries(Object.entries(keys).map(([k, v]) => [k, btoa(v)]));
    await s.client.create(SECRETS, {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "s3", namespace: s.ns },
      data,
    });
    await s.createCluster({
      gitRepo: "https://git.example.test/flake.git",
      controlPlane: { machines: CP },
      dataPlane: { machines: ["w-1", "w-2"] },
      etcd: { backup: { store: { endpoint: store.endpoint, bucket: "etcd", credentialsSecret: { name: "s3" } } } },
    });
    await s.until(`Ready, etcd of ${cps}`, settled(cps), 300_000);
    await s.client.mergePatch(KUBERNETES_CLUSTERS, "c", s.ns, {
      metadata: { annotations: { [BACKUP_REQUEST_ANNOTATION]: "bench" } },
    });
    await s.until("backup taken", (c) => c.status?.etcd?.backups?.request === "bench", 120_000);
    for (const m of CP) await s.workloads.etcd.kill(s.ns, "c", m, true);
    await s.until("etcd lost", (c) => condition(c, "EtcdHealthy")?.reason === "EtcdUnreachable", 120_000);
    const load = (await Deno.readTextFile("/proc/loadavg")).split(" ").slice(0, 3).join(" ");
    const c = await s.client.get<KubernetesCluster>(KUBERNETES_CLUSTERS, "c", s.ns);
    const from = Date.now();
    await s.client.mergePatch(KUBERNETES_CLUSTERS, "c", s.ns, {
      spec: { etcd: { ...c!.spec.etcd, restore: { requestId: "bench", backup: "latest" } } },
    });
    await s.until("restored", (c) => c.status?.restore?.step === "Succeeded", 600_000);
    const restored = Date.now() - from;
    await s.until("Ready again", settled(cps), 600_000);
    const ready = Date.now() - from;
    const applies = appliesSince(s, CP, from);
    const minimum = applies.reduce((a, b) => a + b, 0);
    console.log(
      `${cps} + 2 cluster, every control-plane member lost, NIO ${generation}, simulated apply ${applyMs} ms`,
    );
    console.log(
      `  control-plane applies waited for: ${applies.length} (floor ${2 * cps}: restore or rejoin, then back)`,
    );
    console.log(`  minimum (those applies, one after the other): ${sec(minimum)}`);
    console.log(
      `  request → Succeeded: ${sec(restored)}; request → Ready: ${sec(ready)}, ${(ready / minimum).toFixed(2)}×`,
    );
    console.log(`  load average before: ${load}`);
  } finally {
    await s[Symbol.asyncDispose]();
  }
}

const cp = await startControlPlane();
try {
  await drill(cp, 1, 205);
  await drill(cp, 3, 206);
} finally {
  await cp.stop();
}
