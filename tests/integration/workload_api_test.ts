/**
 * The workload-cluster connection cache and the drain, against real API
 * servers on loopback (one with kube-controller-manager's disruption
 * controller, so PodDisruptionBudgets are enforced as in a real cluster).
 */
import assert from "node:assert/strict";
import { WorkloadCache } from "../../controllers/cluster/workload/cache.ts";
import { deleteNode, drainNode, uncordon } from "../../controllers/cluster/workload/drain.ts";
import { issueKubeconfig } from "../../core/render/kubeconfig.ts";
import type { DrainSettings, KubeNode, KubePod } from "../../core/nodes/workload.ts";
import type { KubeClient } from "../../lib/kube/client.ts";
import { NAMESPACES, NODES, PDBS, PODS } from "../../lib/kube/resources.ts";
import { silentLogger } from "../../lib/runtime/log.ts";
import { createCa } from "../../lib/pki.ts";
import { DRAIN_STARTED_ANNOTATION } from "../../core/contract/labels.ts";
import { startControlPlane } from "../../testing/envtest/controlplane.ts";
import { freePort } from "../../testing/envtest/process.ts";
import { eventually } from "../../testing/helpers.ts";
import { simulateKubelets } from "../../testing/kubelet.ts";

async function readyNode(client: KubeClient, name: string) {
  await client.create(NODES, { metadata: { name } });
  await client.mergePatch(NODES, name, undefined, {
    status: { conditions: [{ type: "Ready", status: "True", reason: "KubeletReady", message: "test" }] },
  }, "status");
}

Deno.test({
  name: "workload connections: lazy, shared, refreshed on a new kubeconfig, bounded, loopback only, never blocking",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const ca = await createCa({ commonName: "wl-ca" });
    const host = "127.0.0.61";
    const port = freePort();
    let cp = await startControlPlane({ ca, host, port, crds: [] });
    const changes: string[] = [];
    const cache = new WorkloadCache({
      onChange: (k) => changes.push(k),
      log: silentLogger,
      policy: "loopback",
      probeIntervalMs: 250,
      requestTimeoutMs: 2_000,
    });
    try {
      const kc1 = await issueKubeconfig("c1", cp.server, ca);
      const first = cache.view("t/c1", kc1);
      assert.equal(first.api.state, "Unknown", "the first look answers at once, before any connection");
      const conn = cache.connection("t/c1");
      assert.ok(conn);
      await eventually("the API to answer /readyz", () => cache.view("t/c1", kc1).api.state === "Available");
      assert.deepEqual([...(await eventually("the Node list", () => cache.view("t/c1", kc1).nodes))].length, 0);
      assert.equal(cache.connection("t/c1"), conn, "the same kubeconfig reuses the connection");

      await readyNode(cp.client, "n1");
      const n1 = await eventually("n1 Ready in the view", () => {
        const n = cache.view("t/c1", kc1).nodes?.get("n1");
        return n?.ready === "True" ? n : undefined;
      });
      assert.equal(n1.cordoned, false);
      assert.ok(changes.includes("t/c1"), "a Node event asks for the cluster to be reconciled");

      // Re-signed kubeconfig: a new connection replaces the old one.
      const kc2 = await issueKubeconfig("c1", cp.server, ca);
      cache.view("t/c1", kc2);
      assert.notEqual(cache.connection("t/c1"), conn);
      assert.equal(cache.size, 1);
      await eventually("the new connection to be Available", () => cache.view("t/c1", kc2).api.state === "Available");

      // The bound: a second cluster waits while the one slot is taken.
      const bounded = new WorkloadCache({ onChange: () => {}, log: silentLogger, policy: "loopback", maxOpen: 1 });
      bounded.view("t/a", kc2);
      const refused = bounded.view("t/b", kc2);
      assert.equal(refused.api.state, "Unknown");
      assert.match(refused.api.message, /--max-workload-connections/);
      bounded.close("t/a");
      assert.ok(bounded.view("t/b", kc2));
      assert.ok(bounded.connection("t/b"), "a freed slot is used");
      await bounded.closeAll();

      // Only loopback under the test policy: the target is refused before any connection is made. The target is
      // in 0.0.0.0/8, which no socket can reach, so even a broken guard could not send traffic anywhere.
      const away = await issueKubeconfig("c3", "https://0.0.0.1:6443", ca);
      const v = cache.view("t/c3", away);
      assert.equal(v.api.state, "Unavailable");
      assert.match(v.api.message, /refusing to connect to 0\.0\.0\.1/);
      assert.equal(cache.connection("t/c3"), undefined);

      // The API goes away: Unavailable within a bounded time, last known Nodes kept; and back.
      await cp.stop();
      const down = await eventually(
        "WorkloadAPIAvailable to turn Unavailable",
        () => {
          const x = cache.view("t/c1", kc2);
          return x.api.state === "Unavailable" ? x : undefined;
        },
        10_000,
      );
      assert.equal(down.nodes?.get("n1")?.ready, "True", "the last known Nodes stay, with their age");
      assert.ok(down.nodesAsOf);
      cp = await startControlPlane({ ca, host, port, crds: [] });
      await eventually("the API to be back", () => cache.view("t/c1", kc2).api.state === "Available", 20_000);

      cache.view("t/c1", undefined);
      assert.equal(cache.connection("t/c1"), undefined, "no kubeconfig: the connection is closed");
      assert.equal(cache.size, 0);
    } finally {
      await cache.closeAll();
      await cp.stop();
    }
  },
});

Deno.test({
  name:
    "drain: cordon, PodDisruptionBudget honoured (429 waits), DaemonSet pods skipped, timeout, uncordon, Node deletion",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const ca = await createCa({ commonName: "wl-ca" });
    const cp = await startControlPlane({ ca, host: "127.0.0.62", crds: [], controllers: ["disruption"] });
    const kubelet = simulateKubelets(cp.client, (n) => n.startsWith("w-"));
    const cache = new WorkloadCache({
      onChange: () => {},
      log: silentLogger,
      policy: "loopback",
      probeIntervalMs: 250,
    });
    try {
      const client = cp.client;
      await readyNode(client, "w-1");
      await readyNode(client, "w-2");
      const ns = "apps";
      await client.create(NAMESPACES, { metadata: { name: ns } });
      const pod = (name: string, node: string, extra: Partial<KubePod["metadata"]> = {}) =>
        client.create<KubePod>(PODS, {
          metadata: { name, namespace: ns, labels: { app: name.startsWith("web") ? "web" : "agent" }, ...extra },
          spec: { nodeName: node, containers: [{ name: "c", image: "registry.invalid/none" }] },
        } as KubePod);
      await client.create(PDBS, {
        metadata: { name: "web", namespace: ns },
        spec: { minAvailable: 1, selector: { matchLabels: { app: "web" } } },
      });
      await pod("web-1", "w-1");
      await pod("agent-w1", "w-1", {
        ownerReferences: [{ apiVersion: "apps/v1", kind: "DaemonSet", name: "agent", uid: "ds-uid", controller: true }],
      });
      await eventually("the disruption controller to see one healthy pod", async () => {
        const pdb = await client.get<{ metadata: { name: string }; status?: { currentHealthy?: number } }>(
          PDBS,
          "web",
          ns,
        );
        return pdb?.status?.currentHealthy === 1;
      }, 30_000);

      const kc = await issueKubeconfig("d", cp.server, ca);
      await eventually("the connection", () => cache.view("t/d", kc).nodes?.has("w-1"));
      const conn = cache.connection("t/d")!;
      const settings: DrainSettings = {
        enabled: true,
        timeoutMs: 60_000,
        onTimeout: "Halt",
        deleteEmptyDirData: false,
      };

      const first = await drainNode(conn, "w-1", settings, new Date());
      assert.equal(first.cordoned, true, "the first pass cordons, and says so");
      const blocked = await eventually("the eviction to be refused by the budget", async () => {
        const p = await drainNode(conn, "w-1", settings, new Date());
        return /eviction refused for apps\/web-1 \(PodDisruptionBudget/.test(p.message) ? p : undefined;
      });
      assert.equal(blocked.state, "Draining");
      await eventually("the cache to see the cordon", () => conn.node("w-1")?.spec?.unschedulable === true);
      const again = await drainNode(conn, "w-1", settings, new Date());
      assert.equal(again.cordoned, undefined, "a cordoned Node is not cordoned again");
      assert.match(
        blocked.message,
        /\(PodDisruptionBudget apps\/web: needs 1 healthy pods? and has 1/,
        "names the budget",
      );
      assert.doesNotMatch(blocked.message, /agent-w1/, "DaemonSet pods are not evicted");
      const cordoned = await client.get<KubeNode>(NODES, "w-1");
      assert.equal(cordoned?.spec?.unschedulable, true);
      assert.ok(cordoned?.metadata.annotations?.[DRAIN_STARTED_ANNOTATION]);
      assert.ok(await client.get(PODS, "web-1", ns), "the budget kept web-1");

      const late = await drainNode(conn, "w-1", { ...settings, timeoutMs: 1 }, new Date(Date.now() + 5_000));
      assert.equal(late.state, "TimedOut");
      assert.match(late.message, /took longer than 1ms \(spec.rollout.drain.timeout\)/);

      // The budget allows it once another healthy pod exists.
      await pod("web-2", "w-2");
      const done = await eventually("the drain to finish", async () => {
        const p = await drainNode(conn, "w-1", settings, new Date());
        return p.state === "Drained" ? p : undefined;
      }, 30_000);
      assert.match(done.message, /drained w-1/);
      assert.deepEqual(conn.watchingPodsOf, ["w-1"], "only the drained node's Pods are watched");
      assert.deepEqual(conn.podsOn("w-2"), undefined, "another node's Pods need their own (new) informer");
      assert.equal(await client.get(PODS, "web-1", ns), undefined, "web-1 was evicted");
      assert.ok(await client.get(PODS, "agent-w1", ns), "the DaemonSet pod stays");

      await eventually("the cache to see the cordon", () => conn.node("w-1")?.spec?.unschedulable === true);
      assert.equal(await uncordon(conn, "w-1"), true);
      const back = await client.get<KubeNode>(NODES, "w-1");
      assert.notEqual(back?.spec?.unschedulable, true);
      assert.equal(back?.metadata.annotations?.[DRAIN_STARTED_ANNOTATION], undefined);
      await eventually("the cache to see the uncordon", () => conn.node("w-1")?.spec?.unschedulable !== true);
      assert.equal(await uncordon(conn, "w-1"), false, "a Node NICO did not cordon is left alone");

      assert.equal(await deleteNode(conn, "w-2"), true);
      assert.equal(await client.get(NODES, "w-2"), undefined);
      assert.equal(await deleteNode(conn, "w-2"), false);
    } finally {
      await cache.closeAll();
      await kubelet.stop();
      await cp.stop();
    }
  },
});
