/**
 * The cache indexes admission reads (webhooks/lookup.ts): the cluster
 * controller's own (controllers/cluster/indexes.ts; a cache that has them
 * already keeps them), a configuration's cluster label for a cluster that has
 * no uid yet, and the endpoint rules' (endpoint_rules.ts): clusters by their
 * endpoint, Machines by their address.
 *
 * @module
 */
import type { KubernetesCluster } from "../crds/kubernetescluster.ts";
import type { Machine, NixosConfiguration } from "../core/contract/nio.ts";
import { CLUSTER_LABEL } from "../core/contract/labels.ts";
import { byLabelIndex, type IndexFunc } from "../lib/runtime/store.ts";
import { clusterEndpointKeys, machineHostKeys } from "./endpoint_rules.ts";
import {
  BY_CLAIM,
  BY_MACHINE,
  BY_OWNER,
  CLUSTER_INDEXES,
  CONFIG_INDEXES,
  MACHINE_INDEXES,
  UNCLAIMED,
  WANTS_MACHINE,
} from "../controllers/cluster/indexes.ts";

export { BY_CLAIM, BY_MACHINE, BY_OWNER, UNCLAIMED, WANTS_MACHINE };

/** Configurations by their cluster label (`ns/cluster`). */
export const BY_CLUSTER_LABEL = "clusterLabel";
/** Clusters by the key of their `spec.controlPlaneEndpoint`, any namespace (endpoint_rules.ts). */
export const ENDPOINT_INDEX = "nico.homystack.com/endpoint";
/** Machines by their canonical address, any namespace (endpoint_rules.ts). */
export const HOST_INDEX = "nico.homystack.com/host";

/** Machines: the cluster controller's indexes. */
export const ADMISSION_MACHINE_INDEXES: Record<string, IndexFunc<Machine>> = {
  ...MACHINE_INDEXES,
  [HOST_INDEX]: machineHostKeys,
};

/** Configurations: the cluster controller's, and by cluster label. */
export const ADMISSION_CONFIG_INDEXES: Record<string, IndexFunc<NixosConfiguration>> = {
  ...CONFIG_INDEXES,
  [BY_CLUSTER_LABEL]: byLabelIndex(CLUSTER_LABEL),
};

/** Clusters: by the Machines they name, and by endpoint. */
export const ADMISSION_CLUSTER_INDEXES: Record<string, IndexFunc<KubernetesCluster>> = {
  [WANTS_MACHINE]: CLUSTER_INDEXES[WANTS_MACHINE]!,
  [ENDPOINT_INDEX]: clusterEndpointKeys,
};
