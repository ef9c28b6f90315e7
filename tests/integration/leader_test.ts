/**
 * Leader election with two NICO processes on a real API server: only the
 * leader reconciles; when it is killed (SIGKILL, no chance to release) the
 * standby takes over within the lease duration and carries on.
 */
import { startReplica } from "../../testing/nico_process.ts";
import assert from "node:assert/strict";
import type { KubernetesCluster } from "../../crds/kubernetescluster.ts";
import type { Lease } from "../../lib/leader.ts";
import { LEASES } from "../../lib/kube/resources.ts";
import { KUBERNETES_CLUSTERS } from "../../crds/kubernetescluster.ts";
import { eventually } from "../../testing/helpers.ts";
import { createMachines } from "../../testing/nico.ts";
import { world } from "../../testing/world.ts";

Deno.test("a standby takes over within the lease time when the leader dies", async () => {
  await using w = await world("leader", { nio: { applyDelayMs: 100 }, nico: false });
  const { cp, ns } = w;
  const replicas = {
    a: startReplica(cp.kubeconfigPath, "nico-a", `${cp.dir}/nico-a.log`, [], ns),
    b: startReplica(cp.kubeconfigPath, "nico-b", `${cp.dir}/nico-b.log`, [], ns),
  };
  w.defer(async () => {
    await replicas.a.stop();
    await replicas.b.stop();
  });
  const holder = async () => (await cp.client.get<Lease>(LEASES, "nico-leader", ns))?.spec?.holderIdentity;
  const first = await eventually("a leader", async () => {
    const h = await holder();
    return h === "nico-a" || h === "nico-b" ? h : undefined;
  }, 60_000);
  const standby = first === "nico-a" ? "nico-b" : "nico-a";
  await createMachines(cp.client, ns, ["cp-1", "cp-2"]);
  await cp.client.create(KUBERNETES_CLUSTERS, {
    metadata: { name: "one", namespace: ns },
    spec: { controlPlane: { machines: ["cp-1"] } },
  } as KubernetesCluster);
  await w.until("first cluster Ready", (c) => c.status?.phase === "Ready", 30_000, "one");
  // Only the leader reconciles: the standby's log has no reconcile activity.
  const standbyLog = await Deno.readTextFile(`${cp.dir}/${standby}.log`);
  assert.doesNotMatch(standbyLog, /claimed machines|created configuration/);

  const killedAt = Date.now();
  await replicas[first === "nico-a" ? "a" : "b"].kill("SIGKILL");
  await cp.client.create(KUBERNETES_CLUSTERS, {
    metadata: { name: "two", namespace: ns },
    spec: { controlPlane: { machines: ["cp-2"] } },
  } as KubernetesCluster);
  await eventually("the standby leads", async () => (await holder()) === standby, 30_000, 200);
  const takeover = (Date.now() - killedAt) / 1000;
  await w.until("second cluster Ready", (c) => c.status?.phase === "Ready", 30_000, "two");
  console.log(`takeover after SIGKILL of the leader: ${takeover.toFixed(1)} s (lease 15 s, retry 2 s)`);
  assert.ok(takeover <= 15 + 2 * 2 + 2, `takeover took ${takeover} s`);
});
