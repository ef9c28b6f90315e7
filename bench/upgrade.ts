/**
 * A chained Kubernetes upgrade against its minimum (prints figures; not a
 * timed test): a cluster of 3 control-plane nodes and 3 workers on the
 * simulated NIO with real workload API servers goes from 1.30 to 1.33 with
 * `spec.version`. Its minimum is the sum of the node applies it must wait
 * for, one after the other: the three control-plane nodes at each of the three
 * minors, then the workers `maxUnavailable` at a time, each apply as long as
 * the simulated NIO took for it (from its start to its end, as its history
 * says). The rest is NICO: seeing each node report its version, the next step.
 * An independent watcher (testing/skew_watcher.ts) counts breaks of the skew policy.
 *
 * Run: deno task bench:upgrade [--apply-ms 1000] [--nio v1|older]
 *
 * @module
 */
import { parseArgs } from "node:util";
import { KUBERNETES_CLUSTERS, type KubernetesCluster } from "../crds/kubernetescluster.ts";
import type { NioGeneration } from "../core/contract/nio.ts";
import { startControlPlane } from "../testing/envtest/controlplane.ts";
import { condition, startScenario } from "../testing/scenario.ts";
import { skewWatcher } from "../testing/skew_watcher.ts";

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
  const from = Date.now();
  await s.client.mergePatch(KUBERNETES_CLUSTERS, "c", s.ns, { spec: { version: "1.33" } });
  await s.until("Ready at 1.33", readyAt("1.33.0"), 900_000);
  const total = Date.now() - from;
  await watch.stop();
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
  console.log(`  skew policy breaks seen by the watcher: ${watch.breaks.length} (judged ${watch.judged} times)`);
} finally {
  await s[Symbol.asyncDispose]();
  await cp.stop();
}
