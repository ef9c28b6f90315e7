/**
 * Events as Kubernetes' own tools use them: a cluster's happy path records
 * one Event when provisioning starts and one when it is Ready, no routine
 * per-object Events, and no phase announced twice.
 */
import assert from "node:assert/strict";
import type { KubernetesCluster } from "../../crds/kubernetescluster.ts";
import { KUBERNETES_CLUSTERS } from "../../crds/kubernetescluster.ts";
import { EVENTS, SECRETS } from "../../lib/kube/resources.ts";
import type { KubeClient, KubeObject } from "../../lib/kube/client.ts";
import { UNDISCOVERABLE_ANNOTATION } from "../../testing/sim-nio.ts";
import { eventually } from "../../testing/helpers.ts";
import { createMachines, type RunningNico, settled } from "../../testing/nico.ts";
import { MACHINES } from "../../core/contract/nio.ts";
import { world } from "../../testing/world.ts";
type Ev = KubeObject & { type?: string; reason?: string; regarding?: { name?: string }; series?: { count?: number } };

/** The Events about cluster `name`, as `type/reasonxcount`, sorted, once NICO has settled (they are written in the background). */
async function eventReasons(client: KubeClient, nico: RunningNico, ns: string, name: string): Promise<string[]> {
  await settled(client, nico, ns, name);
  const events = (await client.list<Ev>(EVENTS, { namespace: ns })).items.filter((e) => e.regarding?.name === name);
  return events.map((e) => `${e.type}/${e.reason}x${e.series?.count ?? 1}`).sort();
}

Deno.test("the happy path of a 1 + 2 cluster records two Events: provisioning started, Ready", async () => {
  await using w = await world("events", { nio: { applyDelayMs: 200 }, nico: false });
  const { cp, ns } = w;
  await createMachines(cp.client, ns, ["cp-1", "w-1", "w-2"]);
  // The simulator marks Machines discoverable as it sees them, so a worker may join after the first pass and
  // change cluster.nix under applied nodes: that is still the first bring-up, not a rollout (no PhaseUpdating).
  const nico = await w.startNico();
  await cp.client.create(KUBERNETES_CLUSTERS, {
    metadata: { name: "c", namespace: ns },
    spec: { controlPlane: { machines: ["cp-1"] }, dataPlane: { machines: ["w-1", "w-2"] } },
  });
  await w.until("Ready", (c) => c.status?.phase === "Ready", 30_000);
  assert.deepEqual(await eventReasons(cp.client, nico, ns, "c"), [
    "Normal/PhaseProvisioningx1",
    "Normal/PhaseReadyx1",
  ]);
});

Deno.test("a worker that becomes discoverable after the bootstrap applied: still Provisioning, then Ready", async () => {
  await using w = await world("events-late", { nio: { applyDelayMs: 200 }, nico: false });
  const { cp, ns } = w;
  await createMachines(cp.client, ns, ["cp-1", "w-1"]);
  await cp.client.create(MACHINES, {
    metadata: { name: "w-2", namespace: ns, annotations: { [UNDISCOVERABLE_ANNOTATION]: "true" } },
    spec: { host: "127.0.11.3", sshUser: "root", sshKeySecretRef: { name: "w-2-ssh" } },
  });
  const nico = await w.startNico();
  await cp.client.create(KUBERNETES_CLUSTERS, {
    metadata: { name: "c", namespace: ns },
    spec: { controlPlane: { machines: ["cp-1"] }, dataPlane: { machines: ["w-1", "w-2"] } },
  });
  // The bootstrap applied (the kubeconfig exists) while w-2 was away; now it arrives and cluster.nix changes.
  await eventually("kubeconfig", () => cp.client.get(SECRETS, "c-kubeconfig", ns), 30_000);
  const c0 = await cp.client.get<KubernetesCluster>(KUBERNETES_CLUSTERS, "c", ns);
  assert.equal(c0?.status?.phase, "Provisioning", "w-2 is not discoverable yet");
  await cp.client.mergePatch(MACHINES, "w-2", ns, {
    metadata: { annotations: { [UNDISCOVERABLE_ANNOTATION]: null } },
  });
  await w.until(
    "Ready with three nodes",
    (c) => c.status?.phase === "Ready" && c.status.dataPlane?.summary === "2/2",
    30_000,
  );
  assert.deepEqual(await eventReasons(cp.client, nico, ns, "c"), [
    "Normal/PhaseProvisioningx1",
    "Normal/PhaseReadyx1",
  ]);
});
