/**
 * A departed worker on real API servers: when a scale-down removes a Machine,
 * its Node leaves the workload cluster once NIO removed its configuration.
 */
import assert from "node:assert/strict";
import { NODES } from "../../lib/kube/resources.ts";
import { KUBERNETES_CLUSTERS } from "../../crds/kubernetescluster.ts";
import { NIXOS_CONFIGURATIONS } from "../../core/contract/nio.ts";
import { configName } from "../../core/contract/names.ts";
import type { KubeNode } from "../../core/nodes/workload.ts";
import { eventually, sharedControlPlane } from "../../testing/helpers.ts";
import { startScenario } from "../../testing/scenario.ts";

import { settled, V1 } from "../workload_kit.ts";

const env = sharedControlPlane();

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
