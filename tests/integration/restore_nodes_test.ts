/**
 * A restore onto three other machines, through the workload API's own objects (issue 39, item 2): cluster c
 * (1 + 1) keeps its API server's data in its hosts' stacked etcd (`stackedEtcd`); a new cluster d, on three
 * control-plane Machines and a worker of its own (other names, other addresses), is created from c's backup. d's
 * bootstrap node restores it for d's own member list, the two others join; d's API server then serves c's objects,
 * c's ConfigMap and c's Nodes among them. Those Nodes name no machine of d: no kubelet renews their Leases, the real
 * node lifecycle controller marks them Unknown, and NICO deletes them as departed (core/nodes/departed.ts), so
 * `kubectl get nodes` through d's kubeconfig lists d's four nodes alone.
 */
import assert from "node:assert/strict";
import { KUBERNETES_CLUSTERS, type KubernetesCluster } from "../../crds/kubernetescluster.ts";
import type { KubeObject } from "../../lib/kube/client.ts";
import { EVENTS, NAMESPACES, NODES, resource } from "../../lib/kube/resources.ts";
import { eventually, sharedControlPlane } from "../../testing/helpers.ts";
import { startScenario } from "../../testing/scenario.ts";
import { backedUpCluster, requestedBackup } from "../backup_kit.ts";
import { etcdSettled } from "../etcd_kit.ts";

const env = sharedControlPlane();
const BLOCK = 202;
const CONFIGMAPS = resource("", "v1", "ConfigMap", "configmaps");
const D_CP = ["d-cp-1", "d-cp-2", "d-cp-3"];

Deno.test({
  name: "restore onto three other machines: the new cluster serves the old one's objects, and its old Nodes go",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const cp = await env.get();
    await using s = await startScenario(cp, "restore-nodes", {
      hostBlock: BLOCK,
      stackedEtcd: true,
      controllers: ["nodelifecycle"],
    });
    await backedUpCluster(s, BLOCK, ["w-1"]);
    const old = s.workload("c").client;
    await old.create(NAMESPACES, { metadata: { name: "drill" } });
    await old.create(CONFIGMAPS, { metadata: { name: "kept", namespace: "drill" }, data: { from: "c" } });
    const backup = await requestedBackup(s, "for-d");

    await s.machines([...D_CP, "d-w-1"]);
    await s.discovered([...D_CP, "d-w-1"]);
    await s.client.create(KUBERNETES_CLUSTERS, {
      metadata: { name: "d", namespace: s.ns },
      spec: {
        gitRepo: "https://git.example.test/flake.git",
        controlPlane: { machines: D_CP },
        dataPlane: { machines: ["d-w-1"] },
        etcd: { restore: { requestId: "move", backup: "latest", from: "c" } },
      },
    });
    const done = await eventually("d restored and Ready, etcd of 3 healthy", async () => {
      const d = await s.client.get<KubernetesCluster>(KUBERNETES_CLUSTERS, "d", s.ns);
      const r = d?.status?.restore;
      if (r && ["Failed", "Refused"].includes(r.step)) throw new Error(`restore ${r.step} (${r.reason}): ${r.message}`);
      return r?.step === "Succeeded" && etcdSettled(3)(d!) ? d : undefined;
    }, 360_000);
    assert.equal(done.status!.restore!.backup, backup.key);
    assert.deepEqual(done.status!.etcd!.members.map((m) => m.name).sort(), D_CP, "d's members, not c's");

    // d's API server serves c's objects: the ConfigMap, and (for a while) c's Nodes.
    const wl = s.workload("d").client;
    const kept = await eventually("c's ConfigMap in d", () => wl.get<KubeObject>(CONFIGMAPS, "kept", "drill"), 60_000);
    assert.equal((kept as KubeObject & { data?: Record<string, string> }).data?.from, "c");
    // c's Nodes came with the backup; no kubelet of d renews their Leases: Unknown, then deleted by NICO.
    const nodes = await eventually("d lists its own four Nodes alone", async () => {
      const names = (await wl.list(NODES)).items.map((n) => n.metadata.name).sort();
      return names.join() === [...D_CP, "d-w-1"].join() ? names : undefined;
    }, 180_000);
    assert.deepEqual(nodes, [...D_CP, "d-w-1"]);
    const events = (await s.client.list<KubeObject & { reason?: string; note?: string; regarding?: { name?: string } }>(
      EVENTS,
      { namespace: s.ns },
    )).items.filter((e) => e.reason === "NodeDeleted" && e.regarding?.name === "d").map((e) => e.note ?? "").sort();
    assert.deepEqual(events, [
      "deleted Node cp-1: it came with the restored backup and no machine of this cluster has that name",
      "deleted Node w-1: it came with the restored backup and no machine of this cluster has that name",
    ]);
    // c itself is untouched: its own Nodes are still there.
    const cNodes = (await old.list(NODES)).items.map((n) => n.metadata.name).sort();
    assert.deepEqual(cNodes, ["cp-1", "w-1"]);
  },
});
