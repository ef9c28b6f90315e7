/**
 * What a restore of etcd does outside the pass's own objects
 * (controllers/cluster/phases/restore.ts decides when): find the backup in
 * the store (this cluster's, or that of the cluster `from` names in the same
 * namespace, through the one store resolution), take the safety snapshot of
 * a member that still answers, presign the backup's URL into the Secret
 * `<cluster>-etcd-restore` the bootstrap node's `etcd-restore-url` file
 * reads, take it back; mark etcd before the restore, and read the restored
 * revision and whether the mark is gone.
 *
 * @module
 */
import { KUBERNETES_CLUSTERS, type KubernetesCluster } from "../../../crds/kubernetescluster.ts";
import type { BackupSpec } from "../../../crds/backup.ts";
import { LATEST_BACKUP, type RestoreRequest } from "../../../crds/restore.ts";
import { type BackupStore, listBackups, takeBackup } from "../../../lib/backup.ts";
import { EtcdClient } from "../../../lib/etcd/client.ts";
import { encodeBase64 } from "../../../lib/encoding.ts";
import type { Secret } from "../../../lib/kube/meta.ts";
import { SECRETS } from "../../../lib/kube/resources.ts";
import { errorMessage } from "../../../lib/runtime/log.ts";
import { S3Client } from "../../../lib/s3/client.ts";
import { isBackupKey, safetySnapshotKey } from "../../../core/backup/keys.ts";
import { etcdRestoreSecret } from "../../../core/contract/names.ts";
import { RESTORE_EXPIRES_ANNOTATION, RESTORE_REQUEST_ANNOTATION } from "../../../core/contract/labels.ts";
import type { BackupLookup } from "../../../core/etcd/restore.ts";
import { renewsUrl } from "../../../core/etcd/restore_url.ts";
import { ETCD_RESTORE_URL_KEY } from "../../../core/render/restore.ts";
import type { KeyPair } from "../../../lib/pki.ts";
import { loadBackupStore } from "../backup/store.ts";
import { owned } from "../secrets.ts";
import type { ClusterScope } from "../scope.ts";

/** An open store of backups, and whose backups it holds. */
interface Opened {
  store: BackupStore;
  prefix: string;
  /** The cluster whose backups are read. */
  cluster: string;
}

/** The store of the cluster `from` names (this one when absent), or why it cannot be used. */
async function openStore(s: ClusterScope, from: string | undefined): Promise<Opened | { refused: string }> {
  const source = from ?? s.name;
  let spec: BackupSpec | undefined = s.spec.etcd?.backup;
  if (source !== s.name) {
    const other = await s.deps.client.get<KubernetesCluster>(KUBERNETES_CLUSTERS, source, s.namespace);
    if (!other) {
      return { refused: `spec.etcd.restore.from: no KubernetesCluster ${source} in namespace ${s.namespace}` };
    }
    spec = other.spec.etcd?.backup as BackupSpec | undefined;
  }
  if (!spec) {
    const field = source === s.name ? "spec.etcd.backup" : `spec.etcd.backup of cluster ${source}`;
    return { refused: `${field} is not set: no store holds its backups; set it, or name another cluster in from` };
  }
  const loaded = await loadBackupStore(s.deps.client, s.namespace, source, spec.store);
  if ("problem" in loaded) return { refused: loaded.problem.message };
  const s3 = new S3Client(loaded.store.client);
  return { store: { s3, bucket: loaded.store.bucket }, prefix: loaded.store.prefix, cluster: source };
}

/** Runs `f` on the store `from` names, closing it after; a refusal is answered as it is. */
async function withStore<T>(
  s: ClusterScope,
  from: string | undefined,
  f: (o: Opened) => Promise<T>,
): Promise<T | { refused: string }> {
  const o = await openStore(s, from);
  if ("refused" in o) return o;
  try {
    return await f(o);
  } finally {
    o.store.s3.close();
  }
}

/** The backup `req` names (or the newest of the source cluster's), as the store answers. */
export async function lookupBackup(s: ClusterScope, req: RestoreRequest): Promise<BackupLookup> {
  try {
    const r = await withStore(s, req.from, async (o) => {
      const all = await listBackups(o.store, o.prefix, AbortSignal.timeout(60_000));
      const found = req.backup === LATEST_BACKUP
        ? all.filter((b) => isBackupKey(o.prefix, o.cluster, b.key)).at(-1)
        : all.find((b) => b.key === req.backup);
      if (!found) {
        const what = req.backup === LATEST_BACKUP ? `no backup of cluster ${o.cluster}` : `no backup ${req.backup}`;
        return {
          kind: "missing" as const,
          message: `${what} in bucket ${o.store.bucket} under ${o.prefix}; see nico backups ${o.cluster}, and set ` +
            "spec.etcd.restore.backup to one it lists",
        };
      }
      return { kind: "found" as const, key: found.key, sha256: found.sha256, revision: Number(found.revision) };
    });
    return "refused" in r ? { kind: "refused", message: r.refused } : r;
  } catch (err) {
    return { kind: "unreachable", message: `the backup store did not answer: ${errorMessage(err)}` };
  }
}

/** What a safety snapshot needs of etcd: the CA, NICO's client certificate and a member that answers. */
export interface SnapshotSource {
  ca: KeyPair;
  client: KeyPair;
  endpoint: string;
}

/** Runs `f` with a client of the member at `etcd.endpoint`, closing it after. */
async function withEtcd<T>(etcd: SnapshotSource, timeoutMs: number, f: (c: EtcdClient) => Promise<T>): Promise<T> {
  const client = new EtcdClient({
    caPem: etcd.ca.certPem,
    certPem: etcd.client.certPem,
    keyPem: etcd.client.keyPem,
    timeoutMs,
  });
  try {
    return await f(client);
  } finally {
    client.close();
  }
}

/** Takes the safety snapshot into this cluster's store (the source's when it has none); answers its key. */
export async function takeSafetySnapshot(
  s: ClusterScope,
  req: RestoreRequest,
  etcd: SnapshotSource,
  stop?: AbortSignal,
): Promise<{ key: string } | { error: string }> {
  const timeout = AbortSignal.timeout(10 * 60_000);
  const signal = stop ? AbortSignal.any([stop, timeout]) : timeout;
  try {
    const r = await withEtcd(
      etcd,
      30_000,
      (client) =>
        withStore(s, s.spec.etcd?.backup ? undefined : req.from, async (o) => {
          const key = safetySnapshotKey(o.prefix, s.name, s.now);
          const opts = { key, reason: "pre-restore", now: s.now, signal };
          return { key: (await takeBackup(client, etcd.endpoint, o.store, opts)).key };
        }),
    );
    return "refused" in r ? { error: r.refused } : r;
  } catch (err) {
    return { error: errorMessage(err) };
  }
}

/** Writes `key` (restoreMarker) into etcd through the member at `etcd.endpoint`; answers why not, if not. */
export async function markEtcd(etcd: SnapshotSource, key: string, now: Date): Promise<string | undefined> {
  try {
    await withEtcd(
      etcd,
      10_000,
      (c) => c.call(etcd.endpoint, "kv/put", { key: encodeBase64(key), value: encodeBase64(now.toISOString()) }),
    );
    return undefined;
  } catch (err) {
    return `could not write the restore's marker ${key} into etcd: ${errorMessage(err)}`;
  }
}

/** The restore Secret as the server has it (read, not cached: it may have been written this pass). */
export function restoreSecret(s: ClusterScope): Promise<Secret | undefined> {
  return s.deps.client.get<Secret>(SECRETS, etcdRestoreSecret(s.name), s.namespace);
}

/** Whether the URL in `secret` is signed again now (core/etcd/restore_url.ts). */
export function expiresSoon(s: ClusterScope, secret: Secret | undefined): boolean {
  const at = Date.parse(secret?.metadata.annotations?.[RESTORE_EXPIRES_ANNOTATION] ?? "");
  return renewsUrl(at, s.now, s.deps.restoreUrlLifetime);
}

/** Presigns the backup's URL for `--restore-url-lifetime` into the restore Secret; answers why not, if not. */
export async function presignInstruction(
  s: ClusterScope,
  requestId: string,
  from: string | undefined,
  key: string,
): Promise<string | undefined> {
  const seconds = Math.max(1, Math.round(s.deps.restoreUrlLifetime / 1000));
  const r = await withStore(s, from, (o) => o.store.s3.presignGet(o.store.bucket, key, seconds, s.now));
  if (typeof r !== "string") return r.refused;
  const desired = owned(s.cluster, etcdRestoreSecret(s.name), "Opaque", { [ETCD_RESTORE_URL_KEY]: r });
  desired.metadata.annotations = {
    [RESTORE_REQUEST_ANNOTATION]: requestId,
    [RESTORE_EXPIRES_ANNOTATION]: new Date(s.now.getTime() + seconds * 1000).toISOString(),
  };
  const existing = await restoreSecret(s);
  if (existing) {
    await s.deps.client.replace(SECRETS, {
      ...desired,
      metadata: { ...desired.metadata, resourceVersion: existing.metadata.resourceVersion! },
    });
  } else await s.deps.client.create(SECRETS, desired);
  return undefined;
}

/** Takes the instruction back: the restore Secret is deleted. */
export async function withdrawInstruction(s: ClusterScope): Promise<void> {
  await s.deps.client.delete(SECRETS, etcdRestoreSecret(s.name), s.namespace);
}

/**
 * What the member at `etcd.endpoint` answers after a restore: its revision, and whether it holds `marker` (both
 * undefined when it does not answer).
 */
export async function lookAtRestored(
  etcd: SnapshotSource,
  marker: string | undefined,
): Promise<{ revision?: number | undefined; marked?: boolean | undefined }> {
  try {
    const r = await withEtcd(etcd, 5_000, (c) => c.count(etcd.endpoint, marker));
    return {
      revision: Number.isFinite(r.revision) ? r.revision : undefined,
      marked: marker === undefined ? undefined : r.count > 0,
    };
  } catch {
    return {};
  }
}
