/**
 * Shards divide the caches, on the real API server: two NICOs, shard `a` and the default shard, each caches in full
 * only its own clusters' NixosConfigurations and Secrets (they carry the cluster's shard label), and the other
 * shard's configurations trimmed to owner and target. A Ready cluster moved from the default shard to `a`, and back,
 * is taken up by the shard it moves to: its children relabelled, none created again or lost (same uids, same
 * generations), and it stays Ready all along.
 */
import assert from "node:assert/strict";
import { KUBERNETES_CLUSTERS, type KubernetesCluster } from "../../crds/kubernetescluster.ts";
import { CLUSTER_LABEL, SHARD_LABEL } from "../../core/contract/labels.ts";
import { NIXOS_CONFIGURATIONS } from "../../core/contract/nio.ts";
import type { KubeObject } from "../../lib/kube/client.ts";
import { SECRETS } from "../../lib/kube/resources.ts";
import { eventually } from "../../testing/helpers.ts";
import { createMachines, machinesDiscovered, type RunningNico, startNico } from "../../testing/nico.ts";
import { watchUntil } from "../../testing/watch.ts";
import { type World, world } from "../../testing/world.ts";

/** Nothing listens on the Machines' hosts 127.0.221.* (no workload clusters). */
const BLOCK = 221;
const MOVED = "d-1";

type Child = KubeObject & { metadata: { generation?: number } };

function clusterIn(ns: string, name: string, machines: [string, string], shard?: string): KubernetesCluster {
  return {
    metadata: { name, namespace: ns, ...(shard ? { labels: { [SHARD_LABEL]: shard } } : {}) },
    spec: { controlPlane: { machines: [machines[0]] }, dataPlane: { machines: [machines[1]] } },
  } as unknown as KubernetesCluster;
}

/** A cluster's children as the API server has them: name → uid, generation and shard label. */
async function childrenOf(w: World, cluster: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const r of [NIXOS_CONFIGURATIONS, SECRETS]) {
    const { items } = await w.client.list<Child>(r, { namespace: w.ns, labelSelector: `${CLUSTER_LABEL}=${cluster}` });
    for (const o of items) {
      const shard = o.metadata.labels?.[SHARD_LABEL] ?? "default";
      out.set(`${r.kind}/${o.metadata.name}`, `${o.metadata.uid} generation ${o.metadata.generation} in ${shard}`);
    }
  }
  return out;
}

/** The clusters whose children a shard's caches hold in full, and those whose configurations it keeps trimmed. */
function cached(nico: RunningNico, ns: string): { full: string[]; trimmed: string[] } {
  const owners = (items: KubeObject[]) =>
    [...new Set(items.map((o) => o.metadata.labels?.[CLUSTER_LABEL] ?? "(none)"))].sort();
  const inf = nico.informers;
  const others = inf.others?.list(ns) ?? [];
  assert.ok(others.every((c) => Object.keys(c.spec).join() === "machineRef"), "the others' configurations trimmed");
  return { full: owners([...inf.configs.list(ns), ...inf.secrets.list(ns)]), trimmed: owners(others) };
}

/** Moves the cluster to `shard` and waits until that shard runs it; every status version on the way is Ready. */
async function move(w: World, shard: string | undefined): Promise<void> {
  const phases: string[] = [];
  const taken = watchUntil<KubernetesCluster>(w.client, {
    resource: KUBERNETES_CLUSTERS,
    namespace: w.ns,
    name: MOVED,
    what: `${MOVED} reconciled by shard ${shard ?? "default"}`,
    pred: (c) => c.metadata.labels?.[SHARD_LABEL] === shard && c.status?.shard === shard,
    timeoutMs: 60_000,
    seen: (c) => c && phases.push(`${c.status?.phase} (${c.status?.shard ?? "default"})`),
  });
  await w.client.mergePatch(KUBERNETES_CLUSTERS, MOVED, w.ns, {
    metadata: { labels: { [SHARD_LABEL]: shard ?? null } },
  });
  const c = await taken;
  assert.deepEqual(phases.filter((p) => !p.startsWith("Ready")), [], "Ready all along the move");
  assert.equal(c.status?.conditions?.find((x) => x.type === "Ready")?.status, "True");
}

Deno.test("two shards each cache their own clusters' children; a moved cluster's follow it, none made again", async () => {
  await using w = await world("shardcache", { nio: { applyDelayMs: 200 }, nico: false });
  const { ns, client } = w;
  await createMachines(client, ns, ["m-1", "m-2", "m-3", "m-4"], {}, BLOCK);
  const a = startNico(client, { namespace: ns, settings: { shard: "a" }, statusDelayMs: 1_000 });
  const d = startNico(client, { namespace: ns, statusDelayMs: 1_000 });
  w.defer(() => Promise.all([a.stop(), d.stop()]));
  await machinesDiscovered(client, ns, ["m-1", "m-2", "m-3", "m-4"]);
  await client.create(KUBERNETES_CLUSTERS, clusterIn(ns, "a-1", ["m-1", "m-2"], "a"));
  await client.create(KUBERNETES_CLUSTERS, clusterIn(ns, MOVED, ["m-3", "m-4"]));
  await w.until("a-1 Ready", (c) => c.status?.phase === "Ready", 60_000, "a-1");
  await w.until(`${MOVED} Ready`, (c) => c.status?.phase === "Ready", 60_000, MOVED);

  // Each shard's caches: its own cluster's children in full, the other's configurations trimmed.
  await eventually("each shard caches its own clusters' children", () => {
    assert.deepEqual(cached(a, ns), { full: ["a-1"], trimmed: [MOVED] });
    assert.deepEqual(cached(d, ns), { full: [MOVED], trimmed: ["a-1"] });
    return true;
  });
  const before = await childrenOf(w, MOVED);
  assert.ok([...before.keys()].filter((k) => k.startsWith("NixosConfiguration/")).length === 2, [...before].join());
  assert.ok([...before.values()].every((v) => v.endsWith(" in default")), [...before].join("\n"));

  await move(w, "a");
  const inA = (v: string) => v.replace(/ in default$/, " in a");
  await eventually(`the children of ${MOVED} follow it to shard a`, async () => {
    assert.deepEqual(await childrenOf(w, MOVED), new Map([...before].map(([k, v]) => [k, inA(v)])));
    assert.deepEqual(cached(a, ns), { full: ["a-1", MOVED], trimmed: [] });
    assert.deepEqual(cached(d, ns), { full: [], trimmed: ["a-1", MOVED] });
    return true;
  });

  // And back to the default shard: the label comes off its children.
  await move(w, undefined);
  await eventually(`the children of ${MOVED} follow it back`, async () => {
    assert.deepEqual(await childrenOf(w, MOVED), before);
    assert.deepEqual(cached(a, ns), { full: ["a-1"], trimmed: [MOVED] });
    assert.deepEqual(cached(d, ns), { full: [MOVED], trimmed: ["a-1"] });
    return true;
  });
  await w.until(
    `${MOVED} still Ready`,
    (c) => c.status?.phase === "Ready" && c.status.shard === undefined,
    30_000,
    MOVED,
  );
});
