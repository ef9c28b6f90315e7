/**
 * What one admission costs as a namespace fills up (prints figures; not a timed test). Admission finds the objects
 * a request concerns in the caches by index (webhooks/lookup.ts `admissionObjects`: the Machines it names, their
 * configurations, the clusters naming them) and judges the request against them (webhooks/validate.ts): this times
 * both, in this process, for a new cluster of 1 + 2 free Machines in a namespace already holding N clusters of 3
 * claimed Machines with their configurations; beside it, the same judgement against every object of the namespace
 * (what admission read before). Target: the indexed p99 at 1,000 clusters within 1.2× of its p99 at 10.
 *
 * Run: deno run -A bench/webhook_fleet.ts [--sizes 10,100,1000,3000] [--requests 2000]
 *
 * @module
 */
import { parseArgs } from "node:util";
import type { KubernetesCluster } from "../crds/kubernetescluster.ts";
import type { Machine, NixosConfiguration } from "../core/contract/nio.ts";
import { validateCluster } from "../webhooks/validate.ts";
import { admissionObjects, staticLookup } from "../webhooks/lookup.ts";
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

/** Mean and p99 in µs of `requests` runs of `judge`, and how many it refused. */
function timed(judge: () => { errors: string[] }) {
  const times: number[] = [];
  let refused = 0;
  for (let r = 0; r < requests; r++) {
    const t = performance.now();
    const v = judge();
    times.push((performance.now() - t) * 1000);
    if (v.errors.length) refused++;
  }
  times.sort((a, b) => a - b);
  const mean = times.reduce((a, b) => a + b, 0) / times.length;
  const p99 = times[Math.min(times.length - 1, Math.floor(times.length * 0.99))] ?? 0;
  return { mean, p99, refused };
}

const ref = { name: "new", namespace: NS };
const col = (x: number, w: number) => x.toFixed(1).padStart(w);
// Every namespace first, then the indexed runs of each (after a warm-up), then the whole-namespace runs: the
// garbage of building a namespace or of a whole-namespace judgement is not collected in another's window.
const namespaces = sizes.map((n) => ({ n, ns: namespaceOf(n) }));
const results = namespaces.map(({ n, ns }) => {
  const lookup = staticLookup(ns);
  let read = 0;
  const judge = () => {
    const objects = admissionObjects(lookup, ref, [object.spec]);
    read = objects.machines.length + objects.configurations.length + objects.clusters.length;
    return validateCluster({ operation: "CREATE", namespace: NS, object, ...objects });
  };
  timed(judge); // warm-up
  return { n, ns, read, indexed: timed(judge) };
});
console.log("clusters in the namespace   objects   indexed: read  mean µs  p99 µs   whole namespace: mean µs  p99 µs");
const p99s = new Map<number, number>();
for (const { n, ns, read, indexed } of results) {
  const whole = timed(() => validateCluster({ operation: "CREATE", namespace: NS, object, ...ns }));
  if (indexed.refused || whole.refused) throw new Error(`the request was refused at ${n} clusters`);
  p99s.set(n, indexed.p99);
  const objects = ns.machines.length + ns.configurations.length + ns.clusters.length;
  console.log(
    `${String(n).padStart(25)}   ${String(objects).padStart(7)}   ${String(read).padStart(13)}  ${
      col(indexed.mean, 7)
    }  ${col(indexed.p99, 6)}   ${" ".repeat(16)}${col(whole.mean, 7)}  ${col(whole.p99, 6)}`,
  );
}
const small = p99s.get(10);
const large = p99s.get(1000);
if (small !== undefined && large !== undefined) {
  const ratio = large / small;
  console.log(
    `indexed p99 at 1,000 clusters ÷ at 10: ${ratio.toFixed(2)} (target ≤ 1.2: ${ratio <= 1.2 ? "met" : "MISSED"})`,
  );
}
console.log(`load average: ${(await Deno.readTextFile("/proc/loadavg")).split(" ").slice(0, 3).join(" ")}`);
