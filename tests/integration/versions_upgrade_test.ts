/**
 * Kubernetes upgrades with `spec.version`, on real workload API servers, for both NIO generations: one minor
 * goes to the control plane first although the order is WorkersFirst, and a jump over three minors is chained
 * through each, the control plane fully at each minor before the next, the workers last, while an independent
 * watcher (testing/skew_watcher.ts) judges the version skew policy at every change it sees.
 */
import assert from "node:assert/strict";
import type { KubernetesCluster } from "../../crds/kubernetescluster.ts";
import { KUBERNETES_CLUSTERS } from "../../crds/kubernetescluster.ts";
import type { NioGeneration } from "../../core/contract/nio.ts";
import { sharedControlPlane } from "../../testing/helpers.ts";
import { condition, type Scenario, startScenario } from "../../testing/scenario.ts";
import { kubeletMoves, skewWatcher } from "../../testing/skew_watcher.ts";

const env = sharedControlPlane();
const REPO = "https://git.example.test/flake.git";

/** Ready at `version`: every node runs the desired configuration and reports it. */
const readyAt = (version: string) => (c: KubernetesCluster) =>
  c.status?.observedGeneration === c.metadata.generation && c.status?.phase === "Ready" &&
  condition(c, "NodesHealthy")?.status === "True" && condition(c, "UpToDate")?.status === "True" &&
  c.status?.version === version;

/** Creates cluster `c` with `spec.version` and waits until it is Ready there. */
async function upAt(s: Scenario, cp: string[], workers: string[], version: string): Promise<void> {
  await s.createCluster({ gitRepo: REPO, version, controlPlane: { machines: cp }, dataPlane: { machines: workers } });
  const c = await s.until(`Ready at ${version}`, readyAt(`${version}.0`), 90_000);
  assert.deepEqual(
    (c.status?.versions?.nodes ?? []).map((n) => `${n.name} ${n.kubelet} ${n.asked}`),
    [...cp, ...workers].sort().map((m) => `${m} v${version}.0+sim ${version}`),
  );
}

for (const generation of ["v1", "older"] as NioGeneration[]) {
  Deno.test({
    name: `NIO ${generation}: 1.30 → 1.31 goes to the control plane first, whatever rollout.order says`,
    sanitizeResources: false,
    sanitizeOps: false,
    fn: async () => {
      const cp = await env.get();
      const s = await startScenario(cp, `minor-${generation}`, {
        hostBlock: generation === "v1" ? 71 : 72,
        generation,
      });
      try {
        await upAt(s, ["cp-1", "cp-2", "cp-3"], ["w-1", "w-2"], "1.30");
        const watch = await skewWatcher(s, ["cp-1", "cp-2", "cp-3"]);
        const from = Date.now();
        await s.client.mergePatch(KUBERNETES_CLUSTERS, "c", s.ns, { spec: { version: "1.31" } });
        const done = await s.until("Ready at 1.31", readyAt("1.31.0"), 120_000);
        await watch.stop();
        assert.equal(done.spec.rollout.order, "WorkersFirst");
        assert.deepEqual(kubeletMoves(watch, from), [
          "cp-2 1.31",
          "cp-3 1.31",
          "cp-1 1.31",
          "w-1 1.31",
          "w-2 1.31",
        ]);
        assert.deepEqual(watch.breaks, []);
        assert.ok(watch.judged >= 10, `the watcher judged ${watch.judged} times`);
        assert.equal(done.status?.versions?.target, "1.31");
        assert.equal(done.status?.versions?.chain, undefined);
        const table = await cp.kubectl(["get", "kcluster", "c", "-n", s.ns]);
        assert.match(table.stdout, /\bVERSION\b/);
        assert.match(table.stdout, /Ready\s+3\/3\s+2\/2\s+1\.31\.0\s/, table.stdout);
      } finally {
        await s[Symbol.asyncDispose]();
      }
    },
  });
}

Deno.test({
  name: "1.30 → 1.33 is chained through each minor, the control plane fully at each first, never breaking the policy",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const cp = await env.get();
    const s = await startScenario(cp, "chain", { hostBlock: 73 });
    const planes = ["cp-1", "cp-2", "cp-3"];
    try {
      await upAt(s, planes, ["w-1", "w-2"], "1.30");
      const watch = await skewWatcher(s, planes);
      const from = Date.now();
      await s.client.mergePatch(KUBERNETES_CLUSTERS, "c", s.ns, { spec: { version: "1.33" } });
      const mid = await s.until("the chain under way", (c) => (c.status?.versions?.chain?.length ?? 0) > 0, 60_000);
      assert.equal(mid.status?.versions?.target, "1.33");
      assert.match(condition(mid, "RollingOut")?.message ?? "", /the control plane goes to 1\.3[123]/);
      assert.match(condition(mid, "RollingOut")?.message ?? "", /the workers follow once it reports 1\.33/);
      const done = await s.until("Ready at 1.33", readyAt("1.33.0"), 240_000);
      await watch.stop();
      const cpOrder = ["cp-2", "cp-3", "cp-1"];
      assert.deepEqual(kubeletMoves(watch, from), [
        ...cpOrder.map((m) => `${m} 1.31`),
        ...cpOrder.map((m) => `${m} 1.32`),
        ...cpOrder.map((m) => `${m} 1.33`),
        "w-1 1.33",
        "w-2 1.33",
      ]);
      assert.deepEqual(watch.breaks, [], "the version skew policy broke at some instant");
      assert.ok(watch.judged >= 20, `the watcher judged ${watch.judged} times`);
      assert.deepEqual((done.status?.versions?.nodes ?? []).map((n) => n.apiServer ?? n.kubelet), [
        "v1.33.0+sim",
        "v1.33.0+sim",
        "v1.33.0+sim",
        "v1.33.0+sim",
        "v1.33.0+sim",
      ]);
    } finally {
      await s[Symbol.asyncDispose]();
    }
  },
});
