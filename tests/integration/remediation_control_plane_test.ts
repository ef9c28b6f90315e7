/**
 * Self-healing control planes on real API servers (a kube-apiserver per
 * workload cluster, simulated kubelets, the simulated NIO): a dead member of
 * three is replaced by a spare without two members ever down at once (an
 * independent watcher on the workload cluster's Nodes and the simulator's
 * own record of switches proves it). With two of three dead: remediation_quorum_test.ts.
 */
import assert from "node:assert/strict";
import { CLUSTER_LABEL, REMEDIATED_ANNOTATION } from "../../core/contract/labels.ts";
import type { NioGeneration } from "../../core/contract/nio.ts";
import type { KubeNode } from "../../core/nodes/workload.ts";
import { NODES } from "../../lib/kube/resources.ts";
import { Informer } from "../../lib/runtime/informer.ts";
import { silentLogger } from "../../lib/runtime/log.ts";
import { sharedControlPlane } from "../../testing/helpers.ts";
import { condition, type Scenario, startScenario } from "../../testing/scenario.ts";
import { changingSwitches, switchWindows } from "../../testing/switches.ts";
import { controlPlaneCluster, killKubelet, machineOf, remediationEvents, settled } from "../remediation_kit.ts";

const env = sharedControlPlane();

/**
 * Watches the workload cluster's control-plane Nodes: how many members were down at once (a Node that was
 * Ready and is not; a joining Node that was never Ready is no member yet), and when each Node went.
 */
function nodeWatcher(s: Scenario) {
  const informer = new Informer<KubeNode>(s.workload().client, NODES, { logger: silentLogger, resyncMs: 0 });
  let worst: string[] = [];
  const wasReady = new Set<string>();
  const deletedAt = new Map<string, number>();
  const ready = (x: KubeNode) => x.status?.conditions?.find((c) => c.type === "Ready")?.status === "True";
  informer.onEvent((type, n) => {
    if (type === "delete") deletedAt.set(n.metadata.name, Date.now());
    const cps = informer.filter((x) => x.metadata.labels?.["node-role.kubernetes.io/control-plane"] !== undefined);
    for (const x of cps) if (ready(x)) wasReady.add(x.metadata.name);
    const down = cps.filter((x) => wasReady.has(x.metadata.name) && !ready(x)).map((x) => x.metadata.name);
    if (down.length > worst.length) worst = down;
  });
  return { informer, deletedAt, worst: () => worst };
}

for (const generation of ["v1", "older"] as NioGeneration[]) {
  Deno.test({
    name: `NIO ${generation}: a dead member of three is replaced by a spare, never two members down at once`,
    sanitizeResources: false,
    sanitizeOps: false,
    fn: async () => {
      const cp = await env.get();
      await using s = await startScenario(cp, `heal-cp-${generation}`, {
        hostBlock: generation === "v1" ? 56 : 57,
        generation,
      });
      await controlPlaneCluster(s);
      const watcher = nodeWatcher(s);
      watcher.informer.start();
      await watcher.informer.synced();
      const died = Date.now();
      await killKubelet(s, "cp-2");
      const healed = await s.until(
        "cp-4 Ready in cp-2's place, settled",
        (c) => settled(c) && (c.status?.controlPlane?.readyMachines ?? []).join() === "cp-1,cp-3,cp-4",
        120_000,
      );
      await watcher.informer.stop();
      console.log(`NIO ${generation}: control plane whole again ${((Date.now() - died) / 1000).toFixed(1)} s after`);
      assert.equal(condition(healed, "Remediating")?.reason, "NoUnhealthyNodes");
      const cp2 = await machineOf(s, "cp-2");
      assert.match(cp2.metadata.annotations?.[REMEDIATED_ANNOTATION] ?? "", /^c\/control-plane at \S+: NodeNotReady/);
      assert.equal(cp2.metadata.labels?.[CLUSTER_LABEL], undefined, "cp-2 released");
      // The independent witnesses: the workload Nodes, and what the simulated hosts ran.
      assert.ok(watcher.worst().length <= 1, `control-plane members down at once: ${watcher.worst()}`);
      const gone = watcher.deletedAt.get("cp-2");
      assert.ok(gone, "cp-2's Node was never deleted");
      const windows = changingSwitches(switchWindows(s.nio.history)).filter((w) => w.start >= died);
      const spareFirst = windows.find((w) => w.config === "c.cp-4")!;
      const removal = windows.find((w) => w.config === "c.cp-2" && w.removal);
      const live = windows.filter((w) => (w.config === "c.cp-1" || w.config === "c.cp-3") && !w.removal);
      assert.ok(spareFirst, "the spare never switched");
      if (removal) assert.ok(spareFirst.start < removal.start, "cp-2 left before its replacement joined (3 → 4 → 3)");
      assert.ok(live.length >= 2, `the live members never took the new member list: ${JSON.stringify(windows)}`);
      for (const w of live) {
        assert.ok(w.start > gone!, `${w.config} switched while cp-2's Node (and etcd member) was still there`);
      }
      const reasons = (await remediationEvents(s)).map((e) => e.reason);
      assert.ok(reasons.includes("RemediationStarted") && reasons.includes("RemediationFinished"), `${reasons}`);
    },
  });
}
