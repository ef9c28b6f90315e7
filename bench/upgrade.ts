/**
 * A chained Kubernetes upgrade against its minimum (prints figures; not a
 * timed test): a cluster of 3 control-plane nodes and 3 workers on the
 * simulated NIO with real workload API servers goes from 1.30 to 1.33 with
 * `spec.version`. Its minimum is the sum of the node applies it must wait
 * for, one after the other: the three control-plane nodes at each of the three
 * minors, then the workers `maxUnavailable` at a time, each apply as long as
 * the simulated NIO took for it (from its start to its end, as its history
 * says). The rest is NICO: seeing each node report its version, the next step.
 * An independent watcher (testing/skew_watcher.ts) counts breaks of the skew policy. The writes it costs: the
 * spec writes of the configurations (each moves `metadata.generation`: the changes, and on NIO v1 the schedule
 * brought forward and back), beside their floor, one per node and minor it runs.
 *
 * Targets (docs/benchmark.md): at most 2.0× the minimum on NIO v1, 1.5× on the older NIO.
 *
 * Run: deno task bench:upgrade [--apply-ms 1000] [--nio v1|older]
 *
 * @module
 */
import { parseArgs } from "node:util";
import { KUBERNETES_CLUSTERS, type KubernetesCluster } from "../crds/kubernetescluster.ts";
import { type NioGeneration, NIXOS_CONFIGURATIONS, type NixosConfiguration } from "../core/contract/nio.ts";
import { startControlPlane } from "../testing/envtest/controlplane.ts";
import { condition, startScenario } from "../testing/scenario.ts";
import { skewWatcher } from "../testing/skew_watcher.ts";
import { eventually } from "../testing/helpers.ts";
import { sameSchedule } from "../core/nodes/runs.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: { "apply-ms": { type: "string", default: "1000" }, nio: { type: "string", default: "v1" } },
});
const applyMs = Number(values["apply-ms"]);
const generation = values.nio as NioGeneration;
const CP = ["cp-1", "cp-2", "cp-3"];
const WORKERS = ["w-1", "w-2", "w-3"];

const readyAt = (version: string) => (c: KubernetesCluster) =>
  c.status?.observedGeneration === c.metadata.generation && c.status?.phase === "Ready" &&
  condition(c, "UpToDate")?.status === "True" && c.status?.version === version;

const cp = await startControlPlane();
const s = await startScenario(cp, "bench-upgrade", { hostBlock: 70, applyDelayMs: applyMs, generation });
try {
  await s.createCluster({
    gitRepo: "https://git.example.test/flake.git",
    version: "1.30",
    controlPlane: { machines: CP },
    dataPlane: { machines: WORKERS },
  });
  await s.until("Ready at 1.30", readyAt("1.30.0"), 180_000);
  const watch = await skewWatcher(s, CP);
  const configs = async () =>
    (await s.client.list<NixosConfiguration>(NIXOS_CONFIGURATIONS, { namespace: s.ns })).items;
  // Every node on its resting schedule (NIO v1 gets `* * * * *` while a node waits for its run).
  const atRest = async () => (await configs()).every((c) => sameSchedule(c.spec.dayTwoSchedule, undefined));
  const generations = async () => {
    return (await configs()).reduce((a, c) => a + (c.metadata.generation ?? 0), 0);
  };
  // At rest first (NIO v1: every node back on its own schedule), so the writes counted are the upgrade's.
  await eventually("schedules at rest", atRest, 120_000);
  const gen0 = await generations();
  const load = (await Deno.readTextFile("/proc/loadavg")).split(" ").slice(0, 3).join(" ");
  const from = Date.now();
  await s.client.mergePatch(KUBERNETES_CLUSTERS, "c", s.ns, { spec: { version: "1.33" } });
  await s.until("Ready at 1.33", readyAt("1.33.0"), 900_000);
  const total = Date.now() - from;
  await watch.stop();
  // The schedules go back to rest after the last step (NIO v1): count those writes too, once they are made.
  await eventually("schedules at rest", atRest, 60_000);
  const specWrites = await generations() - gen0;
  // Each switch the upgrade waited for: the first run of each new spec of a node, from its start to its end
  // (NIO v1 runs a spec again on its schedule afterwards: those are not waited for).
  const started = new Map<string, number>();
  const done = new Set<string>();
  const applies: number[] = [];
  for (const e of s.nio.history.filter((e) => e.at >= from)) {
    const key = `${e.name}/${e.specHash}`;
    if (done.has(key)) continue;
    if (e.kind === "apply-started" && !started.has(key)) started.set(key, e.at);
    if (e.kind === "applied" && started.has(key)) {
      applies.push(e.at - started.get(key)!);
      done.add(key);
    }
  }
  applies.sort((a, b) => a - b);
  const sum = applies.reduce((a, b) => a + b, 0);
  const mean = sum / Math.max(1, applies.length);
  // 3 minors × 3 control-plane nodes one at a time, then 3 workers one at a time (maxUnavailable 1).
  const waited = 3 * CP.length + WORKERS.length;
  const minimum = applies.length === waited ? sum : waited * mean;
  const sec = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  console.log(`3 + 3 cluster, 1.30 → 1.33 (spec.version), NIO ${generation}, simulated apply ${applyMs} ms`);
  console.log(
    `  node steps seen: ${applies.length} (apply mean ${sec(mean)}, min ${sec(applies[0] ?? 0)}, max ${
      sec(applies.at(-1) ?? 0)
    })`,
  );
  console.log(`  minimum (the ${waited} applies it must wait for, one after the other): ${sec(minimum)}`);
  console.log(
    `  measured: ${sec(total)}, ${(total / minimum).toFixed(2)}× the minimum; ${
      sec((total - minimum) / waited)
    } of NICO per step`,
  );
  const target = generation === "v1" ? 2.0 : 1.5;
  const ratio = total / minimum;
  console.log(`  target: ≤ ${target.toFixed(1)}× the minimum: ${ratio <= target ? "met" : "MISSED"}`);
  // The floor: one spec write per node and minor it goes through (control plane 3 minors, workers one step).
  const floorWrites = 3 * CP.length + WORKERS.length;
  console.log(`  configuration spec writes: ${specWrites} (floor ${floorWrites}: one per node step)`);
  console.log(`  skew policy breaks seen by the watcher: ${watch.breaks.length} (judged ${watch.judged} times)`);
  console.log(`  load average before: ${load}`);
} finally {
  await s[Symbol.asyncDispose]();
  await cp.stop();
}
