/** Labels, annotations and finalizers NICO puts on objects. */

const PREFIX = "nico.homystack.com";

/** On claimed Machines and on every child: the owning cluster's name. */
export const CLUSTER_LABEL = `${PREFIX}/cluster`;
/** On NixosConfigurations: `control-plane` or `worker`. */
export const ROLE_LABEL = `${PREFIX}/role`;
/** On the bootstrap node's NixosConfiguration: `"true"`. */
export const BOOTSTRAP_LABEL = `${PREFIX}/bootstrap`;
/** On NixosConfigurations: hash of the spec NICO rendered. */
export const SPEC_HASH_ANNOTATION = `${PREFIX}/spec-hash`;
/** On NixosConfigurations: when NICO last changed the spec (older NIO has no observedGeneration). */
export const SPEC_CHANGED_ANNOTATION = `${PREFIX}/spec-changed-at`;
/** On KubernetesClusters: freeze all child changes. */
export const PAUSED_ANNOTATION = `${PREFIX}/paused`;
/**
 * On KubernetesClusters: an on-demand etcd backup (`nico backup`), any new token asks for one; NICO answers it in
 * `status.etcd.backups.request` (docs/backups.md).
 */
export const BACKUP_REQUEST_ANNOTATION = `${PREFIX}/backup-request`;
/** On the Secret `<cluster>-etcd-restore`: the restore request (`spec.etcd.restore.requestId`) its URL is for. */
export const RESTORE_REQUEST_ANNOTATION = `${PREFIX}/restore-request`;
/** On the Secret `<cluster>-etcd-restore`: when its presigned URL expires, RFC 3339. */
export const RESTORE_EXPIRES_ANNOTATION = `${PREFIX}/restore-url-expires`;
/** Finalizer that lets NICO release Machines before a cluster goes away. */
export const FINALIZER = `${PREFIX}/cleanup`;

export type Role = "control-plane" | "worker";
/**
 * Set to `"true"` to let NICO make a new CA, CA key or join token for a
 * cluster that has been brought up (its nodes then get new identities);
 * NICO removes it once done. Without it a lost identity Secret stops the
 * cluster with `IdentityLost` instead of being replaced silently.
 */
export const REGENERATE_IDENTITY_ANNOTATION = `${PREFIX}/regenerate-identity`;

/** The two planes of a cluster, as status and the planner name them. */
export type Plane = "controlPlane" | "dataPlane";

/**
 * The plane a node's `nico.homystack.com/role` label puts it in; anything
 * but `control-plane` is a worker.
 *
 * @example
 * ```ts
 * import { planeOfRole } from "./labels.ts";
 * planeOfRole("control-plane"); // "controlPlane"
 * planeOfRole(undefined); // "dataPlane"
 * ```
 */
export function planeOfRole(role: string | undefined): Plane {
  return role === "control-plane" ? "controlPlane" : "dataPlane";
}

/**
 * The role label value of a plane.
 *
 * @example
 * ```ts
 * import { roleOfPlane } from "./labels.ts";
 * roleOfPlane("dataPlane"); // "worker"
 * ```
 */
export function roleOfPlane(plane: Plane): Role {
  return plane === "controlPlane" ? "control-plane" : "worker";
}

/** On workload-cluster Nodes NICO cordoned: when the drain started (NICO uncordons only these). */
export const DRAIN_STARTED_ANNOTATION = `${PREFIX}/drain-started`;

/**
 * On a workload cluster's Node, written by the node itself after a successful switch (the flake contract): the
 * `configuration` of the `cluster.nix` it runs. On NixosConfigurations, written by NICO: the one it should run.
 */
export const CONFIGURATION_ANNOTATION = `${PREFIX}/configuration`;

/**
 * On a Machine: taken out of service (by NICO's remediation, or by a person), so no cluster selects it until
 * a person removes the annotation. NICO writes `<cluster>/<role> at <time>: <reason>: <message>` (see
 * core/machines/marks.ts); any other value is a person's, and means the same.
 */
export const REMEDIATED_ANNOTATION = `${PREFIX}/remediated`;

/**
 * On KubernetesClusters: the shard that reconciles the cluster (`nico run --shard <name>`); a cluster without it
 * belongs to the default shard (a NICO run without `--shard`). See core/contract/shards.ts.
 */
export const SHARD_LABEL = `${PREFIX}/shard`;
