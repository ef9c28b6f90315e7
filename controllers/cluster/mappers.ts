/**
 * Which events wake which clusters: the cluster controller's mappers (an
 * event of a child or a Machine to the keys of the clusters it concerns)
 * and predicates (events that need no reconcile), each a named function so
 * a reader sees why an event wakes a key. They read only the informers'
 * caches, through {@link Lookup}.
 *
 * @module
 */
import { isDeepStrictEqual } from "node:util";
import type { KubernetesCluster } from "../../crds/kubernetescluster.ts";
import { CLUSTER_LABEL } from "../../core/contract/labels.ts";
import {
  type DecommissionJob,
  type Machine,
  NIO_MACHINE_LABEL,
  type NixosConfiguration,
} from "../../core/contract/nio.ts";
import type { BatchJob } from "../../core/nodes/runs.ts";
import type { KeyMapper } from "../../lib/runtime/controller.ts";
import { keyOf, splitKey } from "../../lib/runtime/keys.ts";
import type { EventType } from "../../lib/runtime/snapshot.ts";
import { matches } from "../../lib/selector.ts";
import { candidateClusters, type Indexed } from "./indexes.ts";
import type { ClusterMemories } from "./memory.ts";

/** A cache the mappers look objects up in (an Informer is one). */
export interface Lookup<T> {
  get(namespace: string | undefined, name: string): T | undefined;
}

/** The caches the mappers read; clusters by index (controllers/cluster/indexes.ts), never a scan. */
export interface MapperCaches {
  clusters: Indexed<KubernetesCluster>;
  machines: Lookup<Machine>;
  configs: Lookup<NixosConfiguration>;
}

/** A `skip` predicate of a watch (lib/runtime/controller.ts): events for which it answers true enqueue nothing. */
type Skip<T> = (obj: T, type: EventType, old: T | undefined) => boolean;

/**
 * Whether a cluster update changed only its status. The controller skips
 * such an update when it is NICO's own status write (by resourceVersion):
 * nothing NICO acts on changed. Resyncs (same resourceVersion), changes to
 * the spec or metadata, and status written by anyone else still reconcile.
 */
export function onlyStatusChanged(c: KubernetesCluster, type: EventType, old: KubernetesCluster | undefined): boolean {
  if (type !== "update" || !old || old.metadata.resourceVersion === c.metadata.resourceVersion) return false;
  const meta = (o: KubernetesCluster) => {
    const { resourceVersion: _rv, managedFields: _mf, ...rest } = o.metadata;
    return rest;
  };
  return isDeepStrictEqual(meta(c), meta(old)) && isDeepStrictEqual(c.spec, old.spec);
}

/**
 * The skip predicate of cluster events: NICO's own status write (the resourceVersion its cluster's memory
 * recorded) changed only the status. A status changed by anyone else is put right at once.
 */
export function ownStatusWrite(memory: ClusterMemories): Skip<KubernetesCluster> {
  return function isOwnStatusWrite(c, type, old) {
    const own = memory.peek(keyOf(c.metadata.namespace, c.metadata.name))?.ownStatus;
    return own === c.metadata.resourceVersion && onlyStatusChanged(c, type, old);
  };
}

/**
 * Whether a Machine update can change what NICO decides. NIO v1 rewrites every Machine's status twice a
 * minute (`Reconciling` on and off) without changing anything else: those updates need no reconcile.
 *
 * @example
 * ```ts
 * import { machineChangeMatters } from "./mappers.ts";
 * const m = { metadata: { name: "m", labels: {} }, status: { discoverable: true, conditions: [] } };
 * machineChangeMatters(m, { ...m, status: { ...m.status, conditions: [{ type: "Reconciling", status: "True" }] } }); // false
 * machineChangeMatters(m, { ...m, status: { discoverable: false } }); // true
 * ```
 */
export function machineChangeMatters(old: Machine, m: Machine): boolean {
  const facts = (x: Machine) => {
    const { conditions, observedGeneration: _g, ...status } = x.status ?? {};
    const discoverable = conditions?.find((c) => c.type === "Discoverable");
    return {
      labels: x.metadata.labels,
      annotations: x.metadata.annotations,
      deleting: x.metadata.deletionTimestamp,
      spec: x.spec,
      status,
      discoverable: discoverable && { status: discoverable.status, since: discoverable.lastTransitionTime },
    };
  };
  return !isDeepStrictEqual(facts(old), facts(m));
}

/** The skip predicate of Machine events: an update that changes nothing NICO acts on (see {@link machineChangeMatters}). */
export function machineUpdateChangesNothing(m: Machine, type: EventType, old: Machine | undefined): boolean {
  return type === "update" && old !== undefined && !machineChangeMatters(old, m);
}

/** Clusters of the namespace that may want this Machine: claimant, explicit lists and spares, matching selectors. */
export function clustersInterestedIn(clusters: KubernetesCluster[], machine: Machine, old?: Machine): string[] {
  const name = machine.metadata.name;
  const ns = machine.metadata.namespace;
  const claims = new Set([machine.metadata.labels?.[CLUSTER_LABEL], old?.metadata.labels?.[CLUSTER_LABEL]]);
  const keys: string[] = [];
  for (const c of clusters) {
    if (c.metadata.namespace !== ns) continue;
    const planes = [c.spec?.controlPlane, c.spec?.dataPlane];
    const wants = claims.has(c.metadata.name) ||
      planes.some((p) =>
        p && ((p.machines ?? []).includes(name) || (p.spares ?? []).includes(name) ||
          (!(p.machines?.length) && (matches(p.machineSelector, machine.metadata.labels) ||
            (old !== undefined && matches(p.machineSelector, old.metadata.labels)))))
      );
    if (wants) keys.push(keyOf(ns, c.metadata.name));
  }
  return keys;
}

/**
 * The cluster an object NICO made carries in its cluster label (its configurations and Secrets).
 *
 * @example
 * ```ts
 * import { clusterOfLabel } from "./mappers.ts";
 * clusterOfLabel({ metadata: { namespace: "infra", labels: { "nico.homystack.com/cluster": "prod" } } }); // "infra/prod"
 * clusterOfLabel({ metadata: { namespace: "infra" } }); // undefined
 * ```
 */
export function clusterOfLabel(
  o: { metadata: { namespace?: string; labels?: Record<string, string> } },
): string | undefined {
  const c = o.metadata.labels?.[CLUSTER_LABEL];
  return c ? keyOf(o.metadata.namespace, c) : undefined;
}

/** Maps a Machine's events to the clusters that may want it, as it is now or was before. */
export function machineClusters(caches: MapperCaches): KeyMapper<Machine> {
  return function clustersOfMachine(m, _type, old) {
    return clustersInterestedIn(candidateClusters(caches.clusters, m, old), m, old);
  };
}

/**
 * Maps a configuration's events to its cluster; someone else's configuration to the clusters that may want its
 * Machine (it can take the Machine away from them).
 */
export function configurationClusters(caches: MapperCaches): KeyMapper<NixosConfiguration> {
  return function clustersOfConfiguration(cfg, _type, old) {
    const owner = clusterOfLabel(cfg);
    if (owner) return owner;
    const machine = cfg.spec?.machineRef?.name ?? old?.spec?.machineRef?.name ?? "";
    const m = caches.machines.get(cfg.metadata.namespace, machine);
    return m ? clustersInterestedIn(candidateClusters(caches.clusters, m), m) : undefined;
  };
}

/**
 * NIO v1: maps a run (a Job of a node's day-two NixCronJob, or of its CronJob of the same name) to the cluster
 * of the configuration it belongs to.
 */
export function runClusters(caches: MapperCaches): KeyMapper<BatchJob> {
  return function clusterOfRun(j) {
    const owner = j.metadata.ownerReferences?.find((o) => o.kind === "NixCronJob" || o.kind === "CronJob");
    const cfg = owner?.name.endsWith("-day2") ? owner.name.slice(0, -"-day2".length) : undefined;
    const c = cfg ? caches.configs.get(j.metadata.namespace, cfg) : undefined;
    return c ? clusterOfLabel(c) : undefined;
  };
}

/** NIO v1: maps a decommission NixJob to the clusters that may want its Machine (a release waits for it). */
export function decommissionClusters(caches: MapperCaches): KeyMapper<DecommissionJob> {
  return function clustersOfDecommission(nj) {
    const m = caches.machines.get(nj.metadata.namespace, nj.metadata.labels?.[NIO_MACHINE_LABEL] ?? "");
    return m ? clustersInterestedIn(candidateClusters(caches.clusters, m), m) : undefined;
  };
}

/**
 * `map`, keeping only clusters this controller's cache holds. With shards, another shard's cluster is not in it: its
 * configurations, Secrets and runs wake nobody here (without this, each of their events cost a pass that found no
 * cluster). A cluster the cache has not seen yet is woken by its own event when it arrives.
 */
export function ofCachedClusters<T>(
  clusters: { get(namespace: string | undefined, name: string): unknown },
  map: KeyMapper<T>,
): KeyMapper<T> {
  return (obj, type, old) => {
    const keys = map(obj, type, old);
    if (keys === undefined) return undefined;
    const kept = (typeof keys === "string" ? [keys] : keys).filter((k) => {
      const { namespace, name } = splitKey(k);
      return clusters.get(namespace, name) !== undefined;
    });
    return kept.length ? kept : undefined;
  };
}
