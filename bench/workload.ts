/**
 * What workload-cluster connections cost NICO: memory per open connection
 * and the time to open them, against one real kube-apiserver on loopback
 * that stands in for N workload clusters (each connection has its own
 * kubeconfig, client and TLS pool, as for N clusters). Prints figures;
 * asserts nothing.
 *
 *   deno run -A bench/workload.ts [--connections 50,200] [--nodes 20]
 *
 * @module
 */
import { parseArgs } from "node:util";
import { WorkloadCache } from "../controllers/cluster/workload/cache.ts";
import { issueKubeconfig } from "../core/render/kubeconfig.ts";
import { NODES } from "../lib/kube/resources.ts";
import { silentLogger } from "../lib/runtime/log.ts";
import { createCa } from "../lib/pki.ts";
import { startControlPlane } from "../testing/envtest/controlplane.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: { connections: { type: "string", default: "50,200" }, nodes: { type: "string", default: "20" } },
});
const sizes = values.connections!.split(",").map(Number);
const nodeCount = Number(values.nodes);
const mib = (b: number) => (b / 1024 / 1024).toFixed(1);

function settle(): Promise<void> {
  return new Promise((r) => setTimeout(r, 2000));
}

const ca = await createCa({ commonName: "bench-workload-ca" });
const cp = await startControlPlane({ ca, host: "127.0.0.1", crds: [] });
try {
  for (let i = 0; i < nodeCount; i++) {
    await cp.client.create(NODES, { metadata: { name: `node-${i}` } });
  }
  console.log(`one kube-apiserver with ${nodeCount} Nodes standing in for each workload cluster`);
  console.log("connections  open+synced  RSS before  RSS after  per connection  heap per connection");
  for (const n of sizes) {
    const kubeconfigs = await Promise.all(
      Array.from({ length: n }, (_, i) => issueKubeconfig(`c${i}`, cp.server, ca)),
    );
    let changes = 0;
    const cache = new WorkloadCache({
      onChange: () => changes++,
      log: silentLogger,
      policy: "loopback",
      maxOpen: n,
    });
    await settle();
    const before = Deno.memoryUsage();
    const t0 = performance.now();
    for (let i = 0; i < n; i++) cache.view(`bench/c${i}`, kubeconfigs[i]);
    while (true) {
      const views = kubeconfigs.map((k, i) => cache.view(`bench/c${i}`, k));
      if (views.every((v) => v.api.state === "Available" && v.nodes?.size === nodeCount)) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const openMs = performance.now() - t0;
    await settle();
    const after = Deno.memoryUsage();
    console.log(
      `${String(n).padStart(11)}  ${(openMs / 1000).toFixed(1).padStart(9)} s  ${mib(before.rss).padStart(7)} MiB` +
        `  ${mib(after.rss).padStart(6)} MiB  ${((after.rss - before.rss) / n / 1024).toFixed(0).padStart(10)} KiB` +
        `  ${((after.heapUsed - before.heapUsed) / n / 1024).toFixed(0).padStart(15)} KiB`,
    );
    await cache.closeAll();
  }
  console.log(
    "steady state per connection: one /readyz every --workload-probe-interval (10 s: 6 requests a minute), one " +
      "Node watch held open (resumed every 5-10 min), Pods listed and watched only while a drain runs",
  );
} finally {
  await cp.stop();
}
