/**
 * Drains on real API servers (the workload cluster runs kube-controller-manager's
 * disruption controller, so PodDisruptionBudgets are enforced by the Eviction
 * API as in a real cluster): the rollout waits on a budget, proceeds when the
 * budget allows, and uncordons. Departed Nodes: workload_departed_test.ts;
 * outages: workload_outage_test.ts.
 */
import assert from "node:assert/strict";
import { EVENTS, NAMESPACES, NODES, PDBS, PODS } from "../../lib/kube/resources.ts";
import { KUBERNETES_CLUSTERS } from "../../crds/kubernetescluster.ts";
import { NIXOS_CONFIGURATIONS } from "../../core/contract/nio.ts";
import type { KubeClient, KubeObject } from "../../lib/kube/client.ts";
import { configName } from "../../core/contract/names.ts";
import type { NixosConfiguration } from "../../core/contract/nio.ts";
import type { KubeNode, KubePod } from "../../core/nodes/workload.ts";
import { eventually, sharedControlPlane } from "../../testing/helpers.ts";
import { condition, type Scenario, startScenario } from "../../testing/scenario.ts";
import { TERMINATION_HOLD_ANNOTATION } from "../../testing/kubelet.ts";
import { readCluster } from "../../cli/observe.ts";
import { renderPlan } from "../../cli/plan.ts";

import { settled, V1, V2, webPod } from "../workload_kit.ts";

const env = sharedControlPlane();

/** A 1 + 2 cluster at rest with a PodDisruptionBudget (minAvailable 1) over web-1 on w-1, which terminates slowly. */
async function budgetedCluster(s: Scenario): Promise<KubeClient> {
  await s.createCluster({ gitRepo: V1, controlPlane: { machines: ["cp-1"] }, dataPlane: { machines: ["w-1", "w-2"] } });
  await s.until("Ready", settled, 90_000);
  const wl = s.workload().client;
  await wl.create(NAMESPACES, { metadata: { name: "apps" } });
  await wl.create(PDBS, {
    metadata: { name: "web", namespace: "apps" },
    spec: { minAvailable: 1, selector: { matchLabels: { app: "web" } } },
  });
  // web-1 stays terminating once evicted until the test lets it go, as a slow pod would.
  await webPod(wl, "web-1", "w-1", { [TERMINATION_HOLD_ANNOTATION]: "true" });
  await eventually("the budget to count web-1 healthy", async () => {
    const pdb = await wl.get<{ metadata: { name: string }; status?: { currentHealthy?: number } }>(PDBS, "web", "apps");
    return pdb?.status?.currentHealthy === 1;
  }, 30_000);
  return wl;
}

/** The gitRepo changes: the rollout waits on the budget with w-1 cordoned, says so everywhere, and moves nothing. */
async function waitsOnTheBudget(s: Scenario, wl: KubeClient): Promise<void> {
  await s.client.mergePatch(KUBERNETES_CLUSTERS, "c", s.ns, { spec: { gitRepo: V2 } });
  // The refusal and the cordon reach the status from two views (the drain, the Node watch): wait for both.
  const waiting = await s.until(
    "the rollout to wait on the budget, w-1 cordoned",
    (c) =>
      /eviction refused for apps\/web-1 \(PodDisruptionBudget/.test(condition(c, "RollingOut")?.message ?? "") &&
      /cordoned: w-1 \(drained by NICO/.test(condition(c, "NodesHealthy")?.message ?? ""),
    30_000,
  );
  assert.equal(condition(waiting, "RollingOut")?.status, "True");
  assert.match(condition(waiting, "RollingOut")!.message, /PodDisruptionBudget apps\/web: needs 1 healthy/);
  assert.match(condition(waiting, "NodesHealthy")!.message, /cordoned: w-1 \(drained by NICO/);
  // The hold is in the status, so `nico plan` (the pure planner over the stored status) shows it.
  const held = waiting.status?.rollout?.draining ?? [];
  assert.deepEqual(held.map((d) => [d.node, d.state]), [["w-1", "Draining"]]);
  assert.match(held[0]!.message, /^draining w-1: eviction refused for apps\/web-1 \(PodDisruptionBudget apps\/web: /);
  const view = await readCluster(s.client, s.ns, "c", new Date());
  assert.match(renderPlan(view!, { color: false, width: Infinity }), /^w-1 held: draining w-1: eviction refused/m);
  await budgetEvents(s);
  await s.settled(); // a later pass, with the budget unchanged, moves nothing either
  assert.deepEqual([await repo(s, "w-1"), await repo(s, "w-2"), await repo(s, "cp-1")], [V1, V1, V1], "nothing moved");
  assert.ok(await wl.get(PODS, "web-1", "apps"), "the budget kept web-1");
  assert.equal((await wl.get<KubeNode>(NODES, "w-1"))?.spec?.unschedulable, true);
}

/** The wait and the cordon are Events too, naming the budget. */
async function budgetEvents(s: Scenario): Promise<void> {
  type Event = KubeObject & { reason?: string; note?: string };
  const told = await eventually("NodeCordoned and DrainWaiting Events", async () => {
    const events = (await s.client.list<Event>(EVENTS, { namespace: s.ns })).items;
    const cordon = events.find((e) => e.reason === "NodeCordoned" && e.note?.includes("Node w-1 "));
    const wait = events.find((e) => e.reason === "DrainWaiting" && /PodDisruptionBudget apps\/web/.test(e.note ?? ""));
    return cordon && wait ? { cordon, wait } : undefined;
  }, 30_000);
  assert.equal(told.cordon.note, "cordoned Node w-1 to drain it: its configuration changes");
  assert.match(told.wait.note!, /^draining w-1: eviction refused for apps\/web-1 \(PodDisruptionBudget apps\/web: /);
}

/** The gitRepo node `m`'s configuration carries. */
const repo = async (s: Scenario, m: string) =>
  (await s.client.get<NixosConfiguration>(NIXOS_CONFIGURATIONS, configName("c", m), s.ns))!.spec.gitRepo;

/**
 * A second healthy pod lets the budget allow one eviction: web-1 is evicted and terminates slowly, and w-1 waits
 * for it; once it finished, w-1 updates and is uncordoned.
 */
async function proceedsWhenAllowed(s: Scenario, wl: KubeClient): Promise<void> {
  await webPod(wl, "web-2", "w-2");
  await eventually(
    "web-1 evicted",
    async () => (await wl.get<KubePod>(PODS, "web-1", "apps"))?.metadata.deletionTimestamp,
  );
  await s.until(
    "the rollout to wait for web-1 to terminate",
    (c) => /waiting for apps\/web-1 to terminate/.test(condition(c, "RollingOut")?.message ?? ""),
    30_000,
  );
  await s.settled();
  assert.equal(await repo(s, "w-1"), V1, "an accepted eviction is not a drained node: web-1 still runs");
  // web-1 finishes: w-1 is drained and updates.
  await wl.mergePatch(PODS, "web-1", "apps", { metadata: { annotations: { [TERMINATION_HOLD_ANNOTATION]: null } } });
  await eventually("w-1 updated", async () => await repo(s, "w-1") === V2, 30_000);
  assert.equal(await wl.get(PODS, "web-1", "apps"), undefined, "web-1 was evicted");
  await eventually(
    "w-1 uncordoned",
    async () => (await wl.get<KubeNode>(NODES, "w-1"))?.spec?.unschedulable !== true,
    30_000,
  );
}

Deno.test({
  name: "a drain honours a PodDisruptionBudget: the rollout waits, proceeds when the budget allows, and uncordons",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await using s = await startScenario(await env.get(), "pdb", { hostBlock: 33, controllers: ["disruption"] });
    const wl = await budgetedCluster(s);
    await waitsOnTheBudget(s, wl);
    await proceedsWhenAllowed(s, wl);
    // w-2 then needs another home for web-2 before it can drain.
    await webPod(wl, "web-3", "w-1");
    const done = await s.until("Ready on V2", (c) => settled(c) && condition(c, "UpToDate")?.status === "True", 60_000);
    assert.equal(done.status!.dataPlane!.ready, 2);
    assert.equal(done.status!.rollout?.draining, undefined, "no hold is left in the status");
    for (const n of ["cp-1", "w-1", "w-2"]) {
      const node = await wl.get<KubeNode>(NODES, n);
      assert.notEqual(node?.spec?.unschedulable, true, `${n} is left cordoned`);
      assert.equal(node?.metadata.annotations?.["nico.homystack.com/drain-started"], undefined);
    }
  },
});
