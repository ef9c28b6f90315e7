/**
 * The indexes of the cluster controller's caches, and what a pass and a
 * mapper look up with them: the objects one cluster concerns, found by key
 * (its claim label, its controller uid, the Machines it names, their
 * configurations, runs and decommission jobs), never by scanning every
 * object of the namespace. A pass costs what its own cluster holds, not
 * what the fleet holds; only a selector plane reads the namespace's
 * unclaimed Machines (the pool it picks from).
 *
 * @module
 */
import type { KubernetesCluster } from "../../crds/kubernetescluster.ts";
import { CLUSTER_LABEL } from "../../core/contract/labels.ts";
import { configName } from "../../core/contract/names.ts";
import { dayTwoName, type DecommissionJob, type Machine, NIO_MACHINE_LABEL } from "../../core/contract/nio.ts";
import type { NixosConfiguration } from "../../core/contract/nio.ts";
import type { BatchJob } from "../../core/nodes/runs.ts";
import { keyOf } from "../../lib/runtime/keys.ts";
import { byControllerIndex, byLabelIndex, type IndexFunc } from "../../lib/runtime/store.ts";
import type { ClusterCache } from "./scope.ts";
import type { Secret } from "./secrets.ts";

/** Index names (each resource's own). */
export const BY_CLAIM = "claim";
export const UNCLAIMED = "unclaimed";
export const BY_OWNER = "owner";
export const BY_MACHINE = "machine";
export const BY_RUN_OWNER = "runOwner";
export const WANTS_MACHINE = "wantsMachine";
export const HAS_SELECTOR = "hasSelector";

type Plane = { machines?: string[]; spares?: string[]; machineSelector?: unknown } | undefined;
const planesOf = (c: KubernetesCluster): Plane[] => {
  const spec = c.spec as { controlPlane?: Plane; dataPlane?: Plane } | undefined;
  return [spec?.controlPlane, spec?.dataPlane];
};
/** A plane that picks by selector: it names no Machines. */
const picksBySelector = (p: Plane) => p !== undefined && !(p.machines?.length);

/** Machines: by claim (`ns/cluster`), and the unclaimed ones by namespace. */
export const MACHINE_INDEXES: Record<string, IndexFunc<Machine>> = {
  [BY_CLAIM]: byLabelIndex(CLUSTER_LABEL),
  [UNCLAIMED]: (m) => m.metadata.labels?.[CLUSTER_LABEL] ? [] : [m.metadata.namespace ?? ""],
};

/** Configurations: by controller uid, and by target Machine (`ns/machine`). */
export const CONFIG_INDEXES: Record<string, IndexFunc<NixosConfiguration>> = {
  [BY_OWNER]: byControllerIndex,
  [BY_MACHINE]: (c) => c.spec?.machineRef?.name ? [keyOf(c.metadata.namespace, c.spec.machineRef.name)] : [],
};

/** NIO v1's run Jobs: by the NixCronJob or CronJob that made them (`ns/<config>-day2`). */
export const JOB_INDEXES: Record<string, IndexFunc<BatchJob>> = {
  [BY_RUN_OWNER]: (j) =>
    (j.metadata.ownerReferences ?? []).filter((o) => o.kind === "NixCronJob" || o.kind === "CronJob")
      .map((o) => keyOf(j.metadata.namespace, o.name)),
};

/** Decommission NixJobs: by the Machine they clean (`ns/machine`). */
export const DECOMMISSION_INDEXES: Record<string, IndexFunc<DecommissionJob>> = {
  [BY_MACHINE]: byLabelIndex(NIO_MACHINE_LABEL),
};

/** Clusters: by each Machine they list or keep as a spare (`ns/machine`), and those with a selector plane by namespace. */
export const CLUSTER_INDEXES: Record<string, IndexFunc<KubernetesCluster>> = {
  [WANTS_MACHINE]: (c) =>
    [
      ...new Set(planesOf(c).flatMap((p) => [...(p?.machines ?? []), ...(p?.spares ?? [])])),
    ].map((m) => keyOf(c.metadata.namespace, m)),
  [HAS_SELECTOR]: (c) => planesOf(c).some(picksBySelector) ? [c.metadata.namespace ?? ""] : [],
};

/** A cache with named indexes (an Informer is one). */
export interface Indexed<T> {
  get(namespace: string | undefined, name: string): T | undefined;
  byIndex(name: string, value: string): T[];
}

/** What can take indexes (an Informer). */
interface Indexable<T> {
  hasIndex(name: string): boolean;
  addIndex(name: string, fn: IndexFunc<T>): unknown;
}

/** Adds each of `indexes` the cache does not have yet. */
export function ensureIndexes<T>(cache: Indexable<T> | undefined, indexes: Record<string, IndexFunc<T>>): void {
  for (const [name, fn] of Object.entries(indexes)) if (cache && !cache.hasIndex(name)) cache.addIndex(name, fn);
}

/** The cluster controller's caches, as they take indexes. */
export interface IndexableCaches {
  clusters: Indexable<KubernetesCluster>;
  machines: Indexable<Machine>;
  configs: Indexable<NixosConfiguration>;
  others?: Indexable<NixosConfiguration> | undefined;
  jobs?: Indexable<BatchJob> | undefined;
  decommissions?: Indexable<DecommissionJob> | undefined;
}

/** Gives the cluster controller's caches the indexes its passes and mappers look up (those they lack). */
export function indexClusterInformers(inf: IndexableCaches): void {
  ensureIndexes(inf.clusters, CLUSTER_INDEXES);
  ensureIndexes(inf.machines, MACHINE_INDEXES);
  ensureIndexes(inf.configs, CONFIG_INDEXES);
  ensureIndexes(inf.others, CONFIG_INDEXES);
  ensureIndexes(inf.jobs, JOB_INDEXES);
  ensureIndexes(inf.decommissions, DECOMMISSION_INDEXES);
}

/** The caches {@link clusterCacheOf} reads. */
export interface IndexedCaches {
  machines: Indexed<Machine>;
  configs: Indexed<NixosConfiguration>;
  /** With shards: the other shards' configurations, trimmed (controller.ts `keepTargetOnly`). */
  others?: Indexed<NixosConfiguration> | undefined;
  secrets: { get(namespace: string | undefined, name: string): Secret | undefined };
  jobs?: Indexed<BatchJob> | undefined;
  decommissions?: Indexed<DecommissionJob> | undefined;
}

/**
 * The cached objects one pass over `cluster` reads: the Machines it lists, claims or targets (and, with a
 * selector plane, the namespace's unclaimed ones), the configurations it owns or that target those Machines,
 * and the runs and decommission jobs of those. Every lookup is by index.
 */
export function clusterCacheOf(inf: IndexedCaches, cluster: KubernetesCluster): ClusterCache {
  const ns = cluster.metadata.namespace!;
  const name = cluster.metadata.name;
  const owned = cluster.metadata.uid ? inf.configs.byIndex(BY_OWNER, cluster.metadata.uid) : [];
  const machines = new Map<string, Machine>();
  const add = (m: Machine | undefined) => m && machines.set(m.metadata.name, m);
  const planes = planesOf(cluster);
  for (const p of planes) for (const n of [...(p?.machines ?? []), ...(p?.spares ?? [])]) add(inf.machines.get(ns, n));
  for (const m of inf.machines.byIndex(BY_CLAIM, keyOf(ns, name))) add(m);
  for (const c of owned) add(inf.machines.get(ns, c.spec?.machineRef?.name ?? ""));
  if (planes.some(picksBySelector)) { for (const m of inf.machines.byIndex(UNCLAIMED, ns)) add(m); }
  const configs = new Map<string, NixosConfiguration>(owned.map((c) => [c.metadata.name, c]));
  for (const m of machines.keys()) {
    // Another shard's (trimmed) configuration says its Machine is taken; one of this cluster's own found there is
    // a stray not yet relabelled (adopt.ts), never read as this cluster's.
    for (const c of inf.others?.byIndex(BY_MACHINE, keyOf(ns, m)) ?? []) {
      if (c.metadata.ownerReferences?.some((o) => o.uid === cluster.metadata.uid)) continue;
      if (!configs.has(c.metadata.name)) configs.set(c.metadata.name, c);
    }
    for (const c of inf.configs.byIndex(BY_MACHINE, keyOf(ns, m))) configs.set(c.metadata.name, c);
  }
  const jobs = new Map<string, BatchJob>();
  // Runs of this cluster's configurations: those it owns, and the names it would give each Machine's.
  const configNames = new Set([
    ...owned.map((c) => c.metadata.name),
    ...[...machines.keys()].map((m) => configName(name, m)),
  ]);
  for (const c of inf.jobs ? configNames : []) {
    for (const j of inf.jobs!.byIndex(BY_RUN_OWNER, keyOf(ns, dayTwoName(c)))) jobs.set(j.metadata.name, j);
  }
  const decommissions = [...machines.keys()].flatMap((m) => inf.decommissions?.byIndex(BY_MACHINE, keyOf(ns, m)) ?? []);
  return {
    machines: [...machines.values()],
    configs: [...configs.values()],
    config: (n) => inf.configs.get(ns, n),
    secret: (n) => inf.secrets.get(ns, n),
    jobs: [...jobs.values()],
    decommissions,
  };
}

/**
 * The clusters of the Machine's namespace that may want it (a superset; see mappers.ts
 * `clustersInterestedIn`): those it is or was claimed by, those listing it, and those with a selector plane.
 */
export function candidateClusters(
  clusters: Indexed<KubernetesCluster>,
  machine: Machine,
  old?: Machine,
): KubernetesCluster[] {
  const ns = machine.metadata.namespace;
  const out = new Map<string, KubernetesCluster>();
  const add = (c: KubernetesCluster | undefined) => c && out.set(c.metadata.name, c);
  for (const m of [machine, old]) {
    const claim = m?.metadata.labels?.[CLUSTER_LABEL];
    if (claim) add(clusters.get(ns, claim));
  }
  for (const c of clusters.byIndex(WANTS_MACHINE, keyOf(ns, machine.metadata.name))) add(c);
  for (const c of clusters.byIndex(HAS_SELECTOR, ns ?? "")) add(c);
  return [...out.values()];
}
