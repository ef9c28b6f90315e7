/**
 * A workload API outage on real API servers: WorkloadAPIAvailable goes False
 * and back, a spec change is still reconciled while the API is away, and the
 * rollout waits until the cluster can be observed again.
 */
import assert from "node:assert/strict";
import { KUBERNETES_CLUSTERS } from "../../crds/kubernetescluster.ts";
import { NIXOS_CONFIGURATIONS } from "../../core/contract/nio.ts";
import { configName } from "../../core/contract/names.ts";
import type { NixosConfiguration } from "../../core/contract/nio.ts";
import { sharedControlPlane } from "../../testing/helpers.ts";
import { condition, startScenario } from "../../testing/scenario.ts";

import { settled, V1, V2 } from "../workload_kit.ts";

const env = sharedControlPlane();

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
      30_000,
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
