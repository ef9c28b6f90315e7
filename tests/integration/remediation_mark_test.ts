/**
 * A person takes a worker out of service (real API servers, a kube-apiserver
 * per workload cluster, simulated kubelets, the simulated NIO): the mark
 * replaces the Machine as a dead kubelet would, and clearing it returns the
 * Machine to the pool without moving anything.
 */
import assert from "node:assert/strict";
import { CLUSTER_LABEL, REMEDIATED_ANNOTATION } from "../../core/contract/labels.ts";
import { type Machine, MACHINES, NIXOS_CONFIGURATIONS } from "../../core/contract/nio.ts";
import { eventually, sharedControlPlane } from "../../testing/helpers.ts";
import { condition, startScenario } from "../../testing/scenario.ts";
import { machineOf, settled, workerCluster } from "../remediation_kit.ts";

const env = sharedControlPlane();

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
