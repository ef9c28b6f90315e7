/** controllers/cluster/mappers.ts: which events wake which clusters, as a table. */
import assert from "node:assert/strict";
import type { KubernetesCluster } from "../../crds/kubernetescluster.ts";
import { CLUSTER_LABEL } from "../../core/contract/labels.ts";
import type { DecommissionJob, Machine, NixosConfiguration } from "../../core/contract/nio.ts";
import { NIO_MACHINE_LABEL } from "../../core/contract/nio.ts";
import type { BatchJob } from "../../core/nodes/runs.ts";
import {
  clusterOfLabel,
  configurationClusters,
  decommissionClusters,
  type Lookup,
  machineClusters,
  machineUpdateChangesNothing,
  type MapperCaches,
  ofCachedClusters,
  ownStatusWrite,
  runClusters,
} from "../../controllers/cluster/mappers.ts";
import { ClusterMemories } from "../../controllers/cluster/memory.ts";
import { CLUSTER_INDEXES, type Indexed } from "../../controllers/cluster/indexes.ts";
import type { KubeObject } from "../../lib/kube/client.ts";
import { keyOf } from "../../lib/runtime/keys.ts";
import { type IndexFunc, Store } from "../../lib/runtime/store.ts";

/** A cache over a fixed list of objects: a Store with the controller's own indexes, as an Informer has. */
function lookup<T extends KubeObject>(items: T[], indexes: Record<string, IndexFunc<T>> = {}): Lookup<T> & Indexed<T> {
  const store = new Store<T>();
  for (const [name, fn] of Object.entries(indexes)) store.addIndex(name, fn);
  for (const o of items) store.set(o);
  return { get: (ns, name) => store.get(keyOf(ns, name)), byIndex: (name, value) => store.byIndex(name, value) };
}

const cluster = (name: string, spec: unknown, ns = "ns") =>
  ({ metadata: { name, namespace: ns, uid: `uid-${name}` }, spec }) as KubernetesCluster;
const machine = (name: string, labels: Record<string, string> = {}, ns = "ns"): Machine =>
  ({ metadata: { name, namespace: ns, labels }, spec: { host: "127.0.0.1" } }) as Machine;
const config = (name: string, machineName: string, labels: Record<string, string> = {}): NixosConfiguration =>
  ({ metadata: { name, namespace: "ns", labels }, spec: { machineRef: { name: machineName } } }) as NixosConfiguration;

const caches: MapperCaches = {
  clusters: lookup([
    cluster("prod", { controlPlane: { machines: ["cp-1"], spares: ["spare-1"] } }),
    cluster("pool", { controlPlane: { machineSelector: { matchLabels: { role: "cp" } }, count: 1 } }),
    cluster("elsewhere", { controlPlane: { machines: ["cp-1"] } }, "other"),
  ], CLUSTER_INDEXES),
  machines: lookup([machine("cp-1"), machine("pooled", { role: "cp" }), machine("loose")]),
  configs: lookup([config("prod.cp-1", "cp-1", { [CLUSTER_LABEL]: "prod" }), config("foreign", "pooled")]),
};

/** What each event maps to: the case, the mapper's answer, the cluster keys it should be. */
const MAPPED: [string, () => string | readonly string[] | undefined, string[]][] = [
  [
    "a labelled Secret: its cluster",
    () => clusterOfLabel({ metadata: { namespace: "ns", labels: { [CLUSTER_LABEL]: "prod" } } }),
    ["ns/prod"],
  ],
  ["an unlabelled object: none", () => clusterOfLabel({ metadata: { namespace: "ns" } }), []],
  [
    "a configuration of NICO's: its cluster",
    () => configurationClusters(caches)(config("prod.cp-1", "cp-1", { [CLUSTER_LABEL]: "prod" }), "update", undefined),
    ["ns/prod"],
  ],
  [
    "someone else's configuration: the clusters that may want its Machine",
    () => configurationClusters(caches)(config("foreign", "pooled"), "add", undefined),
    ["ns/pool"],
  ],
  [
    "a deleted foreign configuration: its Machine as it named before",
    () => configurationClusters(caches)(unreferenced("foreign"), "delete", config("foreign", "cp-1")),
    ["ns/prod"],
  ],
  [
    "a foreign configuration of an unknown Machine: none",
    () => configurationClusters(caches)(config("x", "gone"), "add", undefined),
    [],
  ],
  [
    "a listed Machine: the cluster listing it, in its namespace only",
    () => machineClusters(caches)(machine("cp-1"), "update", undefined),
    ["ns/prod"],
  ],
  ["a spare: its cluster", () => machineClusters(caches)(machine("spare-1"), "add", undefined), ["ns/prod"]],
  [
    "a Machine that stopped matching a selector: the cluster it matched",
    () => machineClusters(caches)(machine("pooled"), "update", machine("pooled", { role: "cp" })),
    ["ns/pool"],
  ],
  [
    "a Machine claimed by a cluster: that cluster",
    () => machineClusters(caches)(machine("loose", { [CLUSTER_LABEL]: "prod" }), "update", undefined),
    ["ns/prod"],
  ],
  ["a Machine nobody wants: none", () => machineClusters(caches)(machine("loose"), "add", undefined), []],
  [
    "a run of a node's day-two NixCronJob: the cluster of its configuration",
    () => runClusters(caches)(job("run-1", "NixCronJob", "prod.cp-1-day2"), "add", undefined),
    ["ns/prod"],
  ],
  [
    "a scheduled run (its CronJob): the same",
    () => runClusters(caches)(job("run-2", "CronJob", "prod.cp-1-day2"), "add", undefined),
    ["ns/prod"],
  ],
  [
    "a Job of something else: none",
    () => runClusters(caches)(job("backup", "CronJob", "nightly"), "add", undefined),
    [],
  ],
  [
    "a run of a foreign configuration: none",
    () => runClusters(caches)(job("run-3", "NixCronJob", "foreign-day2"), "add", undefined),
    [],
  ],
  [
    "a decommission of a listed Machine: its cluster",
    () => decommissionClusters(caches)(decommission("cp-1"), "update", undefined),
    ["ns/prod"],
  ],
  [
    "a decommission of an unknown Machine: none",
    () => decommissionClusters(caches)(decommission("gone"), "add", undefined),
    [],
  ],
];

Deno.test("each mapper wakes the clusters its object concerns, and no other", async (t) => {
  for (const [what, map, want] of MAPPED) {
    await t.step(what, () => {
      const got = map();
      assert.deepEqual(got === undefined ? [] : typeof got === "string" ? [got] : [...got], want);
    });
  }
});

Deno.test("predicates: NICO's own status write and a Machine's status churn wake nothing; anything else does", () => {
  const memories = new ClusterMemories();
  const skip = ownStatusWrite(memories);
  const old = { ...cluster("prod", { a: 1 }), status: { phase: "Provisioning" } } as KubernetesCluster;
  const at = (rv: string, status: unknown) =>
    ({ ...old, metadata: { ...old.metadata, resourceVersion: rv }, status }) as KubernetesCluster;
  const withRv = { ...old, metadata: { ...old.metadata, resourceVersion: "1" } } as KubernetesCluster;
  assert.equal(skip(at("2", { phase: "Ready" }), "update", withRv), false, "nothing remembered: reconcile");
  memories.of("ns/prod", "uid-prod").ownStatus = "2";
  assert.equal(skip(at("2", { phase: "Ready" }), "update", withRv), true, "NICO's own write");
  assert.equal(skip(at("3", { phase: "Ready" }), "update", at("2", { phase: "Ready" })), false, "someone else's");
  assert.equal(skip(at("2", { phase: "Ready" }), "delete", withRv), false, "a delete always reconciles");

  const m = machine("cp-1");
  const churn = { ...m, status: { conditions: [{ type: "Reconciling", status: "True" }] } } as Machine;
  assert.equal(machineUpdateChangesNothing(churn, "update", m), true);
  assert.equal(machineUpdateChangesNothing(machine("cp-1", { role: "x" }), "update", m), false, "a label change");
  assert.equal(machineUpdateChangesNothing(m, "add", undefined), false);
  assert.equal(machineUpdateChangesNothing(m, "delete", m), false);
});

function job(name: string, kind: string, owner: string): BatchJob {
  return {
    metadata: { name, namespace: "ns", ownerReferences: [{ apiVersion: "x/v1", kind, name: owner, uid: "u" }] },
  };
}

/** A configuration whose spec names no Machine (as a deleted object may arrive). */
function unreferenced(name: string): NixosConfiguration {
  return { ...config(name, "x"), spec: {} } as unknown as NixosConfiguration;
}

function decommission(machineName: string): DecommissionJob {
  return { metadata: { name: `decom-${machineName}`, namespace: "ns", labels: { [NIO_MACHINE_LABEL]: machineName } } };
}

Deno.test("ofCachedClusters: only clusters of this cache (this shard's) are woken, whatever the mapper answers", () => {
  const cached = new Set(["ns/mine", "ns/also-mine"]);
  const clusters = { get: (ns: string | undefined, name: string) => (cached.has(`${ns}/${name}`) ? {} : undefined) };
  const cases: [string | readonly string[] | undefined, string | readonly string[] | undefined][] = [
    ["ns/mine", ["ns/mine"]],
    ["ns/theirs", undefined],
    [["ns/theirs", "ns/mine", "other/mine"], ["ns/mine"]],
    [["ns/mine", "ns/also-mine"], ["ns/mine", "ns/also-mine"]],
    [[], undefined],
    [undefined, undefined],
  ];
  for (const [mapped, want] of cases) {
    const map = ofCachedClusters(clusters, () => mapped);
    assert.deepEqual(map({}, "update", undefined), want, JSON.stringify(mapped));
  }
});
