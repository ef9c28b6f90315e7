/**
 * What one admission costs as a namespace fills up (prints figures; not a timed test). Admission reads the
 * namespace's Machines, NixosConfigurations and clusters from the caches and judges the request against all of them
 * (webhooks/validate.ts): this times that judgement alone, in this process, for a new cluster of 1 + 2 free Machines
 * in a namespace already holding N clusters of 3 claimed Machines with their configurations.
 *
 * Run: deno run -A bench/webhook_fleet.ts [--sizes 10,100,1000,3000] [--requests 2000]
 *
 * @module
 */
import { parseArgs } from "node:util";
import type { KubernetesCluster } from "../crds/kubernetescluster.ts";
import type { Machine, NixosConfiguration } from "../core/contract/nio.ts";
import { validateCluster } from "../webhooks/validate.ts";
import { machine, NS, ownedConfig } from "../testing/objects.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: { sizes: { type: "string", default: "10,100,1000,3000" }, requests: { type: "string", default: "2000" } },
});
const sizes = values.sizes!.split(",").map(Number);
const requests = Number(values.requests);

function namespaceOf(n: number) {
  const machines: Machine[] = [];
  const configurations: NixosConfiguration[] = [];
  const clusters: KubernetesCluster[] = [];
  for (let i = 0; i < n; i++) {
    const name = `c-${i}`;
    const nodes = [`${name}-n0`, `${name}-n1`, `${name}-n2`];
    nodes.forEach((m, j) => {
      machines.push(machine(m, { claim: name }));
      configurations.push(ownedConfig(name, m, j === 0 ? "control-plane" : "worker", `uid-${i}`));
    });
    clusters.push({
      apiVersion: "nico.homystack.com/v1alpha1",
      kind: "KubernetesCluster",
      metadata: { name, namespace: NS, uid: `uid-${i}` },
      spec: {
        gitRepo: "https://git.example.test/flake.git",
        controlPlane: { machines: nodes.slice(0, 1) },
        dataPlane: { machines: nodes.slice(1) },
      },
    } as unknown as KubernetesCluster);
  }
  for (const m of ["new-n0", "new-n1", "new-n2"]) machines.push(machine(m));
  return { machines, configurations, clusters };
}

const object = {
  apiVersion: "nico.homystack.com/v1alpha1",
  kind: "KubernetesCluster",
  metadata: { name: "new", namespace: NS },
  spec: {
    gitRepo: "https://git.example.test/flake.git",
    controlPlane: { machines: ["new-n0"] },
    dataPlane: { machines: ["new-n1", "new-n2"] },
  },
};

console.log("clusters in the namespace   objects read   mean µs   p99 µs   refused");
for (const n of sizes) {
  const ns = namespaceOf(n);
  const times: number[] = [];
  let refused = 0;
  for (let r = 0; r < requests; r++) {
    const t = performance.now();
    const v = validateCluster({ operation: "CREATE", namespace: NS, object, ...ns });
    times.push((performance.now() - t) * 1000);
    if (v.errors.length) refused++;
  }
  times.sort((a, b) => a - b);
  const warm = times.slice(0, Math.floor(times.length * 0.99));
  const mean = times.reduce((a, b) => a + b, 0) / times.length;
  const objects = ns.machines.length + ns.configurations.length + ns.clusters.length;
  console.log(
    `${String(n).padStart(25)}   ${String(objects).padStart(12)}   ${mean.toFixed(1).padStart(7)}   ${
      (warm.at(-1) ?? 0).toFixed(1).padStart(6)
    }   ${refused}`,
  );
}
