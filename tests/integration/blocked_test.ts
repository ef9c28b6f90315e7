/**
 * A cluster that cannot start (no gitRepo and no default) says so and holds
 * no Machines, so another cluster can take them.
 */
import assert from "node:assert/strict";
import { KUBERNETES_CLUSTERS } from "../../crds/kubernetescluster.ts";
import { MACHINES } from "../../core/contract/nio.ts";
import { CLUSTER_LABEL } from "../../core/contract/labels.ts";
import type { Machine } from "../../core/contract/nio.ts";
import { createMachines } from "../../testing/nico.ts";
import { world } from "../../testing/world.ts";

Deno.test("a cluster blocked before it can start claims nothing; another cluster gets the Machine", async () => {
  await using w = await world("blocked", { nio: { applyDelayMs: 100 }, nico: { defaultGitRepo: null } });
  const { cp, ns } = w;
  await createMachines(cp.client, ns, ["cp-1"]);
  await cp.client.create(KUBERNETES_CLUSTERS, {
    metadata: { name: "norepo", namespace: ns },
    spec: { controlPlane: { machines: ["cp-1"] } },
  });
  const blocked = await w.until(
    "NoGitRepo",
    (c) => c.status?.conditions?.find((x) => x.type === "Ready")?.reason === "NoGitRepo",
    60_000,
    "norepo",
  );
  assert.ok(blocked.status?.phase, "phase is set");
  const m = await cp.client.get<Machine>(MACHINES, "cp-1", ns);
  assert.equal(m!.metadata.labels?.[CLUSTER_LABEL], undefined, "the Machine is not claimed");

  await cp.client.create(KUBERNETES_CLUSTERS, {
    metadata: { name: "other", namespace: ns },
    spec: { gitRepo: "https://git.example.test/flake.git", controlPlane: { machines: ["cp-1"] } },
  });
  await w.until("the other cluster is Ready on cp-1", (c) => c.status?.phase === "Ready", 30_000, "other");
});
