/**
 * controllers/cluster/indexes.ts: what one pass over a cluster reads from the indexed caches — its own Machines,
 * configurations, runs and decommission jobs, the pool of a selector plane — and nothing of other clusters.
 */
import assert from "node:assert/strict";
import type { KubernetesCluster } from "../../crds/kubernetescluster.ts";
import { CLUSTER_LABEL } from "../../core/contract/labels.ts";
import type { DecommissionJob, Machine, NixosConfiguration } from "../../core/contract/nio.ts";
import { NIO_MACHINE_LABEL } from "../../core/contract/nio.ts";
import type { BatchJob } from "../../core/nodes/runs.ts";
import {
  clusterCacheOf,
  CONFIG_INDEXES,
  DECOMMISSION_INDEXES,
  type Indexed,
  JOB_INDEXES,
  MACHINE_INDEXES,
} from "../../controllers/cluster/indexes.ts";
import type { KubeObject } from "../../lib/kube/client.ts";
import { keyOf } from "../../lib/runtime/keys.ts";
import { type IndexFunc, Store } from "../../lib/runtime/store.ts";

function indexed<T extends KubeObject>(items: T[], indexes: Record<string, IndexFunc<T>>): Indexed<T> {
  const store = new Store<T>();
  for (const [name, fn] of Object.entries(indexes)) store.addIndex(name, fn);
  for (const o of items) store.set(o);
  return { get: (ns, name) => store.get(keyOf(ns, name)), byIndex: (n, v) => store.byIndex(n, v) };
}

const ns = "ns";
const machine = (name: string, labels: Record<string, string> = {}, namespace = ns): Machine =>
  ({ metadata: { name, namespace, labels }, spec: { host: "127.0.0.1" } }) as Machine;
const owner = (
  uid: string,
) => [{ apiVersion: "v1alpha1", kind: "KubernetesCluster", name: "x", uid, controller: true }];
const config = (name: string, target: string, uid?: string): NixosConfiguration =>
  ({
    metadata: { name, namespace: ns, ...(uid ? { ownerReferences: owner(uid) } : {}) },
    spec: { machineRef: { name: target } },
  }) as NixosConfiguration;
const run = (name: string, of: string, kind = "NixCronJob"): BatchJob => ({
  metadata: { name, namespace: ns, ownerReferences: [{ apiVersion: "v1", kind, name: `${of}-day2`, uid: name }] },
});
const decommission = (name: string, m: string): DecommissionJob =>
  ({ metadata: { name, namespace: ns, labels: { [NIO_MACHINE_LABEL]: m } } }) as DecommissionJob;
const cluster = (name: string, spec: unknown): KubernetesCluster =>
  ({ metadata: { name, namespace: ns, uid: `uid-${name}` }, spec }) as KubernetesCluster;

const caches = {
  machines: indexed([
    machine("a-1", { [CLUSTER_LABEL]: "a" }),
    machine("a-2", { [CLUSTER_LABEL]: "a" }),
    machine("b-1", { [CLUSTER_LABEL]: "b" }),
    machine("free-1", { role: "w" }),
    machine("free-2"),
    machine("listed"),
    machine("free-other-ns", {}, "other"),
  ], MACHINE_INDEXES),
  configs: indexed([
    config("a.a-1", "a-1", "uid-a"),
    config("b.b-1", "b-1", "uid-b"),
    config("foreign", "listed"),
    config("foreign-2", "free-2"),
  ], CONFIG_INDEXES),
  secrets: { get: () => undefined },
  jobs: indexed([run("r-a", "a.a-1"), run("r-a2", "a.a-1", "CronJob"), run("r-b", "b.b-1")], JOB_INDEXES),
  decommissions: indexed([decommission("d-a2", "a-2"), decommission("d-b", "b-1")], DECOMMISSION_INDEXES),
};

const names = (xs: { metadata: { name: string } }[]) => xs.map((x) => x.metadata.name).sort();

const cases: { name: string; cluster: KubernetesCluster; want: Record<string, string[]> }[] = [
  {
    name: "an explicit cluster: what it lists and claims, their configurations, runs and decommissions",
    cluster: cluster("a", { controlPlane: { machines: ["a-1"] }, dataPlane: { machines: ["listed"] } }),
    want: {
      machines: ["a-1", "a-2", "listed"],
      configs: ["a.a-1", "foreign"],
      jobs: ["r-a", "r-a2"],
      decommissions: ["d-a2"],
    },
  },
  {
    name: "a selector plane also sees the namespace's unclaimed Machines and what targets them",
    cluster: cluster("c", { controlPlane: { machineSelector: { matchLabels: { role: "w" } }, count: 1 } }),
    want: { machines: ["free-1", "free-2", "listed"], configs: ["foreign", "foreign-2"], jobs: [], decommissions: [] },
  },
  {
    name: "a cluster that names another's Machine sees it (to say it is claimed), and nothing else of that cluster",
    cluster: cluster("d", { controlPlane: { machines: ["b-1"] } }),
    want: { machines: ["b-1"], configs: ["b.b-1"], jobs: [], decommissions: ["d-b"] },
  },
];

Deno.test("one pass reads its own cluster's objects by index", async (t) => {
  for (const c of cases) {
    await t.step(c.name, () => {
      const got = clusterCacheOf(caches, c.cluster);
      assert.deepEqual({
        machines: names(got.machines),
        configs: names(got.configs),
        jobs: names(got.jobs),
        decommissions: names(got.decommissions),
      }, c.want);
    });
  }
});

Deno.test("with shards: the others' configurations say which Machines are taken, never what a cluster owns", () => {
  // Shard-split caches: a's own configuration in the shard's cache; b's, someone else's, and a stray of a's (still
  // labelled for the shard a left) in the others' cache.
  const split = {
    ...caches,
    configs: indexed([config("a.a-1", "a-1", "uid-a")], CONFIG_INDEXES),
    others: indexed([
      config("b.b-1", "b-1", "uid-b"),
      config("foreign", "listed"),
      config("foreign-2", "free-2"),
      config("a.a-2", "a-2", "uid-a"),
    ], CONFIG_INDEXES),
  };
  for (const c of cases) {
    const got = clusterCacheOf(split, c.cluster);
    // The same as one cache of everything, but a's stray: a pass reads it as taken by nobody (adopt.ts relabels it).
    assert.deepEqual(names(got.configs), c.want.configs, c.name);
  }
});
