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
/** Finalizer that lets NICO release Machines before a cluster goes away. */
export const FINALIZER = `${PREFIX}/cleanup`;

export type Role = "control-plane" | "worker";
