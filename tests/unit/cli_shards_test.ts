/** `nico get` and `nico describe` say which shard a cluster belongs to, and which one reconciled it last. */
import assert from "node:assert/strict";
import { renderDescribe } from "../../cli/describe.ts";
import { renderGet, shardCell } from "../../cli/get.ts";
import { clusterView } from "../../cli/observe.ts";
import { SHARD_LABEL } from "../../core/contract/labels.ts";
import type { KubernetesCluster } from "../../crds/kubernetescluster.ts";

const NOW = new Date("2026-01-01T01:00:00Z");
const STYLE = { color: false, width: Infinity };

function named(name: string, label?: string, written?: string | null): KubernetesCluster {
  return {
    apiVersion: "nico.homystack.com/v1alpha1",
    kind: "KubernetesCluster",
    metadata: {
      name,
      namespace: "default",
      creationTimestamp: "2026-01-01T00:00:00Z",
      ...(label ? { labels: { [SHARD_LABEL]: label } } : {}),
    },
    spec: { controlPlane: { machines: ["cp-1"] } },
    // written: the shard that wrote status last (null: the default shard, undefined: nobody yet).
    status: written === undefined
      ? { phase: "Provisioning" }
      : { phase: "Ready", observedGeneration: 1, ...(written ? { shard: written } : {}) },
  } as unknown as KubernetesCluster;
}

Deno.test("shardCell: the label's shard, and the shard it moves from while status still names another", () => {
  const cases: [KubernetesCluster, string][] = [
    [named("a"), "default"],
    [named("b", "edge-1"), "edge-1"],
    [named("c", "edge-1", "edge-1"), "edge-1"],
    [named("d", "edge-2", "edge-1"), "edge-2 (from edge-1)"],
    [named("e", "edge-2", null), "edge-2 (from default)"],
    [named("f", undefined, "edge-1"), "default (from edge-1)"],
    [named("g", "edge-3", undefined), "edge-3"],
  ];
  for (const [c, want] of cases) assert.equal(shardCell(c), want, c.metadata.name);
});

Deno.test("nico get: a SHARD column once any cluster is sharded, none for a fleet on the default shard", () => {
  const lines = renderGet([named("edge", "edge-1", "edge-1"), named("home", undefined, null)], false, STYLE, NOW)
    .split("\n");
  assert.deepEqual(lines[0]!.split(/\s{2,}/), ["NAME", "PHASE", "CONTROL PLANE", "WORKERS", "SHARD", "ROLLOUT", "AGE"]);
  const at = lines[0]!.indexOf("SHARD");
  const cell = (name: string) => lines.find((l) => l.startsWith(name))!.slice(at).split(/\s+/)[0];
  assert.equal(cell("edge"), "edge-1");
  assert.equal(cell("home"), "default");
  const plain = renderGet([named("home", undefined, null)], false, STYLE, NOW).split("\n")[0]!;
  assert.ok(!plain.includes("SHARD"), plain);
});

Deno.test("nico describe: the cluster's row names its shard unless it is the default one", () => {
  const text = (c: KubernetesCluster) =>
    renderDescribe(clusterView(c, [], [], NOW), STYLE, { now: NOW, showConditions: "problems" });
  assert.match(text(named("edge", "edge-2", "edge-1")), /KubernetesCluster\/edge \(shard edge-2, moving from edge-1\)/);
  assert.match(text(named("edge", "edge-2", "edge-2")), /KubernetesCluster\/edge \(shard edge-2\)/);
  assert.match(text(named("home", undefined, null)), /KubernetesCluster\/home /);
  assert.doesNotMatch(text(named("home", undefined, null)), /shard/);
});
