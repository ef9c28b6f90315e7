/**
 * Rollouts gated on the workload cluster, on real API servers: a node that
 * applies but never joins halts the rollout, and a slow rejoin holds the
 * next control-plane node back (an independent watcher on the workload
 * cluster's Nodes proves two control-plane Nodes were never NotReady at once).
 */
import assert from "node:assert/strict";
import type { KubernetesCluster } from "../../crds/kubernetescluster.ts";
import { NODES } from "../../lib/kube/resources.ts";
import { KUBERNETES_CLUSTERS } from "../../crds/kubernetescluster.ts";
import { MACHINES, NIXOS_CONFIGURATIONS } from "../../core/contract/nio.ts";
import { Informer } from "../../lib/runtime/informer.ts";
import { silentLogger } from "../../lib/runtime/log.ts";
import { configName } from "../../core/contract/names.ts";
import type { NixosConfiguration } from "../../core/contract/nio.ts";
import type { KubeNode } from "../../core/nodes/workload.ts";
import { sharedControlPlane } from "../../testing/helpers.ts";
import { condition, startScenario } from "../../testing/scenario.ts";
import { NODE_JOIN_ANNOTATION } from "../../testing/workload.ts";

const env = sharedControlPlane();
const V1 = "https://git.example.test/v1.git";
const V2 = "https://git.example.test/v2.git";

const settled = (c: KubernetesCluster) =>
  c.status?.observedGeneration === c.metadata.generation && c.status?.phase === "Ready" &&
  condition(c, "WorkloadAPIAvailable")?.status === "True" &&
  condition(c, "NodesHealthy")?.status === "True" && condition(c, "UpToDate")?.status === "True";

Deno.test({
  name: "a node that applies but never joins keeps the cluster out of Ready and halts the rollout there",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const cp = await env.get();
    await using s = await startScenario(cp, "join", { hostBlock: 31 });
    await s.createCluster({
      gitRepo: V1,
      controlPlane: { machines: ["cp-1"] },
      dataPlane: { machines: ["w-1", "w-2", "w-3"] },
      // Long enough for w-1's apply itself to finish on a loaded machine: the halt must be for its Node.
      rollout: { nodeTimeout: "15s" },
    });
    const ready = await s.until("Ready with the workload cluster healthy", settled);
    assert.equal(ready.status!.dataPlane!.ready, 3);
    assert.equal(ready.status!.dataPlane!.applied, 3);
    assert.equal(condition(ready, "ControlPlaneHealthy")?.status, "True");

    // w-1's next apply succeeds on the host, but its kubelet never turns Ready.
    await s.client.mergePatch(MACHINES, "w-1", s.ns, {
      metadata: { annotations: { [NODE_JOIN_ANNOTATION]: "never" } },
    });
    await s.client.mergePatch(KUBERNETES_CLUSTERS, "c", s.ns, { spec: { gitRepo: V2 } });
    const stalled = await s.until(
      "RolloutStalled at w-1",
      (c) => condition(c, "RollingOut")?.reason === "RolloutStalled",
      60_000,
    );
    assert.match(condition(stalled, "RollingOut")!.message, /halted at w-1 \(NodeNotReady: Node w-1 not Ready/);
    assert.equal(condition(stalled, "Ready")?.status, "False");
    assert.match(condition(stalled, "Ready")!.message, /w-1/);
    assert.equal(stalled.status!.phase, "Failed");
    assert.equal(stalled.status!.dataPlane!.ready, 2, "w-1 is applied but not Ready");
    assert.equal(stalled.status!.dataPlane!.applied, 3);
    assert.match(condition(stalled, "NodesHealthy")!.message, /NotReady: w-1 \(False: KubeletNotReady/);
    const table = await cp.kubectl(["get", "kcluster", "c", "-n", s.ns, "-o", "wide"]);
    assert.match(table.stdout, /Failed\s+1\/1\s+2\/3\s+1\.31\.0\s+1\s+3/, table.stdout);

    // Nothing after w-1 is touched, even by a later pass.
    await s.settled();
    const repo = async (m: string) =>
      (await s.client.get<NixosConfiguration>(NIXOS_CONFIGURATIONS, configName("c", m), s.ns))!.spec.gitRepo;
    assert.deepEqual(
      [await repo("w-1"), await repo("w-2"), await repo("w-3"), await repo("cp-1")],
      [V2, V1, V1, V1],
    );
  },
});

/** Records, on every Node event of the workload cluster, how many control-plane Nodes are not Ready. */
function controlPlaneWatcher(informer: Informer<KubeNode>) {
  let maxNotReady = 0;
  const readyAt = new Map<string, number>();
  informer.onEvent(() => {
    const cps = informer.filter((n) => n.metadata.labels?.["node-role.kubernetes.io/control-plane"] !== undefined);
    const notReady = cps.filter((n) => n.status?.conditions?.find((c) => c.type === "Ready")?.status !== "True");
    maxNotReady = Math.max(maxNotReady, notReady.length);
    for (const n of cps) if (!notReady.includes(n)) readyAt.set(n.metadata.name, Date.now());
  });
  return {
    get maxNotReady() {
      return maxNotReady;
    },
    readyAt,
  };
}

Deno.test({
  name: "a slow rejoin holds the next control-plane node back: never two control-plane Nodes NotReady",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const cp = await env.get();
    await using s = await startScenario(cp, "rejoin", { hostBlock: 32 });
    await s.createCluster({
      gitRepo: V1,
      controlPlane: { machines: ["cp-1", "cp-2", "cp-3"] },
      dataPlane: { machines: [] },
    });
    await s.until("Ready", settled, 90_000);
    const nodes = new Informer<KubeNode>(s.workload().client, NODES, { logger: silentLogger, resyncMs: 0 });
    const watcher = controlPlaneWatcher(nodes);
    nodes.start();
    await nodes.synced();
    const updatedAt = new Map<string, number>();
    const cfgs = new Informer<NixosConfiguration>(s.client, NIXOS_CONFIGURATIONS, {
      namespace: s.ns,
      logger: silentLogger,
      resyncMs: 0,
    });
    cfgs.onEvent((_t, c) => {
      if (c.spec.gitRepo === V2 && !updatedAt.has(c.spec.machineRef.name)) {
        updatedAt.set(c.spec.machineRef.name, Date.now());
      }
    });
    cfgs.start();
    await cfgs.synced();
    // The first control-plane node to update (cp-2: the bootstrap node goes last) takes 4 s to rejoin.
    await s.client.mergePatch(MACHINES, "cp-2", s.ns, {
      metadata: { annotations: { [NODE_JOIN_ANNOTATION]: "4000" } },
    });
    await s.client.mergePatch(KUBERNETES_CLUSTERS, "c", s.ns, { spec: { gitRepo: V2 } });
    await s.until("Ready on V2", (c) => settled(c) && condition(c, "UpToDate")?.status === "True", 90_000);
    await nodes.stop();
    await cfgs.stop();
    assert.deepEqual([...updatedAt.keys()], ["cp-2", "cp-3", "cp-1"]);
    assert.ok(watcher.maxNotReady <= 1, `control-plane Nodes NotReady at once: ${watcher.maxNotReady}`);
    assert.ok(
      updatedAt.get("cp-3")! >= updatedAt.get("cp-2")! + 4000,
      `cp-3 was updated ${updatedAt.get("cp-3")! - updatedAt.get("cp-2")!} ms after cp-2, before cp-2 rejoined`,
    );
  },
});
