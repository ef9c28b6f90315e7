/**
 * NICO owns a cluster's status: its own status writes trigger no reconcile,
 * but a status someone else writes is put right at once (not at the next
 * periodic look, hours later).
 */
import assert from "node:assert/strict";
import type { KubernetesCluster } from "../../crds/kubernetescluster.ts";
import { KUBERNETES_CLUSTERS } from "../../crds/kubernetescluster.ts";
import { eventually } from "../../testing/helpers.ts";
import { createMachines, machinesDiscovered, settled } from "../../testing/nico.ts";
import { world } from "../../testing/world.ts";

Deno.test("a status overwritten by another client is restored by the pass that sees it", async () => {
  await using w = await world("status-owner", { nio: { applyDelayMs: 100 }, nico: false });
  const { cp, ns } = w;
  await createMachines(cp.client, ns, ["cp-1", "w-1"]);
  await machinesDiscovered(cp.client, ns, ["cp-1", "w-1"]);
  const nico = await w.startNico();
  await cp.client.create(KUBERNETES_CLUSTERS, {
    metadata: { name: "c", namespace: ns },
    spec: { controlPlane: { machines: ["cp-1"] }, dataPlane: { machines: ["w-1"] } },
  });
  const get = () => cp.client.get<KubernetesCluster>(KUBERNETES_CLUSTERS, "c", ns);
  const ready = await eventually("Ready", async () => {
    const c = await get();
    return c?.status?.phase === "Ready" ? c : undefined;
  }, 30_000);
  const readyCondition = ready.status!.conditions!.find((c) => c.type === "Ready");
  assert.equal(readyCondition?.status, "True");
  // NIO's last write-backs and NICO's passes are done: nothing else will wake NICO up for hours.
  await settled(cp.client, nico, ns, "c");
  // Someone else (a script, a stale controller) writes a false status.
  const overwritten = await cp.client.mergePatch<KubernetesCluster>(
    KUBERNETES_CLUSTERS,
    "c",
    ns,
    { status: { phase: "Failed", conditions: null } },
    "status",
  );
  // The pass that saw the false status puts it right.
  await nico.passAfter(`${ns}/c`, overwritten.metadata.resourceVersion);
  const restored = (await get())!;
  assert.equal(restored.status?.phase, "Ready");
  assert.equal(restored.status!.conditions!.find((c) => c.type === "Ready")?.status, "True");
});
