/**
 * Which objects belong to a cluster, defined once for configurations,
 * Secrets and the webhook: the cluster's controller reference (by uid)
 * decides; the cluster label only when the uid is not known yet (a cluster
 * being created, in admission).
 *
 * @module
 */
import { API_VERSION, KIND } from "../../crds/kubernetescluster.ts";
import { controllerReference, isControlledBy, type ObjectMeta, type OwnerReference } from "../../lib/kube/meta.ts";
import { CLUSTER_LABEL } from "./labels.ts";

/** A cluster by name, namespace and (once it exists) uid. */
export interface ClusterRef {
  name: string;
  namespace: string;
  uid?: string | undefined;
}

/**
 * The owner reference NICO puts on every child of a cluster.
 *
 * @example
 * ```ts
 * import { clusterOwnerReference } from "./owner.ts";
 * clusterOwnerReference({ name: "prod", uid: "u1" }).kind; // "KubernetesCluster"
 * ```
 */
export function clusterOwnerReference(cluster: { name: string; uid: string }): OwnerReference {
  return controllerReference({ apiVersion: API_VERSION, kind: KIND, name: cluster.name, uid: cluster.uid });
}

/**
 * Whether `obj` belongs to `cluster`: its controller reference names the
 * cluster's uid; without a uid, its cluster label names the cluster.
 *
 * @example
 * ```ts
 * import { clusterOwnerReference, isOwnedBy } from "./owner.ts";
 * const cfg = { metadata: { name: "prod-cp-1", ownerReferences: [clusterOwnerReference({ name: "prod", uid: "u1" })] } };
 * isOwnedBy(cfg, { name: "prod", namespace: "default", uid: "u1" }); // true, label or not
 * isOwnedBy(cfg, { name: "prod", namespace: "default", uid: "u2" }); // false: another cluster of that name
 * ```
 */
export function isOwnedBy(obj: { metadata: ObjectMeta }, cluster: ClusterRef): boolean {
  if (cluster.uid) return isControlledBy(obj, cluster.uid);
  return obj.metadata.labels?.[CLUSTER_LABEL] === cluster.name;
}
