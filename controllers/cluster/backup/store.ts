/**
 * A cluster's backup store with its Secrets read: the one function that
 * turns `spec.etcd.backup.store` and the Secrets it names (in the cluster's
 * own namespace, read on demand: they carry no NICO label, so no cache
 * holds them) into an S3 client's options, the bucket and the folder
 * ({@link loadBackupStore}). The controller, `nico backups` and restores use
 * it; core/backup/store.ts is its pure half.
 *
 * @module
 */
import type { BackupStore } from "../../../crds/backup.ts";
import { type BackupProblem, type ResolvedStore, resolveStore, type SecretData } from "../../../core/backup/store.ts";
import type { KubeClient } from "../../../lib/kube/client.ts";
import type { Secret } from "../../../lib/kube/meta.ts";
import { SECRETS } from "../../../lib/kube/resources.ts";

export type { BackupProblem, ResolvedStore } from "../../../core/backup/store.ts";

async function secretData(client: KubeClient, namespace: string, name: string): Promise<SecretData> {
  const s = await client.get<Secret>(SECRETS, name, namespace);
  return s ? (s.data ?? {}) : null;
}

/**
 * The store of `store` for cluster `cluster` in `namespace`, its Secrets read from that namespace only; or what is
 * wrong with them (no such Secret, keys missing). Throws only when the API server cannot be read.
 *
 * @example
 * ```ts ignore
 * const r = await loadBackupStore(client, "infra", "prod", cluster.spec.etcd!.backup!.store);
 * if ("store" in r) new S3Client(r.store.client);
 * ```
 */
export async function loadBackupStore(
  client: KubeClient,
  namespace: string,
  cluster: string,
  store: BackupStore,
): Promise<{ store: ResolvedStore } | { problem: BackupProblem }> {
  const [credentials, ca] = await Promise.all([
    secretData(client, namespace, store.credentialsSecret.name),
    store.caSecret ? secretData(client, namespace, store.caSecret.name) : Promise.resolve(undefined),
  ]);
  return resolveStore(store, { namespace, cluster }, { credentials, ca });
}
