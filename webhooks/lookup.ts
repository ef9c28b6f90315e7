/**
 * What admission reads: Machines, NixosConfigurations and clusters from the
 * controller's caches (never a fresh list per request), by index: the
 * objects one request concerns, found by key, so an admission costs what the
 * cluster names, not what its namespace holds. Admission never reads a
 * Secret: whether the requester may use one is a SubjectAccessReview
 * (authorize.ts).
 *
 * @module
 */
import { KUBERNETES_CLUSTERS, type KubernetesCluster } from "../crds/kubernetescluster.ts";
import type { KubeObject } from "../lib/kube/client.ts";
import type { Resource } from "../lib/kube/resources.ts";
import { keyOf } from "../lib/runtime/keys.ts";
import type { Informer } from "../lib/runtime/informer.ts";
import { type IndexFunc, Store } from "../lib/runtime/store.ts";
import { type Machine, MACHINES, NIXOS_CONFIGURATIONS, type NixosConfiguration } from "../core/contract/nio.ts";
import type { ClusterRef } from "../core/machines/selection.ts";
import {
  ADMISSION_CLUSTER_INDEXES,
  ADMISSION_CONFIG_INDEXES,
  ADMISSION_MACHINE_INDEXES,
  BY_CLAIM,
  BY_CLUSTER_LABEL,
  BY_MACHINE,
  BY_OWNER,
  ENDPOINT_INDEX,
  HOST_INDEX,
  UNCLAIMED,
  WANTS_MACHINE,
} from "./indexes.ts";

/** The reads admission needs, each a lookup by key in a cache (synchronous). */
export interface AdmissionLookup {
  /** Machine `name` of `namespace`. */
  machine(namespace: string, name: string): Machine | undefined;
  /** The Machines claimed by cluster `cluster` of `namespace` (its claim label). */
  claimedMachines(namespace: string, cluster: string): Machine[];
  /** The namespace's unclaimed Machines: the pool a selector picks from. */
  unclaimedMachines(namespace: string): Machine[];
  /** The configurations of `namespace` that target Machine `machine`. */
  configurationsOf(namespace: string, machine: string): NixosConfiguration[];
  /** The configurations `cluster` owns: by its uid (controller reference), by its label while it has none. */
  ownedConfigurations(cluster: ClusterRef): NixosConfiguration[];
  /** The clusters of `namespace` that list Machine `machine` (or keep it as a spare). */
  clustersNaming(namespace: string, machine: string): KubernetesCluster[];
  /** The clusters of every namespace whose `spec.controlPlaneEndpoint` has this key (endpoint_rules.ts). */
  endpointUsers(key: string): KubernetesCluster[];
  /** The Machines of every namespace at this canonical host (endpoint_rules.ts). */
  machinesAt(host: string): Machine[];
}

/** What admission judges one cluster against: the objects its specs (new and, on UPDATE, old) concern. */
export interface AdmissionObjects {
  machines: Machine[];
  configurations: NixosConfiguration[];
  clusters: KubernetesCluster[];
}

type Plane = { machines?: unknown; spares?: unknown; machineSelector?: unknown } | undefined;
const names = (v: unknown): string[] => Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : [];
const planesOf = (spec: unknown): Plane[] => {
  const s = (typeof spec === "object" && spec !== null ? spec : {}) as { controlPlane?: Plane; dataPlane?: Plane };
  return [s.controlPlane, s.dataPlane];
};

/**
 * The objects admission reads for `cluster` with `specs` (the request's spec, and the old one on UPDATE): the
 * Machines they name (lists and spares), those the cluster claims or configures, and for a plane that selects the
 * namespace's unclaimed Machines; every configuration of those Machines and those the cluster owns; and the
 * clusters that name those Machines. The same objects a pass of the controller reads (controllers/cluster/indexes.ts),
 * found the same way: by key.
 */
export function admissionObjects(
  lookup: AdmissionLookup,
  cluster: ClusterRef,
  specs: readonly unknown[],
): AdmissionObjects {
  const ns = cluster.namespace;
  const machines = new Map<string, Machine>();
  const add = (m: Machine | undefined) => m && machines.set(m.metadata.name, m);
  const named = new Set<string>();
  let selects = false;
  for (const p of specs.flatMap(planesOf)) {
    const listed = names(p?.machines);
    for (const n of [...listed, ...names(p?.spares)]) named.add(n);
    if (p !== undefined && listed.length === 0) selects = true;
  }
  for (const n of named) add(lookup.machine(ns, n));
  for (const m of lookup.claimedMachines(ns, cluster.name)) add(m);
  const owned = lookup.ownedConfigurations(cluster);
  for (const c of owned) add(lookup.machine(ns, c.spec?.machineRef?.name ?? ""));
  if (selects) { for (const m of lookup.unclaimedMachines(ns)) add(m); }
  const configurations = new Map(owned.map((c) => [c.metadata.name, c]));
  for (const m of machines.keys()) {
    for (const c of lookup.configurationsOf(ns, m)) configurations.set(c.metadata.name, c);
  }
  const clusters = new Map<string, KubernetesCluster>();
  for (const m of named) for (const c of lookup.clustersNaming(ns, m)) clusters.set(c.metadata.name, c);
  // By name: a message that names one of several (the first cluster naming a Machine) does not depend on cache order.
  return {
    machines: byName(machines),
    configurations: byName(configurations),
    clusters: byName(clusters),
  };
}

function byName<T extends KubeObject>(m: Map<string, T>): T[] {
  return [...m.keys()].sort().map((k) => m.get(k)!);
}

/** Thrown by a lookup whose cache has not loaded yet: admission answers 503 and the API server retries later. */
export class LookupNotReady extends Error {
  override readonly name = "LookupNotReady";
}

/** NICO's informers, as {@link informerLookup} reads them. */
export interface LookupInformers {
  machines: Informer<Machine>;
  configs: Informer<NixosConfiguration>;
  clusters: Informer<KubernetesCluster>;
}

/** A cache as admission reads it (an {@link Informer} is one): synced, then by key and by index. */
export interface AdmissionCache<T extends KubeObject> {
  readonly resource: Resource;
  hasSynced(): boolean;
  get(namespace: string | undefined, name: string): T | undefined;
  byIndex(name: string, value: string): T[];
  hasIndex(name: string): boolean;
  addIndex(name: string, fn: IndexFunc<T>): unknown;
}

function ready<T extends KubeObject>(cache: AdmissionCache<T>): AdmissionCache<T> {
  if (!cache.hasSynced()) {
    throw new LookupNotReady(`NICO's cache of ${cache.resource.plural} is still loading; try again in a few seconds`);
  }
  return cache;
}

function ensure<T extends KubeObject>(cache: AdmissionCache<T>, indexes: Record<string, IndexFunc<T>>): void {
  for (const [name, fn] of Object.entries(indexes)) if (!cache.hasIndex(name)) cache.addIndex(name, fn);
}

/**
 * A lookup over NICO's informers (or any {@link AdmissionCache}), which it gives the indexes it reads (those they
 * lack); a read throws {@link LookupNotReady} until the cache it needs has synced.
 */
export function informerLookup(caches: {
  machines: AdmissionCache<Machine>;
  configs: AdmissionCache<NixosConfiguration>;
  clusters: AdmissionCache<KubernetesCluster>;
}): AdmissionLookup {
  const { machines, configs, clusters } = caches;
  ensure(machines, ADMISSION_MACHINE_INDEXES);
  ensure(configs, ADMISSION_CONFIG_INDEXES);
  ensure(clusters, ADMISSION_CLUSTER_INDEXES);
  return {
    machine: (ns, name) => ready(machines).get(ns, name),
    claimedMachines: (ns, cluster) => ready(machines).byIndex(BY_CLAIM, keyOf(ns, cluster)),
    unclaimedMachines: (ns) => ready(machines).byIndex(UNCLAIMED, ns),
    configurationsOf: (ns, machine) => ready(configs).byIndex(BY_MACHINE, keyOf(ns, machine)),
    ownedConfigurations: (c) =>
      c.uid
        ? ready(configs).byIndex(BY_OWNER, c.uid)
        : ready(configs).byIndex(BY_CLUSTER_LABEL, keyOf(c.namespace, c.name)),
    clustersNaming: (ns, machine) => ready(clusters).byIndex(WANTS_MACHINE, keyOf(ns, machine)),
    endpointUsers: (key) => ready(clusters).byIndex(ENDPOINT_INDEX, key),
    machinesAt: (host) => ready(machines).byIndex(HOST_INDEX, host),
  };
}

/** Fixed objects for a lookup: tests and benchmarks. */
export interface StaticObjects {
  machines?: Machine[];
  configurations?: NixosConfiguration[];
  clusters?: KubernetesCluster[];
}

/** A synced cache of fixed objects, indexed like an informer's (lib/runtime/store.ts). */
export function staticCache<T extends KubeObject>(resource: Resource, items: readonly T[]): AdmissionCache<T> {
  const store = new Store<T>();
  for (const o of items) store.set(o);
  return {
    resource,
    hasSynced: () => true,
    get: (ns, name) => store.get(keyOf(resource.namespaced ? ns : undefined, name)),
    byIndex: (name, value) => store.byIndex(name, value),
    hasIndex: (name) => store.hasIndex(name),
    addIndex: (name, fn) => store.addIndex(name, fn),
  };
}

/** A lookup over fixed objects, through the same indexes as {@link informerLookup}'s. */
export function staticLookup(objects: StaticObjects): AdmissionLookup {
  return informerLookup({
    machines: staticCache(MACHINES, objects.machines ?? []),
    configs: staticCache(NIXOS_CONFIGURATIONS, objects.configurations ?? []),
    clusters: staticCache(KUBERNETES_CLUSTERS, objects.clusters ?? []),
  });
}

/**
 * One cache over two whose objects do not overlap (a shard's own configurations, in full, and every other one,
 * trimmed; controllers/cluster/controller.ts): synced when both are, an object looked up in `first` then `second`,
 * an index answered by both (by name, `first`'s copy kept).
 */
export function unionCache<T extends KubeObject>(
  first: AdmissionCache<T>,
  second: AdmissionCache<T>,
): AdmissionCache<T> {
  return {
    resource: first.resource,
    hasSynced: () => first.hasSynced() && second.hasSynced(),
    get: (ns, name) => first.get(ns, name) ?? second.get(ns, name),
    byIndex: (name, value) => {
      const out = new Map(second.byIndex(name, value).map((o) => [o.metadata.name, o]));
      for (const o of first.byIndex(name, value)) out.set(o.metadata.name, o);
      return [...out.values()];
    },
    hasIndex: (name) => first.hasIndex(name) && second.hasIndex(name),
    addIndex: (name, fn) => {
      if (!first.hasIndex(name)) first.addIndex(name, fn);
      if (!second.hasIndex(name)) second.addIndex(name, fn);
    },
  };
}
