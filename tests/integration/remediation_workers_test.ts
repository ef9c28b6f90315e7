/**
 * Self-healing workers on real API servers (a kube-apiserver per workload
 * cluster, simulated kubelets, the simulated NIO of either generation): a
 * worker whose kubelet stops for good is taken out of service and replaced
 * by a free Machine of the selector; above maxUnhealthy nothing happens; with
 * no spare the dead worker still leaves and the plane says it is short.
 */
import assert from "node:assert/strict";
import { KUBERNETES_CLUSTERS } from "../../crds/kubernetescluster.ts";
import { CLUSTER_LABEL, REMEDIATED_ANNOTATION } from "../../core/contract/labels.ts";
import { type Machine, MACHINES, type NioGeneration, NIXOS_CONFIGURATIONS } from "../../core/contract/nio.ts";
import { NODES } from "../../lib/kube/resources.ts";
import type { KubeNode } from "../../core/nodes/workload.ts";
import { eventually, sharedControlPlane } from "../../testing/helpers.ts";
import { condition, type Scenario, startScenario } from "../../testing/scenario.ts";
import { killKubelet, machineOf, remediationEvents, settled } from "../remediation_kit.ts";

const env = sharedControlPlane();
const REPO = "https://git.example.test/v1.git";
const TIMEOUT_S = 4;
/** For two nodes that must be unhealthy at once. */
const BOTH_TIMEOUT_S = 12;

/** cp-1 by name; workers by selector, `count` of them from the Machines `workers` (the rest are spares). */
async function workerCluster(s: Scenario, workers: string[], count: number, remediation: Record<string, unknown>) {
  await s.machines(["cp-1"]);
  await s.machines(workers, {}, { role: "worker" });
  await s.client.create(KUBERNETES_CLUSTERS, {
    metadata: { name: "c", namespace: s.ns },
    spec: {
      gitRepo: REPO,
      controlPlane: { machines: ["cp-1"] },
      dataPlane: { machineSelector: { matchLabels: { role: "worker" } }, count, remediation },
    },
  });
  return await s.until("Ready", settled, 90_000);
}

for (const generation of ["v1", "older"] as NioGeneration[]) {
  Deno.test({
    name: `NIO ${generation}: a worker whose kubelet stops for good is replaced by a spare`,
    sanitizeResources: false,
    sanitizeOps: false,
    fn: async () => {
      const cp = await env.get();
      await using s = await startScenario(cp, `heal-${generation}`, {
        hostBlock: generation === "v1" ? 51 : 52,
        generation,
      });
      await workerCluster(s, ["w-1", "w-2", "w-3"], 2, { nodeNotReadyTimeout: `${TIMEOUT_S}s` });
      const died = Date.now();
      await killKubelet(s, "w-1");
      // The older NIO lets go of a Machine at once: Remediating may be True for less than a poll there.
      const watching = generation === "v1"
        ? s.until("Remediating=True", (c) => condition(c, "Remediating")?.status === "True", 90_000)
        : undefined;
      // Witnessed in the workload cluster itself (the status coalesces progress for up to 10 s).
      await eventually(
        "w-3's Node Ready",
        async () => {
          const n = await s.workload().client.get<KubeNode>(NODES, "w-3");
          return n?.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True");
        },
        90_000,
        100,
      );
      const spareReadyS = (Date.now() - died) / 1000;
      console.log(`NIO ${generation}: spare's Node Ready ${spareReadyS.toFixed(1)} s after the kubelet stopped`);
      // The timeout, then one rollout step (the spare's apply and join), with room for a loaded machine.
      assert.ok(spareReadyS < TIMEOUT_S + 20, `took ${spareReadyS} s`);
      await watching;
      const after = await s.until("settled again, w-1 released", settled, 90_000);
      const w1 = await machineOf(s, "w-1");
      assert.equal(w1.metadata.labels?.[CLUSTER_LABEL], undefined, "w-1 released");
      assert.match(
        w1.metadata.annotations?.[REMEDIATED_ANNOTATION] ?? "",
        /^c\/worker at \S+: NodeNotReady: Node w-1/,
      );
      assert.deepEqual(after.status?.dataPlane?.readyMachines, ["w-2", "w-3"]);
      assert.equal(condition(after, "Remediating")?.reason, "NoUnhealthyNodes");
      assert.equal(await s.workload().client.get(NODES, "w-1"), undefined, "w-1's Node deleted");
      const events = await remediationEvents(s);
      const started = events.find((e) => e.reason === "RemediationStarted");
      assert.match(
        started?.message ?? "",
        /took Machine w-1 out of service \(NodeNotReady: .*\); w-3 takes its place/,
      );
      assert.ok(events.some((e) => e.reason === "RemediationFinished" && /w-1/.test(e.message)), "finished");
      // Out of service for good: a later pass does not take it back, even though it is free and matches.
      await s.settled();
      assert.equal((await machineOf(s, "w-1")).metadata.labels?.[CLUSTER_LABEL], undefined);
    },
  });
}

Deno.test({
  name: "above maxUnhealthy nothing is remediated, and the condition says why",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const cp = await env.get();
    await using s = await startScenario(cp, "heal-many", { hostBlock: 53 });
    await workerCluster(s, ["w-1", "w-2", "w-3", "w-4"], 3, {
      nodeNotReadyTimeout: `${BOTH_TIMEOUT_S}s`,
      maxUnhealthy: 1,
    });
    const died = Date.now();
    // Both die together: on a loaded machine two kills in a row can be seconds apart, and with a short timeout
    // the first would be judged (and rightly replaced) alone before the second is NotReady at all.
    await Promise.all([killKubelet(s, "w-1"), killKubelet(s, "w-2")]);
    const refused = await s.until(
      "TooManyUnhealthy",
      (c) => condition(c, "Remediating")?.reason === "TooManyUnhealthy",
      60_000,
    );
    // Node conditions carry whole seconds: the transition may be stamped up to a second before it happened.
    assert.ok(Date.now() - died >= (BOTH_TIMEOUT_S - 1) * 1000, "judged before the timeout");
    assert.match(
      condition(refused, "Remediating")!.message,
      /2 of 3 worker nodes are unhealthy, more than maxUnhealthy allows \(1: 1\).*bring them back/,
    );
    await s.settled();
    for (const m of ["w-1", "w-2", "w-3", "w-4"]) {
      assert.equal((await machineOf(s, m)).metadata.annotations?.[REMEDIATED_ANNOTATION], undefined, m);
    }
    assert.equal((await machineOf(s, "w-4")).metadata.labels?.[CLUSTER_LABEL], undefined, "the spare stays free");
    assert.ok((await remediationEvents(s)).some((e) => e.reason === "RemediationRefused"));
  },
});

Deno.test({
  name: "no spare: the dead worker still leaves, the plane is Underprovisioned and says so, a new Machine fills it",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const cp = await env.get();
    await using s = await startScenario(cp, "heal-short", { hostBlock: 54 });
    await workerCluster(s, ["w-1", "w-2"], 2, { nodeNotReadyTimeout: `${TIMEOUT_S}s` });
    await killKubelet(s, "w-1");
    const short = await s.until(
      "NoSpare, the plane Underprovisioned",
      (c) =>
        condition(c, "Remediating")?.reason === "NoSpare" &&
        condition(c, "DataPlaneReady")?.reason === "Underprovisioned",
      90_000,
    );
    assert.deepEqual(short.status?.dataPlane?.machines, ["w-2"]);
    assert.match(
      condition(short, "Remediating")!.message,
      /the worker plane is Underprovisioned \(1 of 2\): w-1 is out of service and no free Machine matches role=worker/,
    );
    assert.match(condition(short, "MachinesAvailable")!.message, /Machine w-1 is out of service/);
    assert.equal(short.status?.dataPlane?.summary, "1/2");
    // A Machine added to the pool later fills the place.
    await s.machines(["w-3"], {}, { role: "worker" });
    const full = await s.until("w-3 fills it", (c) => settled(c) && c.status?.dataPlane?.summary === "2/2", 90_000);
    assert.deepEqual(full.status?.dataPlane?.readyMachines, ["w-2", "w-3"]);
    assert.equal(condition(full, "Remediating")?.reason, "NoUnhealthyNodes");
  },
});

Deno.test({
  name: "a person's mark takes a Machine out of service too, and clearing it returns the Machine to the pool",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const cp = await env.get();
    await using s = await startScenario(cp, "heal-hand", { hostBlock: 55 });
    await workerCluster(s, ["w-1", "w-2", "w-3"], 2, {});
    await s.client.mergePatch(MACHINES, "w-2", s.ns, {
      metadata: { annotations: { [REMEDIATED_ANNOTATION]: "fan noise, ticket 12" } },
    });
    const swapped = await s.until(
      "w-3 in w-2's place",
      (c) => settled(c) && (c.status?.dataPlane?.readyMachines ?? []).join() === "w-1,w-3",
      90_000,
    );
    assert.equal(condition(swapped, "Remediating")?.reason, "NoUnhealthyNodes");
    await eventually("w-2 released", async () => !(await machineOf(s, "w-2")).metadata.labels?.[CLUSTER_LABEL]);
    // Cleared: free again, but the plane is full, so nothing moves (selection is sticky).
    await s.client.mergePatch<Machine>(MACHINES, "w-2", s.ns, {
      metadata: { annotations: { [REMEDIATED_ANNOTATION]: null } },
    });
    await s.settled();
    const cfgs = await s.client.list(NIXOS_CONFIGURATIONS, { namespace: s.ns });
    assert.deepEqual(cfgs.items.map((c) => c.metadata.name).sort(), ["c.cp-1", "c.w-1", "c.w-3"]);
  },
});
