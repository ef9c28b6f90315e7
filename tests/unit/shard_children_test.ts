/**
 * Shards that divide the caches: a cluster's children carry its shard label, each shard's caches select by it (and
 * see every other configuration trimmed), a child of a moved cluster is relabelled, and admission reads the same
 * objects from split caches as from one whole cache.
 */
import assert from "node:assert/strict";
import { CLUSTER_LABEL, SHARD_LABEL } from "../../core/contract/labels.ts";
import { NIXOS_CONFIGURATIONS, type NixosConfiguration } from "../../core/contract/nio.ts";
import {
  childInShard,
  childShardLabels,
  mayHoldStrays,
  otherShardsSelector,
  shardChildSelector,
  type StrayInput,
} from "../../core/contract/shards.ts";
import { desiredConfigurations, resolveEndpoint } from "../../core/render/desired.ts";
import { labelsToWrite } from "../../core/render/drift.ts";
import { selectMachines } from "../../core/machines/selection.ts";
import { keepTargetOnly } from "../../controllers/cluster/controller.ts";
import { withClusterShard } from "../../controllers/cluster/follow.ts";
import { owned } from "../../controllers/cluster/secrets.ts";
import type { KubernetesCluster } from "../../crds/kubernetescluster.ts";
import { informerLookup, staticCache, staticLookup, unionCache } from "../../webhooks/lookup.ts";
import { MACHINES } from "../../core/contract/nio.ts";
import { KUBERNETES_CLUSTERS } from "../../crds/kubernetescluster.ts";
import { cluster, machine, NS, ownedConfig } from "../../testing/objects.ts";

/** Whether `labels` match a selector of the forms NICO writes (`k`, `!k`, `k=v`, `k!=v`, ANDed by commas). */
function selects(selector: string, labels: Record<string, string>): boolean {
  return selector.split(",").every((term) => {
    if (term.startsWith("!")) return !(term.slice(1) in labels);
    const ne = term.split("!=");
    if (ne.length === 2) return labels[ne[0]!] !== ne[1];
    const [key, value] = term.split("=") as [string, string | undefined];
    return value === undefined ? key in labels : labels[key] === value;
  });
}

const shardLabels = (shard?: string) => shard === undefined ? {} : { [SHARD_LABEL]: shard };

Deno.test("each child is in exactly one of a shard's two caches: its own (in full) or the others' (trimmed)", () => {
  for (const shard of [undefined, "a", "b"]) {
    for (const label of [undefined, "a", "b", "c"]) {
      const labels = { [CLUSTER_LABEL]: "x", ...shardLabels(label) };
      const own = selects(shardChildSelector(shard), labels);
      assert.notEqual(own, selects(otherShardsSelector(shard), labels), `shard ${shard}, label ${label}`);
      assert.equal(own, label === shard, `shard ${shard} holds the children of its clusters only (label ${label})`);
      // NICO's Secrets: the cluster label and the shard's.
      assert.equal(selects(shardChildSelector(shard, CLUSTER_LABEL), labels), own);
      assert.equal(selects(shardChildSelector(shard, CLUSTER_LABEL), shardLabels(label)), false, "not NICO's");
    }
  }
  assert.equal(shardChildSelector("a", CLUSTER_LABEL), `${CLUSTER_LABEL},${SHARD_LABEL}=a`);
  assert.equal(otherShardsSelector(undefined), SHARD_LABEL);
});

Deno.test("a child's shard label is its cluster's; none in the default shard", () => {
  assert.deepEqual(childShardLabels({ [SHARD_LABEL]: "edge-1", team: "x" }), { [SHARD_LABEL]: "edge-1" });
  assert.deepEqual(childShardLabels({ team: "x" }), {});
  assert.deepEqual(childShardLabels(undefined), {});
  assert.equal(childInShard({ [SHARD_LABEL]: "a" }, { [SHARD_LABEL]: "a" }), true);
  assert.equal(childInShard({}, {}), true);
  assert.equal(childInShard({ [SHARD_LABEL]: "a" }, {}), false, "a cluster moved to the default shard");
  assert.equal(childInShard({}, { [SHARD_LABEL]: "b" }), false, "a child from before the shard label");
  const child = { [CLUSTER_LABEL]: "c", [SHARD_LABEL]: "a", team: "x" };
  assert.deepEqual(withClusterShard(child, { [SHARD_LABEL]: "b" }), { ...child, [SHARD_LABEL]: "b" });
  assert.deepEqual(withClusterShard(child, {}), { [CLUSTER_LABEL]: "c", team: "x" });
  assert.deepEqual(withClusterShard(undefined, { [SHARD_LABEL]: "b" }), { [SHARD_LABEL]: "b" });
});

Deno.test("configurations and Secrets NICO renders carry the cluster's shard label", () => {
  const machines = [machine("cp", { host: "127.0.0.1" }), machine("w", { host: "127.0.0.2" })];
  const render = (labels?: Record<string, string>) => {
    const c = { ...cluster({ controlPlane: { machines: ["cp"] }, dataPlane: { machines: ["w"] } }), labels };
    const selection = selectMachines({ cluster: c, machines, configurations: [] });
    return desiredConfigurations({
      cluster: c,
      selection,
      machines,
      bootstrap: "cp",
      endpoint: resolveEndpoint(c.spec, machines[0], "cp"),
      gitRepo: "https://127.0.0.1/flake.git",
      nio: "v1",
    }).map((d) => d.metadata.labels?.[SHARD_LABEL]);
  };
  assert.deepEqual(render({ [SHARD_LABEL]: "edge-1" }), ["edge-1", "edge-1"]);
  assert.deepEqual(render({}), [undefined, undefined]);
  assert.deepEqual(render(undefined), [undefined, undefined]);
  const c = (labels?: Record<string, string>) =>
    ({ metadata: { name: "prod", namespace: NS, uid: "u", ...(labels ? { labels } : {}) } }) as KubernetesCluster;
  assert.deepEqual(owned(c({ [SHARD_LABEL]: "a" }), "s", "Opaque", {}).metadata.labels, {
    [CLUSTER_LABEL]: "prod",
    [SHARD_LABEL]: "a",
  });
  assert.deepEqual(owned(c(), "s", "Opaque", {}).metadata.labels, { [CLUSTER_LABEL]: "prod" });
});

Deno.test("labelsToWrite: the shard label follows the cluster; others' labels stay", () => {
  const want = (shard?: string) => ({ [CLUSTER_LABEL]: "c", ...shardLabels(shard) });
  const cases: [string, Record<string, string> | undefined, Record<string, string>, unknown][] = [
    ["in step", { ...want("a"), team: "x" }, want("a"), undefined],
    ["moved a → b", { ...want("a"), team: "x" }, want("b"), { ...want("b"), team: "x" }],
    ["moved to the default shard", { ...want("a"), team: "x" }, want(), { ...want(), team: "x" }],
    ["from before the shard label", want(), want("a"), want("a")],
    ["nothing yet", undefined, want("a"), want("a")],
  ];
  for (const [name, existing, desired, expected] of cases) {
    assert.deepEqual(labelsToWrite(existing, desired), expected, name);
  }
});

Deno.test("mayHoldStrays: a moved cluster, or one whose status names Machines the cache has no configuration of", () => {
  const base: StrayInput = { shard: "b", hasStatus: true, statusShard: "b", statusMachines: 3, cachedConfigs: 3 };
  const cases: [string, Partial<StrayInput>, boolean][] = [
    ["in step", {}, false],
    ["moved here from a", { statusShard: "a" }, true],
    ["moved to the default shard", { shard: undefined }, true],
    ["children from before the shard label (an upgrade)", { cachedConfigs: 0 }, true],
    ["never reconciled: no children to look for", { hasStatus: false, statusShard: undefined }, false],
    ["more configurations than Machines named (a scale-down)", { cachedConfigs: 4 }, false],
  ];
  for (const [name, change, expected] of cases) assert.equal(mayHoldStrays({ ...base, ...change }), expected, name);
});

Deno.test("admission reads the same configurations from a shard's split caches as from one whole cache", () => {
  const labelled = (c: NixosConfiguration, shard?: string) => ({
    ...c,
    metadata: { ...c.metadata, labels: { ...c.metadata.labels, ...shardLabels(shard) } },
  });
  const all = [
    labelled(ownedConfig("a", "m-1", "control-plane", "uid-a"), "a"),
    labelled(ownedConfig("b", "m-2", "worker", "uid-b")),
    labelled(ownedConfig("b", "m-3", "control-plane", "uid-b")),
    { metadata: { name: "hand-made", namespace: NS }, spec: { machineRef: { name: "m-4" } } } as NixosConfiguration,
  ];
  const whole = staticLookup({ configurations: all });
  for (const shard of [undefined, "a"]) {
    const own = all.filter((c) => selects(shardChildSelector(shard), c.metadata.labels ?? {}));
    const others = all.filter((c) => !own.includes(c)).map((c) => keepTargetOnly(c) as NixosConfiguration);
    const split = informerLookup({
      machines: staticCache(MACHINES, []),
      configs: unionCache(staticCache(NIXOS_CONFIGURATIONS, own), staticCache(NIXOS_CONFIGURATIONS, others)),
      clusters: staticCache(KUBERNETES_CLUSTERS, []),
    });
    const names = (cs: NixosConfiguration[]) => cs.map((c) => c.metadata.name).sort();
    for (const [c, uid] of [["a", "uid-a"], ["b", "uid-b"]]) {
      const ref = { name: c!, namespace: NS, uid: uid! };
      assert.deepEqual(names(split.ownedConfigurations(ref)), names(whole.ownedConfigurations(ref)), `${shard} ${c}`);
      const noUid = { name: c!, namespace: NS };
      assert.deepEqual(names(split.ownedConfigurations(noUid)), names(whole.ownedConfigurations(noUid)));
    }
    for (const m of ["m-1", "m-2", "m-3", "m-4"]) {
      assert.deepEqual(names(split.configurationsOf(NS, m)), names(whole.configurationsOf(NS, m)), `${shard} ${m}`);
    }
  }
});
