/**
 * The workload-cluster connection cache against a real API server on
 * loopback: lazy, shared, refreshed, bounded, loopback only, and an API that
 * goes away and comes back. The drain: workload_drain_api_test.ts.
 */
import assert from "node:assert/strict";
import { WorkloadCache } from "../../controllers/cluster/workload/cache.ts";
import { issueKubeconfig } from "../../core/render/kubeconfig.ts";
import type { KubeClient } from "../../lib/kube/client.ts";
import { NODES } from "../../lib/kube/resources.ts";
import { silentLogger } from "../../lib/runtime/log.ts";
import { createCa } from "../../lib/pki.ts";
import { startControlPlane } from "../../testing/envtest/controlplane.ts";
import { freePort } from "../../testing/envtest/process.ts";
import { eventually } from "../../testing/helpers.ts";

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
