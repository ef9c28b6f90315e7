/**
 * Drains, departed Nodes and workload API outages, on real API servers (the
 * workload cluster runs kube-controller-manager's disruption controller, so
 * PodDisruptionBudgets are enforced by the Eviction API as in a real cluster).
 */
import assert from "node:assert/strict";
import type { KubernetesCluster } from "../../crds/kubernetescluster.ts";
import { EVENTS, NAMESPACES, NODES, PDBS, PODS } from "../../lib/kube/resources.ts";
import { KUBERNETES_CLUSTERS } from "../../crds/kubernetescluster.ts";
import { NIXOS_CONFIGURATIONS } from "../../core/contract/nio.ts";
import type { KubeClient, KubeObject } from "../../lib/kube/client.ts";
import { configName } from "../../core/contract/names.ts";
import type { NixosConfiguration } from "../../core/contract/nio.ts";
import type { KubeNode, KubePod } from "../../core/nodes/workload.ts";
import { eventually, sharedControlPlane } from "../../testing/helpers.ts";
import { condition, startScenario } from "../../testing/scenario.ts";
import { TERMINATION_HOLD_ANNOTATION } from "../../testing/kubelet.ts";
import { readCluster } from "../../cli/observe.ts";
import { renderPlan } from "../../cli/plan.ts";

const env = sharedControlPlane();
const V1 = "https://git.example.test/v1.git";
const V2 = "https://git.example.test/v2.git";

const settled = (c: KubernetesCluster) =>
  c.status?.observedGeneration === c.metadata.generation && c.status?.phase === "Ready" &&
  condition(c, "WorkloadAPIAvailable")?.status === "True" && condition(c, "NodesHealthy")?.status === "True" &&
  condition(c, "UpToDate")?.status === "True";

function webPod(client: KubeClient, name: string, node: string, annotations: Record<string, string> = {}) {
  return client.create<KubePod>(PODS, {
    metadata: { name, namespace: "apps", labels: { app: "web" }, annotations },
    spec: { nodeName: node, containers: [{ name: "c", image: "registry.invalid/none" }] },
  } as KubePod);
}

Deno.test({
  name: "a drain honours a PodDisruptionBudget: the rollout waits, proceeds when the budget allows, and uncordons",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const cp = await env.get();
    await using s = await startScenario(cp, "pdb", { hostBlock: 33, controllers: ["disruption"] });
    await s.createCluster({
      gitRepo: V1,
      controlPlane: { machines: ["cp-1"] },
      dataPlane: { machines: ["w-1", "w-2"] },
    });
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
      const pdb = await wl.get<{ metadata: { name: string }; status?: { currentHealthy?: number } }>(
        PDBS,
        "web",
        "apps",
      );
      return pdb?.status?.currentHealthy === 1;
    }, 30_000);

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
    assert.match(
      held[0]!.message,
      /^draining w-1: eviction refused for apps\/web-1 \(PodDisruptionBudget apps\/web: /,
    );
    const view = await readCluster(s.client, s.ns, "c", new Date());
    assert.match(renderPlan(view!, { color: false, width: Infinity }), /^w-1 held: draining w-1: eviction refused/m);
    // The wait and the cordon are Events too, naming the budget.
    type Event = KubeObject & { reason?: string; note?: string };
    const told = await eventually("NodeCordoned and DrainWaiting Events", async () => {
      const events = (await s.client.list<Event>(EVENTS, { namespace: s.ns })).items;
      const cordon = events.find((e) => e.reason === "NodeCordoned" && e.note?.includes("Node w-1 "));
      const wait = events.find((e) =>
        e.reason === "DrainWaiting" && /PodDisruptionBudget apps\/web/.test(e.note ?? "")
      );
      return cordon && wait ? { cordon, wait } : undefined;
    }, 30_000);
    assert.equal(told.cordon.note, "cordoned Node w-1 to drain it: its configuration changes");
    assert.match(
      told.wait.note!,
      /^draining w-1: eviction refused for apps\/web-1 \(PodDisruptionBudget apps\/web: /,
    );
    await s.settled(); // a later pass, with the budget unchanged, moves nothing either
    const repo = async (m: string) =>
      (await s.client.get<NixosConfiguration>(NIXOS_CONFIGURATIONS, configName("c", m), s.ns))!.spec.gitRepo;
    assert.deepEqual([await repo("w-1"), await repo("w-2"), await repo("cp-1")], [V1, V1, V1], "nothing moved");
    assert.ok(await wl.get(PODS, "web-1", "apps"), "the budget kept web-1");
    assert.equal((await wl.get<KubeNode>(NODES, "w-1"))?.spec?.unschedulable, true);

    // A second healthy pod lets the budget allow one eviction: web-1 is evicted, and terminates slowly.
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
    assert.equal(await repo("w-1"), V1, "an accepted eviction is not a drained node: web-1 still runs");
    // web-1 finishes: w-1 is drained and updates.
    await wl.mergePatch(PODS, "web-1", "apps", {
      metadata: { annotations: { [TERMINATION_HOLD_ANNOTATION]: null } },
    });
    await eventually("w-1 updated", async () => await repo("w-1") === V2, 30_000);
    assert.equal(await wl.get(PODS, "web-1", "apps"), undefined, "web-1 was evicted");
    // w-2 then needs another home for web-2 before it can drain.
    await eventually(
      "w-1 uncordoned",
      async () => (await wl.get<KubeNode>(NODES, "w-1"))?.spec?.unschedulable !== true,
      30_000,
    );
    await webPod(wl, "web-3", "w-1");
    const done = await s.until(
      "Ready on V2",
      (c) => settled(c) && condition(c, "UpToDate")?.status === "True",
      60_000,
    );
    assert.equal(done.status!.dataPlane!.ready, 2);
    assert.equal(done.status!.rollout?.draining, undefined, "no hold is left in the status");
    for (const n of ["cp-1", "w-1", "w-2"]) {
      const node = await wl.get<KubeNode>(NODES, n);
      assert.notEqual(node?.spec?.unschedulable, true, `${n} is left cordoned`);
      assert.equal(node?.metadata.annotations?.["nico.homystack.com/drain-started"], undefined);
    }
  },
});

Deno.test({
  name: "scale-down deletes the departed machine's Node once NIO removed its configuration",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const cp = await env.get();
    await using s = await startScenario(cp, "depart", { hostBlock: 34 });
    await s.createCluster({
      gitRepo: V1,
      controlPlane: { machines: ["cp-1"] },
      dataPlane: { machines: ["w-1", "w-2"] },
    });
    await s.until("Ready", settled, 90_000);
    const wl = s.workload().client;
    assert.ok(await wl.get(NODES, "w-2"));
    await s.client.mergePatch(KUBERNETES_CLUSTERS, "c", s.ns, { spec: { dataPlane: { machines: ["w-1"] } } });
    await eventually("the Node w-2 deleted", async () => (await wl.get(NODES, "w-2")) === undefined, 60_000);
    const c = await s.until("Ready with one worker", (x) => settled(x) && x.status?.dataPlane?.ready === 1, 30_000);
    assert.deepEqual(c.status!.dataPlane!.machines, ["w-1"]);
    assert.equal(await s.client.get(NIXOS_CONFIGURATIONS, configName("c", "w-2"), s.ns), undefined);
    const nodes = (await wl.list<KubeNode>(NODES)).items.map((n) => n.metadata.name).sort();
    assert.deepEqual(nodes, ["cp-1", "w-1"]);
  },
});

Deno.test({
  name: "the workload API going away flips WorkloadAPIAvailable to False and back, with reconciles still finishing",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const cp = await env.get();
    await using s = await startScenario(cp, "outage", { hostBlock: 35 });
    await s.createCluster({ gitRepo: V1, controlPlane: { machines: ["cp-1"] }, dataPlane: { machines: ["w-1"] } });
    await s.until("Ready", settled, 90_000);
    await s.workloads.stopApi(s.ns, "c");
    const down = await s.until(
      "WorkloadAPIAvailable=False",
      (c) => condition(c, "WorkloadAPIAvailable")?.status === "False",
      15_000,
    );
    assert.equal(condition(down, "Ready")?.status, "False");
    assert.equal(condition(down, "Ready")?.reason, "WorkloadAPIUnavailable");
    assert.equal(condition(down, "NodesHealthy")?.status, "Unknown");
    // A spec change is still reconciled at once (nothing waits on the absent API); the rollout holds.
    await s.client.mergePatch(KUBERNETES_CLUSTERS, "c", s.ns, { spec: { gitRepo: V2 } });
    const held = await s.until(
      "the new generation observed while the API is away",
      (c) => c.status?.observedGeneration === c.metadata.generation,
      10_000,
    );
    assert.match(condition(held, "RollingOut")!.message, /workload API cannot be read/);
    const w1 = await s.client.get<NixosConfiguration>(NIXOS_CONFIGURATIONS, configName("c", "w-1"), s.ns);
    assert.equal(w1!.spec.gitRepo, V1, "no node is updated while the cluster cannot be observed");

    await s.workloads.startApi(s.ns, "c");
    await s.until(
      "WorkloadAPIAvailable=True",
      (c) => condition(c, "WorkloadAPIAvailable")?.status === "True",
      30_000,
    );
    await s.until("Ready on V2", (c) => settled(c) && condition(c, "UpToDate")?.status === "True", 60_000);
  },
});
