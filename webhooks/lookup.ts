/**
 * What admission reads: Machines, NixosConfigurations and clusters from the
 * controller's caches (never a fresh list per request). Admission never
 * reads a Secret: whether the requester may use one is a
 * SubjectAccessReview (authorize.ts).
 *
 * @module
 */
import type { KubernetesCluster } from "../crds/kubernetescluster.ts";
import type { KubeObject } from "../lib/kube/client.ts";
import type { Machine, NixosConfiguration } from "../core/contract/nio.ts";
import type { Informer } from "../lib/runtime/informer.ts";
import { clusterEndpointKeys, machineHostKeys } from "./endpoint_rules.ts";

/** The reads admission needs. The three lists are synchronous cache reads. */
export interface AdmissionLookup {
  machines(namespace: string): Machine[];
  configurations(namespace: string): NixosConfiguration[];
  clusters(namespace: string): KubernetesCluster[];
  /** The clusters of every namespace whose `spec.controlPlaneEndpoint` has this key (endpoint_rules.ts). */
  endpointUsers(key: string): KubernetesCluster[];
  /** The Machines of every namespace at this canonical host (endpoint_rules.ts). */
  machinesAt(host: string): Machine[];
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

function cached<T extends KubeObject>(informer: Informer<T>, namespace: string): T[] {
  if (!informer.hasSynced()) {
    throw new LookupNotReady(
      `NICO's cache of ${informer.resource.plural} is still loading; try again in a few seconds`,
    );
  }
  return informer.list(namespace);
}

/** A lookup over NICO's informers; throws {@link LookupNotReady} until every informer has synced. */
export function informerLookup(informers: LookupInformers): AdmissionLookup {
  const clusters = informers.clusters;
  return {
    machines: (ns) => cached(informers.machines, ns),
    configurations: (ns) => cached(informers.configs, ns),
    clusters: (ns) => cached(clusters, ns),
    endpointUsers: (key) => {
      cached(clusters, "");
      if (!clusters.hasIndex(ENDPOINT_INDEX)) clusters.addIndex(ENDPOINT_INDEX, clusterEndpointKeys);
      return clusters.byIndex(ENDPOINT_INDEX, key);
    },
    machinesAt: (host) => {
      const machines = informers.machines;
      cached(machines, "");
      if (!machines.hasIndex(HOST_INDEX)) machines.addIndex(HOST_INDEX, machineHostKeys);
      return machines.byIndex(HOST_INDEX, host);
    },
  };
}

/** The index of clusters by their endpoint's key. */
const ENDPOINT_INDEX = "nico.homystack.com/endpoint";
/** The index of Machines by their canonical address. */
const HOST_INDEX = "nico.homystack.com/host";

/** Fixed objects for a lookup: tests and benchmarks. */
export interface StaticObjects {
  machines?: Machine[];
  configurations?: NixosConfiguration[];
  clusters?: KubernetesCluster[];
}

/** A lookup over fixed objects. */
export function staticLookup(objects: StaticObjects): AdmissionLookup {
  const inNs = <T extends { metadata: { namespace?: string } }>(items: T[] | undefined, ns: string) =>
    (items ?? []).filter((o) => (o.metadata.namespace ?? ns) === ns);
  return {
    machines: (ns) => inNs(objects.machines, ns),
    configurations: (ns) => inNs(objects.configurations, ns),
    clusters: (ns) => inNs(objects.clusters, ns),
    endpointUsers: (key) => (objects.clusters ?? []).filter((c) => clusterEndpointKeys(c).includes(key)),
    machinesAt: (host) => (objects.machines ?? []).filter((m) => machineHostKeys(m).includes(host)),
  };
}
