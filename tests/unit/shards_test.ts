/** Shards: which clusters a shard takes, its Lease, the shard label's admission rule, and `--shard`. */
import assert from "node:assert/strict";
import { SHARD_LABEL } from "../../core/contract/labels.ts";
import {
  namedShard,
  parseNamespaceShards,
  shardLabelProblem,
  shardLeaseName,
  shardOfLabels,
  shardSelector,
} from "../../core/contract/shards.ts";
import { OptionsError, parseRunOptions } from "../../cli/options.ts";
import { withShard } from "../../controllers/cluster/status.ts";
import { statusWrite } from "../../core/status/write.ts";
import { Case, cluster, fleet, runCase, three, withRepo } from "../webhook_kit.ts";

const labelled = (shard?: string) => shard === undefined ? {} : { [SHARD_LABEL]: shard };

/** Whether `labels` match a selector of the two forms a shard's selector takes (`!key`, `key=value`), as the API server reads them. */
function selects(selector: string, labels: Record<string, string>): boolean {
  if (selector.startsWith("!")) return !(selector.slice(1) in labels);
  const [key, value] = selector.split("=") as [string, string];
  return labels[key] === value;
}
const belongsToShard = (labels: Record<string, string>, shard: string | undefined) =>
  selects(shardSelector(shard), labels);

Deno.test("every cluster belongs to exactly one shard's selector: unlabelled ones to the default shard", () => {
  const shards = [undefined, "a", "b"];
  for (const label of [undefined, "a", "b", "c"]) {
    const owners = shards.filter((s) => belongsToShard(labelled(label), s));
    // "c" names a shard nobody runs: no one of these takes it (docs/operations.md says how to find them).
    assert.deepEqual(owners, label === "c" ? [] : [label], `label ${label}`);
    assert.equal(shardOfLabels(labelled(label)), label);
  }
  assert.equal(belongsToShard({ other: "x" }, undefined), true);
  assert.equal(belongsToShard({ [SHARD_LABEL]: "a" }, undefined), false);
});

Deno.test("a shard's selector and Lease name", () => {
  assert.equal(shardSelector(undefined), "!nico.homystack.com/shard");
  assert.equal(shardSelector("edge-1"), "nico.homystack.com/shard=edge-1");
  assert.equal(shardLeaseName("nico-leader", undefined), "nico-leader");
  assert.equal(shardLeaseName("nico-leader", "edge-1"), "nico-leader-edge-1");
  for (const flag of [undefined, "", "default"]) assert.equal(namedShard(flag), undefined, `--shard ${flag}`);
  assert.equal(namedShard("a"), "a");
});

Deno.test("the shard label: a shard name, never 'default'", () => {
  assert.equal(shardLabelProblem(undefined), undefined);
  assert.equal(shardLabelProblem({ [SHARD_LABEL]: "edge-1" }), undefined);
  assert.match(shardLabelProblem({ [SHARD_LABEL]: "default" })!, /remove the label/);
  assert.match(shardLabelProblem({ [SHARD_LABEL]: "Edge_1" })!, /is not a shard name/);
  assert.match(shardLabelProblem({ [SHARD_LABEL]: "-a" })!, /is not a shard name/);
  // At most 40 characters: 40 pass, 41 do not (the Lease name `<base>-<shard>` must stay a valid name).
  assert.equal(shardLabelProblem({ [SHARD_LABEL]: "a".repeat(40) }), undefined);
  assert.equal(shardLabelProblem({ [SHARD_LABEL]: `a${"-".repeat(38)}b` }), undefined);
  assert.match(shardLabelProblem({ [SHARD_LABEL]: "a".repeat(41) })!, /is not a shard name .*at most 40/);
});

Deno.test("--shard and NICO_SHARD", () => {
  assert.equal(parseRunOptions([], {}).shard, undefined);
  assert.equal(parseRunOptions(["--shard", "edge-1"], {}).shard, "edge-1");
  assert.equal(parseRunOptions([], { NICO_SHARD: "b" }).shard, "b");
  assert.equal(parseRunOptions(["--shard=default"], {}).shard, "default");
  assert.throws(() => parseRunOptions(["--shard", "Edge 1"], {}), OptionsError);
  // At most 40 characters, as the label.
  assert.equal(parseRunOptions(["--shard", "a".repeat(40)], {}).shard, "a".repeat(40));
  assert.throws(() => parseRunOptions(["--shard", "a".repeat(41)], {}), OptionsError);
  assert.throws(() => parseRunOptions([], { NICO_SHARD: "a".repeat(41) }), /at most 40/);
});

Deno.test("status.shard: written by a named shard, removed by the default one, and at once", () => {
  const base = { phase: "Ready" as const, observedGeneration: 1 };
  assert.deepEqual(withShard(base, "a"), { ...base, shard: "a" });
  assert.deepEqual(withShard(base, undefined), base);
  // A move is not progress to hold back: the reader sees the new shard with the first write.
  const when = statusWrite({ ...base, shard: "a" }, base, undefined, 0, 10_000);
  assert.deepEqual(when, { kind: "now", why: "shard" });
});

const withLabels = (obj: ReturnType<typeof cluster>, labels: Record<string, string>) => ({
  ...obj,
  metadata: { ...obj.metadata, labels },
});

const admissionCases: Case[] = [
  {
    name: "a cluster created in a shard is admitted",
    objects: { machines: fleet(3) },
    object: withLabels(cluster(withRepo(three)), { [SHARD_LABEL]: "edge-1" }),
    errors: [],
  },
  {
    name: "labelling a cluster 'default' is refused: the default shard takes the unlabelled",
    objects: { machines: fleet(3) },
    op: "UPDATE",
    object: withLabels(cluster(withRepo(three)), { [SHARD_LABEL]: "default" }),
    oldObject: cluster(withRepo(three)),
    errors: [/to put a cluster in the default shard remove the label/],
  },
  {
    name: "a shard label that is no shard name is refused, even on a metadata-only update",
    op: "UPDATE",
    object: withLabels(cluster(withRepo(three)), { [SHARD_LABEL]: "Edge.1" }),
    oldObject: cluster(withRepo(three)),
    errors: [/"Edge.1" is not a shard name/],
  },
  {
    name: "a bad label already there does not block other updates (removing a finalizer, say)",
    op: "UPDATE",
    object: withLabels(cluster(withRepo(three)), { [SHARD_LABEL]: "default", other: "x" }),
    oldObject: withLabels(cluster(withRepo(three)), { [SHARD_LABEL]: "default" }),
    errors: [],
  },
  {
    name: "a namespace the operator restricts may use only its shards (--namespace-shards)",
    objects: { machines: fleet(3) },
    op: "UPDATE",
    object: withLabels(cluster(withRepo(three)), { [SHARD_LABEL]: "platform" }),
    oldObject: cluster(withRepo(three)),
    options: { namespaceShards: parseNamespaceShards("infra:edge-1,infra:edge-2,other:platform") },
    errors: [
      `metadata.labels[${SHARD_LABEL}]: namespace infra may use the shards edge-1, edge-2 (and the default, without ` +
      "the label), not platform; the operator lists them in --namespace-shards",
    ],
  },
  {
    name: "…its own shards, and the default, pass",
    objects: { machines: fleet(3) },
    object: withLabels(cluster(withRepo(three)), { [SHARD_LABEL]: "edge-2" }),
    options: { namespaceShards: parseNamespaceShards("infra:edge-1,infra:edge-2") },
    errors: [],
  },
  {
    name: "…and a namespace not listed may use any",
    objects: { machines: fleet(3) },
    object: withLabels(cluster(withRepo(three)), { [SHARD_LABEL]: "platform" }),
    options: { namespaceShards: parseNamespaceShards("other:edge-1") },
    errors: [],
  },
];

Deno.test("--namespace-shards: namespace:shard pairs", () => {
  assert.throws(() => parseNamespaceShards("infra=edge-1"), /infra=edge-1 is not namespace:shard/);
  assert.throws(() => parseNamespaceShards("infra:Edge"), /not namespace:shard/);
  assert.equal(parseNamespaceShards("").size, 0);
});

for (const c of admissionCases) Deno.test(`admission: ${c.name}`, () => runCase(c));
