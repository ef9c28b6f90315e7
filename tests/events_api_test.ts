/**
 * Events as Kubernetes' own tools use them: a cluster's happy path records
 * one Event when provisioning starts and one when it is Ready, no routine
 * per-object Events, and no phase announced twice.
 */
import assert from "node:assert/strict";
import type { KubernetesCluster } from "../crds/kubernetescluster.ts";
import { KUBERNETES_CLUSTERS } from "../crds/kubernetescluster.ts";
import { EVENTS } from "../lib/kube/resources.ts";
import type { KubeObject } from "../lib/kube/client.ts";
import { startSimNio } from "../testing/sim-nio.ts";
import { eventually, sharedControlPlane } from "../testing/helpers.ts";
import { createMachines, startNico } from "../testing/nico.ts";

const env = sharedControlPlane();
type Ev = KubeObject & { type?: string; reason?: string; regarding?: { name?: string }; series?: { count?: number } };

Deno.test("the happy path of a 1 + 2 cluster records two Events: provisioning started, Ready", async () => {
  const cp = await env.get();
  const ns = await cp.namespace("events");
  const nio = startSimNio(cp.client, { namespace: ns, applyDelayMs: 200 });
  await createMachines(cp.client, ns, ["cp-1", "w-1", "w-2"]);
  // NICO starts with every Machine in its cache, so membership (and cluster.nix) is settled from the first pass.
  const nico = startNico(cp.client, { namespace: ns });
  try {
    await cp.client.create(KUBERNETES_CLUSTERS, {
      metadata: { name: "c", namespace: ns },
      spec: { controlPlane: { machines: ["cp-1"] }, dataPlane: { machines: ["w-1", "w-2"] } },
    });
    await eventually("Ready", async () => {
      const c = await cp.client.get<KubernetesCluster>(KUBERNETES_CLUSTERS, "c", ns);
      return c?.status?.phase === "Ready";
    }, 30_000);
    await new Promise((r) => setTimeout(r, 2000)); // events are written in the background
    const events = (await cp.client.list<Ev>(EVENTS, { namespace: ns })).items
      .filter((e) => e.regarding?.name === "c");
    const reasons = events.map((e) => `${e.type}/${e.reason}x${e.series?.count ?? 1}`).sort();
    assert.deepEqual(reasons, ["Normal/PhaseProvisioningx1", "Normal/PhaseReadyx1"]);
  } finally {
    await nico.stop();
    await nio.stop();
  }
});
