/** The stacked etcd a simulated workload API server stores in (testing/workload_etcd.ts): where its members are. */
import assert from "node:assert/strict";
import { renderClusterNix } from "../../core/render/clusternix.ts";
import { etcdServersOf } from "../../testing/workload_etcd.ts";

const base = {
  name: "c",
  namespace: "ns",
  endpoint: { host: "127.0.0.2", port: 6443 },
  bootstrapNode: "cp-1",
  workers: [{ name: "w-1", address: "127.0.0.9" }],
};

Deno.test("the API server's etcd servers are the control-plane nodes' client URLs, in cluster.nix's order", () => {
  const text = renderClusterNix({
    ...base,
    controlPlane: [{ name: "cp-1", address: "127.0.0.2" }, { name: "cp-2", address: "127.0.0.3" }],
    etcd: { clientPort: 2379 },
  });
  assert.deepEqual(etcdServersOf(text), ["https://127.0.0.2:2379", "https://127.0.0.3:2379"]);
});

Deno.test("the etcd client port comes from cluster.nix; workers never serve etcd; no control plane, no servers", () => {
  const one = renderClusterNix({
    ...base,
    controlPlane: [{ name: "cp-1", address: "::1" }],
    etcd: { clientPort: 12379 },
  });
  assert.deepEqual(etcdServersOf(one), ["https://[::1]:12379"]);
  assert.deepEqual(etcdServersOf(renderClusterNix({ ...base, controlPlane: [] })), []);
});
