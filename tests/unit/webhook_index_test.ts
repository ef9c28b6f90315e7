/**
 * Admission by index (webhooks/lookup.ts): the objects a request concerns, found by key, judge it exactly as the
 * whole namespace does. Random namespaces (Machines claimed, free, labelled, unreachable, configured by others;
 * clusters naming Machines, selecting them, keeping spares, being deleted; configurations owned and foreign; the
 * same names in another namespace) and random requests (a new cluster, an update of an existing one): the verdict
 * from {@link admissionObjects} equals the verdict from every object of the namespace.
 */
import assert from "node:assert/strict";
import type { KubernetesCluster } from "../../crds/kubernetescluster.ts";
import type { Machine, NixosConfiguration } from "../../core/contract/nio.ts";
import { validateCluster } from "../../webhooks/validate.ts";
import { admissionObjects, staticLookup } from "../../webhooks/lookup.ts";
import { foreignConfig, machine, NS, ownedConfig } from "../../testing/objects.ts";
import { forEachSeed } from "../../testing/fuzz.ts";

const OTHER_NS = "elsewhere";
const REPO = "https://git.example.test/flake.git";

type Rand = () => number;
const pick = <T>(rand: Rand, xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
const some = <T>(rand: Rand, xs: readonly T[], p: number): T[] => xs.filter(() => rand() < p);
const byName = <T extends { metadata: { name: string } }>(xs: T[]) =>
  [...xs].sort((a, b) => a.metadata.name < b.metadata.name ? -1 : 1);

/** A random spec over `names`: explicit lists (with spares now and then) or selectors by role. */
function randomSpec(rand: Rand, names: string[]): Record<string, unknown> {
  const plane = (role: string) => {
    if (rand() < 0.5) {
      const machines = some(rand, names, 0.25).slice(0, 3);
      const spares = rand() < 0.3 ? some(rand, names, 0.15) : [];
      return { machines: machines.length ? machines : [pick(rand, names)], ...(spares.length ? { spares } : {}) };
    }
    return { machineSelector: { matchLabels: { role } }, count: 1 + Math.floor(rand() * 3) };
  };
  return {
    gitRepo: REPO,
    controlPlane: plane("cp"),
    dataPlane: rand() < 0.2 ? { machines: [] } : plane("worker"),
  };
}

function randomNamespace(rand: Rand) {
  const names = Array.from({ length: 6 + Math.floor(rand() * 8) }, (_, i) => `m-${i}`);
  const clusterNames = ["a", "b", "c"];
  const machines: Machine[] = [];
  const configurations: NixosConfiguration[] = [];
  for (const n of names) {
    const claim = rand() < 0.4 ? pick(rand, clusterNames) : undefined;
    machines.push(machine(n, {
      labels: { role: rand() < 0.5 ? "cp" : "worker" },
      ...(claim ? { claim } : {}),
      discoverable: rand() < 0.9,
      ...(rand() < 0.1 ? { applied: `x.${n}` } : {}),
    }));
    if (claim && rand() < 0.8) {
      configurations.push(ownedConfig(claim, n, rand() < 0.5 ? "control-plane" : "worker", `uid-${claim}`));
    }
    // A configuration left on a Machine whose claim is gone (a release under way).
    if (!claim && rand() < 0.15) {
      const c = pick(rand, clusterNames);
      configurations.push(ownedConfig(c, n, rand() < 0.5 ? "control-plane" : "worker", `uid-${c}`));
    }
    // One claimed by another cluster since (a stale configuration), or of a Machine that is gone.
    if (claim && rand() < 0.1) {
      const c = pick(rand, clusterNames.filter((x) => x !== claim));
      configurations.push(ownedConfig(c, n, rand() < 0.5 ? "control-plane" : "worker", `uid-${c}`));
    }
    if (rand() < 0.1) {
      const c = pick(rand, clusterNames);
      configurations.push(ownedConfig(c, `gone-${n}`, rand() < 0.5 ? "control-plane" : "worker", `uid-${c}`));
    }
    if (rand() < 0.1) configurations.push(foreignConfig(`stray-${n}`, n));
    // The same names in another namespace never count.
    if (rand() < 0.3) machines.push(machine(n, { namespace: OTHER_NS, claim: "new" }));
    if (rand() < 0.2) configurations.push(foreignConfig(`far-${n}`, n, OTHER_NS));
  }
  const clusters = clusterNames.map((c) => ({
    apiVersion: "nico.homystack.com/v1alpha1",
    kind: "KubernetesCluster",
    metadata: {
      name: c,
      namespace: NS,
      uid: `uid-${c}`,
      ...(rand() < 0.1 ? { deletionTimestamp: "2026-01-01T00:00:00Z" } : {}),
    },
    spec: randomSpec(rand, [...names, "gone-m-0", "gone-m-1"]),
  })) as unknown as KubernetesCluster[];
  clusters.push({ ...clusters[0]!, metadata: { ...clusters[0]!.metadata, namespace: OTHER_NS, uid: "uid-far" } });
  return { names, machines, configurations, clusters };
}

Deno.test("admission by index: the objects found by key judge a request as the whole namespace does", async () => {
  let refused = 0;
  let warned = 0;
  const cases = await forEachSeed("admission by index", 150, (rand) => {
    const world = randomNamespace(rand);
    const update = rand() < 0.5;
    const name = update ? pick(rand, ["a", "b", "c"]) : "new";
    const old = world.clusters.find((c) => c.metadata.name === name && c.metadata.namespace === NS);
    const uid = update ? `uid-${name}` : rand() < 0.5 ? "uid-new" : undefined;
    const object = {
      apiVersion: "nico.homystack.com/v1alpha1",
      kind: "KubernetesCluster",
      metadata: { name, namespace: NS, ...(uid ? { uid } : {}) },
      spec: randomSpec(rand, [...world.names, "gone-m-0", "gone-m-1"]),
    };
    const request = {
      operation: update ? "UPDATE" as const : "CREATE" as const,
      namespace: NS,
      object,
      ...(update ? { oldObject: old } : {}),
    };
    const inNs = <T extends { metadata: { name: string; namespace?: string } }>(xs: T[]) =>
      byName(xs.filter((x) => x.metadata.namespace === NS));
    const whole = validateCluster({
      ...request,
      machines: inNs(world.machines),
      configurations: inNs(world.configurations),
      clusters: inNs(world.clusters),
    });
    const specs = [object.spec, (old as { spec?: unknown } | undefined)?.spec];
    const ref = { name, namespace: NS, ...(uid ? { uid } : {}) };
    const objects = admissionObjects(staticLookup(world), ref, specs);
    const indexed = validateCluster({ ...request, ...objects });
    assert.deepEqual(indexed, whole, JSON.stringify({ request, objects: objects.machines.map((m) => m.metadata) }));
    // Fewer objects read than the namespace holds whenever a plane names its Machines.
    assert.ok(objects.machines.every((m) => m.metadata.namespace === NS));
    if (whole.errors.length) refused++;
    if (whole.warnings.length) warned++;
  });
  // The cases cover both verdicts.
  assert.ok(refused > cases / 10 && refused < cases - cases / 10, `refused ${refused} of ${cases}`);
  assert.ok(warned > cases / 10, `warned ${warned} of ${cases}`);
});

Deno.test("admission by index: a cluster that names its Machines reads them, not the namespace", () => {
  const machines = [machine("mine-1"), machine("mine-2")];
  const configurations: NixosConfiguration[] = [];
  const clusters: KubernetesCluster[] = [];
  for (let i = 0; i < 500; i++) {
    machines.push(machine(`c-${i}-n0`, { claim: `c-${i}` }));
    configurations.push(ownedConfig(`c-${i}`, `c-${i}-n0`, "control-plane", `uid-${i}`));
    clusters.push({
      metadata: { name: `c-${i}`, namespace: NS, uid: `uid-${i}` },
      spec: { controlPlane: { machines: [`c-${i}-n0`] }, dataPlane: { machines: [] } },
    } as unknown as KubernetesCluster);
  }
  // Another cluster names one of them too: it is found by that Machine.
  clusters.push({
    metadata: { name: "rival", namespace: NS, uid: "uid-rival" },
    spec: { controlPlane: { machines: ["mine-2"] }, dataPlane: { machines: [] } },
  } as unknown as KubernetesCluster);
  const lookup = staticLookup({ machines, configurations, clusters });
  const spec = { controlPlane: { machines: ["mine-1"] }, dataPlane: { machines: ["mine-2"] } };
  const got = admissionObjects(lookup, { name: "new", namespace: NS }, [spec]);
  assert.deepEqual(got.machines.map((m) => m.metadata.name), ["mine-1", "mine-2"]);
  assert.deepEqual(got.configurations, []);
  assert.deepEqual(got.clusters.map((c) => c.metadata.name), ["rival"]);
  // A selector plane reads the unclaimed pool, still not the claimed Machines of other clusters.
  const selecting = { controlPlane: { machineSelector: {}, count: 1 }, dataPlane: { machines: [] } };
  const pool = admissionObjects(lookup, { name: "new", namespace: NS }, [selecting]);
  assert.deepEqual(pool.machines.map((m) => m.metadata.name), ["mine-1", "mine-2"]);
});
