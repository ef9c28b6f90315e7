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
/**
 * Set to `"true"` to let NICO make a new CA, CA key or join token for a
 * cluster that has been brought up (its nodes then get new identities);
 * NICO removes it once done. Without it a lost identity Secret stops the
 * cluster with `IdentityLost` instead of being replaced silently.
 */
export const REGENERATE_IDENTITY_ANNOTATION = `${PREFIX}/regenerate-identity`;
