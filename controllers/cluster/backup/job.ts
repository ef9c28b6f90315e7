/**
 * One backup job of a cluster, off the pass's critical path: a `check` of
 * the store (its Secrets, its bucket, the backups it holds: the newest is
 * the last backup after a restart), or a snapshot of one etcd member
 * streamed to the store (lib/backup.ts), then retention (the cluster's
 * oldest backups beyond `keep` deleted; only objects named as NICO names
 * them). A failure is a {@link BackupProblem} naming the field or the
 * store's error; nothing a failed snapshot wrote stays in the store.
 *
 * @module
 */
import type { BackupSpec } from "../../../crds/backup.ts";
import { type BackupRecord, type BackupStore, listBackups, takeBackup } from "../../../lib/backup.ts";
import { EtcdClient } from "../../../lib/etcd/client.ts";
import type { KubeClient } from "../../../lib/kube/client.ts";
import type { KeyPair } from "../../../lib/pki.ts";
import { errorMessage, type Logger } from "../../../lib/runtime/log.ts";
import { S3Client } from "../../../lib/s3/client.ts";
import { S3Error } from "../../../lib/s3/errors.ts";
import { backupKey, expiredBackups, isBackupKey } from "../../../core/backup/keys.ts";
import type { BackupJobKind, BackupRecordView } from "../../../core/backup/state.ts";
import { type BackupProblem, storeProblem } from "../../../core/backup/store.ts";
import { loadBackupStore } from "./store.ts";

/** What a job needs. */
export interface BackupJobRequest {
  job: BackupJobKind;
  namespace: string;
  cluster: string;
  spec: BackupSpec;
  kube: KubeClient;
  /** For a snapshot: the etcd CA and NICO's client certificate, and the member's client URL. */
  etcd?: { ca: KeyPair; client: KeyPair; endpoint: string; timeoutMs: number } | undefined;
  /** Why no member can be asked, when `etcd` is absent for a snapshot. */
  noMember?: string | undefined;
  now: Date;
  signal: AbortSignal;
  log: Logger;
}

/** How a job ended: its backup (a check: the newest the store holds), what retention deleted, or its problem. */
export interface BackupJobEnd {
  record?: BackupRecordView | undefined;
  problem?: BackupProblem | undefined;
  deleted: string[];
}

const view = (r: BackupRecord, seconds?: number): BackupRecordView => ({
  key: r.key,
  size: r.size,
  revision: r.revision,
  member: r.member,
  time: r.time,
  reason: r.reason,
  sha256: r.sha256,
  ...(seconds === undefined ? {} : { seconds: Math.round(seconds * 1000) / 1000 }),
});

/** Runs one job to its end; never throws (a failure is its problem). */
export async function runBackupJob(r: BackupJobRequest): Promise<BackupJobEnd> {
  let loaded;
  try {
    loaded = await loadBackupStore(r.kube, r.namespace, r.cluster, r.spec.store);
  } catch (err) {
    return {
      problem: { reason: "BackupFailed", message: `reading the store's Secrets: ${errorMessage(err)}` },
      deleted: [],
    };
  }
  if ("problem" in loaded) return { problem: loaded.problem, deleted: [] };
  const { prefix, bucket } = loaded.store;
  const s3 = new S3Client(loaded.store.client);
  const store: BackupStore = { s3, bucket };
  const ours = (records: BackupRecord[]) => records.filter((b) => isBackupKey(prefix, r.cluster, b.key));
  try {
    await s3.headBucket(bucket, r.signal);
    if (r.job === "check") {
      const newest = ours(await listBackups(store, prefix, r.signal)).at(-1);
      return { record: newest && view(newest), deleted: [] };
    }
    if (!r.etcd) return { problem: { reason: "BackupFailed", message: r.noMember ?? "etcd is not seen" }, deleted: [] };
    const started = performance.now();
    const record = await snapshot(r, r.etcd, store, backupKey(prefix, r.cluster, r.now, r.job));
    const seconds = (performance.now() - started) / 1000;
    const deleted = await retention(r, store, prefix);
    return { record: view(record, seconds), deleted };
  } catch (err) {
    const kind = err instanceof S3Error ? err.kind : undefined;
    return { problem: storeProblem(r.spec.store, { kind, message: errorMessage(err) }), deleted: [] };
  } finally {
    s3.close();
  }
}

async function snapshot(
  r: BackupJobRequest,
  e: NonNullable<BackupJobRequest["etcd"]>,
  store: BackupStore,
  key: string,
): Promise<BackupRecord> {
  const etcd = new EtcdClient({
    caPem: e.ca.certPem,
    certPem: e.client.certPem,
    keyPem: e.client.keyPem,
    timeoutMs: e.timeoutMs,
  });
  try {
    return await takeBackup(etcd, e.endpoint, store, { key, reason: r.job, now: r.now, signal: r.signal });
  } finally {
    etcd.close();
  }
}

/** Deletes the cluster's backups beyond `keep`; a failed deletion is logged and tried again after the next backup. */
async function retention(r: BackupJobRequest, store: BackupStore, prefix: string): Promise<string[]> {
  const deleted: string[] = [];
  try {
    const expired = expiredBackups(await listBackups(store, prefix, r.signal), r.spec.keep, prefix, r.cluster);
    for (const key of expired) {
      await store.s3.delete(store.bucket, key, r.signal);
      deleted.push(key);
    }
  } catch (err) {
    r.log.error("deleting old etcd backups failed", { error: errorMessage(err) });
  }
  return deleted;
}
