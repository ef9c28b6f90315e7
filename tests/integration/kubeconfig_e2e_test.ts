/**
 * End to end: NICO's kubeconfig Secret works with `kubectl get nodes`
 * against a real workload API server that the simulated NIO starts on the
 * bootstrap node's address, serving a certificate from the cluster CA.
 */
import assert from "node:assert/strict";
import { SECRETS } from "../../lib/kube/resources.ts";
import { KUBERNETES_CLUSTERS } from "../../crds/kubernetescluster.ts";
import { eventually } from "../../testing/helpers.ts";
import { createMachines, machinesDiscovered } from "../../testing/nico.ts";
import { world } from "../../testing/world.ts";

Deno.test("kubectl --kubeconfig <the Secret's value> get nodes sees every node", async () => {
  await using w = await world("e2e", { workloads: true, nio: { applyDelayMs: 100 } });
  const { cp, ns } = w;
  await createMachines(cp.client, ns, ["cp-1", "w-1", "w-2"], {}, 93);
  await machinesDiscovered(cp.client, ns, ["cp-1", "w-1", "w-2"]);
  await cp.client.create(KUBERNETES_CLUSTERS, {
    metadata: { name: "edge", namespace: ns },
    spec: { controlPlane: { machines: ["cp-1"] }, dataPlane: { machines: ["w-1", "w-2"] } },
  });
  const cluster = await w.until("Ready", (c) => c.status?.phase === "Ready", 60_000, "edge");
  assert.equal(cluster.status!.endpoint, "https://127.0.93.2:6443");
  const secret = await cp.client.get<{ metadata: { name: string }; data: { value: string } }>(
    SECRETS,
    cluster.status!.kubeconfigSecret!,
    ns,
  );
  const path = await Deno.makeTempFile({ suffix: ".kubeconfig" });
  try {
    await Deno.writeTextFile(path, atob(secret!.data.value));
    // This NICO has no workload connections, so its Ready means applied: each kubelet posts a few seconds later
    // (its Node first, then its Ready condition), as a restarted one does. Wait for what is asserted.
    const out = await eventually("three nodes, cp-1 Ready", async () => {
      const r = await cp.kubectl(["get", "nodes", "--no-headers"], { kubeconfig: path });
      const whole = r.code === 0 && r.stdout.trim().split("\n").length === 3;
      return whole && /cp-1\s+Ready\s+control-plane/.test(r.stdout) ? r : undefined;
    });
    const names = out.stdout.trim().split("\n").map((l) => l.split(/\s+/)[0]).sort();
    assert.deepEqual(names, ["cp-1", "w-1", "w-2"]);
    assert.match(out.stdout, /cp-1\s+Ready\s+control-plane/);
    const who = await cp.kubectl(["auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"], {
      kubeconfig: path,
    });
    assert.equal(who.stdout, "nico-admin");
  } finally {
    await Deno.remove(path);
  }
});
