/** Names of the objects NICO creates for a cluster. */

/**
 * The name of a node's NixosConfiguration: `<cluster>.<machine>`. Cluster
 * names carry no dot (the CRD refuses them), so the first dot splits the name
 * back into its pair: two different (cluster, machine) pairs never share a
 * name. A pair whose name would pass the 253-character limit has none (see
 * {@link configNameFits}); the Machine is then unavailable to that cluster.
 *
 * @example
 * ```ts
 * import { configName } from "./names.ts";
 * configName("x", "y-z"); // "x.y-z"
 * configName("x-y", "z"); // "x-y.z"
 * ```
 */
export function configName(cluster: string, machine: string): string {
  return `${cluster}.${machine}`;
}

/** Object names are at most 253 characters. */
export const MAX_NAME = 253;

/**
 * Whether `<cluster>.<machine>` is a valid object name.
 *
 * @example
 * ```ts
 * import { configNameFits } from "./names.ts";
 * configNameFits("prod", "cp-1"); // true
 * configNameFits("prod", "m".repeat(260)); // false
 * ```
 */
export function configNameFits(cluster: string, machine: string): boolean {
  return configName(cluster, machine).length <= MAX_NAME;
}

/**
 * The name NICO gave configurations before 0.2 (`<cluster>-<machine>`), which
 * could collide between clusters. Existing children keep it: NICO adopts them
 * by owner and Machine, never renames them (a rename would make NIO apply
 * `#minimal` to a running node).
 *
 * @example
 * ```ts
 * import { legacyConfigName } from "./names.ts";
 * legacyConfigName("prod", "cp-1"); // "prod-cp-1"
 * ```
 */
export function legacyConfigName(cluster: string, machine: string): string {
  return `${cluster}-${machine}`;
}

/**
 * The server token, for control-plane nodes only (k3s `--token`): it also
 * decrypts k3s's bootstrap data, which holds the cluster's CA keys. Named
 * `join-token` because clusters made before the split used it on every node.
 */
export const joinTokenSecret = (cluster: string) => `${cluster}-join-token`;
/** The agent token, for every node (k3s `--agent-token` on servers, `--token` on agents): joins workers only. */
export const agentTokenSecret = (cluster: string) => `${cluster}-agent-token`;
export const caSecret = (cluster: string) => `${cluster}-ca`;
/** The CA key alone: older NIO hands over a Secret's first key, so this Secret has only `tls.key`. */
export const caKeySecret = (cluster: string) => `${cluster}-ca-key`;
export const kubeconfigSecret = (cluster: string) => `${cluster}-kubeconfig`;
/** The etcd CA's certificate (`tls.crt`): signs the etcd members' certificates and NICO's etcd client certificate. */
export const etcdCaSecret = (cluster: string) => `${cluster}-etcd-ca`;
/** The etcd CA's key alone (`tls.key`), for the same reason as {@link caKeySecret}. */
export const etcdCaKeySecret = (cluster: string) => `${cluster}-etcd-ca-key`;
/** The restore instruction's presigned URL of the backup (`url`), for the bootstrap node during a restore only. */
export const etcdRestoreSecret = (cluster: string) => `${cluster}-etcd-restore`;

/**
 * Every Secret a cluster owns.
 *
 * @example
 * ```ts
 * import { ownedSecretNames } from "./names.ts";
 * ownedSecretNames("prod").slice(0, 5); // ["prod-join-token", "prod-agent-token", "prod-ca", "prod-ca-key", "prod-kubeconfig"]
 * ownedSecretNames("prod").slice(5); // ["prod-etcd-ca", "prod-etcd-ca-key", "prod-etcd-restore"]
 * ```
 */
export function ownedSecretNames(cluster: string): string[] {
  return [
    joinTokenSecret(cluster),
    agentTokenSecret(cluster),
    caSecret(cluster),
    caKeySecret(cluster),
    kubeconfigSecret(cluster),
    etcdCaSecret(cluster),
    etcdCaKeySecret(cluster),
    etcdRestoreSecret(cluster),
  ];
}
