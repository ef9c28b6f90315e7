/**
 * The watch budget of the workload-connection cache (core/nodes/watches.ts) against a real API server: over the
 * budget, the cluster needed least recently lists its Nodes once per probe round instead of watching them, sees
 * changes all the same, gets the watch when a drain or a Node write needs it, and goes through an outage as a watched
 * cluster does.
 */
import assert from "node:assert/strict";
import { WorkloadCache } from "../../controllers/cluster/workload/cache.ts";
import { issueKubeconfig } from "../../core/render/kubeconfig.ts";
import { NODES } from "../../lib/kube/resources.ts";
import { silentLogger } from "../../lib/runtime/log.ts";
import { createCa } from "../../lib/pki.ts";
import { startControlPlane } from "../../testing/envtest/controlplane.ts";
import { freePort } from "../../testing/envtest/process.ts";
import { eventually } from "../../testing/helpers.ts";

Deno.test({
  name: "workload watches: over the budget a cluster is polled, sees Node changes and outages, and watches when needed",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const ca = await createCa({ commonName: "wl-watches-ca" });
    const port = freePort();
    let cp = await startControlPlane({ ca, port, crds: [] });
    const changes: string[] = [];
    const cache = new WorkloadCache({
      onChange: (k) => changes.push(k),
      log: silentLogger,
      policy: "loopback",
      maxWatches: 1,
      probeIntervalMs: 250,
      requestTimeoutMs: 2_000,
    });
    try {
      const [ka, kb] = [await issueKubeconfig("a", cp.server, ca), await issueKubeconfig("b", cp.server, ca)];
      const view = (k: "a" | "b") => cache.view(`t/${k}`, k === "a" ? ka : kb);
      view("a");
      assert.ok(cache.watching("t/a"), "a new connection watches while a watch is free");
      view("b");
      assert.ok(!cache.watching("t/b"), "the next one is polled: the one watch is taken");
      assert.equal(cache.watchingCount, 1);

      await eventually("the polled cluster to be Available with its Nodes", () => {
        const v = view("b");
        return v.api.state === "Available" && v.nodes?.size === 0 && v.nodesAsOf !== undefined;
      });
      changes.length = 0;
      await cp.client.create(NODES, { metadata: { name: "n1" } });
      await eventually("the polled cluster to list n1", () => view("b").nodes?.has("n1"));
      assert.ok(changes.includes("t/b"), "a Node seen by a poll asks for the cluster to be reconciled");

      // What NICO needs gets the watch: a Node read for a write, a drain's Pods.
      cache.connection("t/a")!.node("n1");
      assert.ok(cache.watching("t/a") && !cache.watching("t/b"), "a was needed last: a watches, b polls");
      cache.connection("t/b")!.podsOn("n1");
      assert.ok(cache.watching("t/b") && !cache.watching("t/a"), "a drain on b gets it the watch at once");
      cache.connection("t/a")!.node("n1");
      assert.ok(cache.watching("t/a") && !cache.watching("t/b"), "b polls again");

      // An outage while polled: Unavailable, the Nodes as last seen; then back, and listed again.
      await cp.stop();
      const down = await eventually("the polled cluster to turn Unavailable", () => {
        const v = view("b");
        return v.api.state === "Unavailable" ? v : undefined;
      }, 10_000);
      assert.ok(down.nodes?.has("n1"), "the Nodes as last seen stay while the API is away");
      cp = await startControlPlane({ ca, port, crds: [] }); // a new etcd: n1 is gone
      await eventually("the polled cluster back, with the Nodes listed again", () => {
        const v = view("b");
        return v.api.state === "Available" && v.nodes !== undefined && !v.nodes.has("n1");
      }, 30_000);
    } finally {
      await cache.closeAll();
      await cp.stop();
    }
  },
});
