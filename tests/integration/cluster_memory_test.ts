/**
 * What NICO remembers about a cluster goes with the cluster: twenty clusters
 * are created (each with a memory, a workload connection and a tracked
 * revision), then deleted, and nothing is kept for any of them afterwards.
 * A cluster created again under a name NICO saw before starts from nothing.
 */
import assert from "node:assert/strict";
import type { KubernetesCluster } from "../../crds/kubernetescluster.ts";
import { KUBERNETES_CLUSTERS } from "../../crds/kubernetescluster.ts";
import { CLUSTER_LABEL } from "../../core/contract/labels.ts";
import { type Machine, MACHINES } from "../../core/contract/nio.ts";
import { eventually, sharedControlPlane } from "../../testing/helpers.ts";
import { createMachines, startNico } from "../../testing/nico.ts";
import { startSimNio } from "../../testing/sim-nio.ts";

const env = sharedControlPlane();

const CLUSTERS = 20;
/** A pinned commit: the revision is tracked per cluster, and no git server is asked. */
const COMMIT = "0123456789abcdef0123456789abcdef01234567";

Deno.test("twenty clusters created and deleted leave nothing remembered behind", async () => {
  const cp = await env.get();
  const ns = await cp.namespace("memory");
  const nio = startSimNio(cp.client, { namespace: ns, applyDelayMs: 100, removeDelayMs: 50 });
  // Workload connections open once a kubeconfig is issued (nothing answers at the nodes' addresses: Unavailable).
  const nico = startNico(cp.client, { namespace: ns, resolveRefs: true, workloadProbeMs: 5_000 });
  const names = Array.from({ length: CLUSTERS }, (_, i) => `c-${i}`);
  const keys = names.map((n) => `${ns}/${n}`).sort();
  const create = (name: string) =>
    cp.client.create<KubernetesCluster>(KUBERNETES_CLUSTERS, {
      metadata: { name, namespace: ns },
      spec: { gitRepo: "https://git.example.test/fleet.git", ref: COMMIT, controlPlane: { machines: [`m-${name}`] } },
    } as unknown as KubernetesCluster);
  try {
    await createMachines(cp.client, ns, names.map((n) => `m-${n}`));
    for (const n of names) await create(n);
    const kept = await eventually("every cluster remembered, connected and tracking its revision", () => {
      const k = nico.memory.kept();
      return k.memories.length === CLUSTERS && k.workloads.length === CLUSTERS && k.revisions.length === CLUSTERS
        ? k
        : undefined;
    }, 120_000);
    assert.deepEqual(kept, { memories: keys, workloads: keys, revisions: keys });
    const held = await cp.client.list<Machine>(MACHINES, { namespace: ns });
    assert.equal(held.items.filter((m) => m.metadata.labels?.[CLUSTER_LABEL]).length, CLUSTERS, "each holds one");

    for (const n of names) await cp.client.delete(KUBERNETES_CLUSTERS, n, ns);
    await eventually("every cluster gone", async () => {
      return (await cp.client.list<KubernetesCluster>(KUBERNETES_CLUSTERS, { namespace: ns })).items.length === 0;
    }, 120_000);
    const machines = await cp.client.list<Machine>(MACHINES, { namespace: ns });
    assert.deepEqual(machines.items.filter((m) => m.metadata.labels?.[CLUSTER_LABEL]).map((m) => m.metadata.name), []);
    const after = await eventually("nothing kept for the deleted clusters", () => {
      const k = nico.memory.kept();
      if (k.memories.length + k.workloads.length + k.revisions.length === 0) return k;
      throw new Error(`still kept: ${JSON.stringify(k)}`);
    }, 30_000);
    assert.deepEqual(after, { memories: [], workloads: [], revisions: [] });

    // The same name again: a cluster of its own, remembered from nothing (another uid).
    const again = await create("c-0");
    const memory = await eventually("c-0 remembered again", () => nico.memory.peek(`${ns}/c-0`), 60_000);
    assert.equal(memory.uid, again.metadata.uid);
    assert.deepEqual(nico.memory.keys(), [`${ns}/c-0`]);
  } finally {
    await nico.stop();
    await nio.stop();
  }
});
