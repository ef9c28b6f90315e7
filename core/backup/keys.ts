/**
 * Where a cluster's backups go in its store and how their objects are
 * named: `<prefix><cluster>-<UTC time>-<reason>.db`, under the prefix of
 * `spec.etcd.backup.store` (default `<namespace>/<cluster>/`). Only objects
 * named so are NICO's to delete. Pure.
 *
 * @module
 */

/** Why a backup is taken, as its object and `status.etcd.backups` say. */
export type BackupReason = "schedule" | "pre-change" | "manual";

/**
 * The folder of the bucket a cluster's backups go into.
 *
 * @example
 * ```ts
 * import { backupPrefix } from "./keys.ts";
 * backupPrefix(undefined, "infra", "prod"); // "infra/prod/"
 * backupPrefix("etcd/", "infra", "prod"); // "etcd/"
 * ```
 */
export function backupPrefix(prefix: string | undefined, namespace: string, cluster: string): string {
  return prefix ?? `${namespace}/${cluster}/`;
}

const stamp = (t: Date) => t.toISOString().replace(/[-:]/g, "").replace(/\.\d+Z$/, "Z");

/**
 * The key of a backup taken at `time` for `reason`.
 *
 * @example
 * ```ts
 * import { backupKey } from "./keys.ts";
 * backupKey("infra/prod/", "prod", new Date("2026-12-04T13:05:09.120Z"), "pre-change");
 * // "infra/prod/prod-20261204T130509Z-pre-change.db"
 * ```
 */
export function backupKey(prefix: string, cluster: string, time: Date, reason: BackupReason): string {
  return `${prefix}${cluster}-${stamp(time)}-${reason}.db`;
}

/**
 * The key of the safety snapshot a restore takes before it touches anything (`pre-restore`): named apart from the
 * backups {@link isBackupKey} knows, so retention never deletes it and `latest` never picks it.
 *
 * @example
 * ```ts
 * import { safetySnapshotKey } from "./keys.ts";
 * safetySnapshotKey("infra/prod/", "prod", new Date("2026-12-04T13:05:09.120Z"));
 * // "infra/prod/prod-20261204T130509Z-pre-restore.db"
 * ```
 */
export function safetySnapshotKey(prefix: string, cluster: string, time: Date): string {
  return `${prefix}${cluster}-${stamp(time)}-pre-restore.db`;
}

/**
 * Whether `key` names one of the cluster's backups as {@link backupKey} makes them (directly under the prefix).
 *
 * @example
 * ```ts
 * import { isBackupKey } from "./keys.ts";
 * isBackupKey("infra/prod/", "prod", "infra/prod/prod-20261204T130509Z-schedule.db"); // true
 * isBackupKey("infra/prod/", "prod", "infra/prod/notes.txt"); // false
 * ```
 */
export function isBackupKey(prefix: string, cluster: string, key: string): boolean {
  if (!key.startsWith(prefix)) return false;
  const rest = key.slice(prefix.length);
  return rest.startsWith(`${cluster}-`) &&
    /^\d{8}T\d{6}Z-(schedule|pre-change|manual)\.db$/.test(rest.slice(cluster.length + 1));
}

/**
 * The keys of the cluster's backups beyond the newest `keep` (by their recorded time): what retention deletes.
 * Objects not named as NICO names them are never counted nor deleted.
 *
 * @example
 * ```ts
 * import { expiredBackups } from "./keys.ts";
 * const at = (t: string) => ({ key: `p/c-${t}-schedule.db`, time: t });
 * expiredBackups([at("20260101T000000Z"), at("20260102T000000Z"), { key: "p/other.db", time: "0" }], 1, "p/", "c");
 * // ["p/c-20260101T000000Z-schedule.db"]
 * ```
 */
export function expiredBackups(
  records: readonly { key: string; time: string }[],
  keep: number,
  prefix: string,
  cluster: string,
): string[] {
  const ours = records.filter((r) => isBackupKey(prefix, cluster, r.key));
  const newestFirst = [...ours].sort((a, b) => (a.time < b.time ? 1 : a.time > b.time ? -1 : a.key < b.key ? 1 : -1));
  return newestFirst.slice(Math.max(keep, 0)).map((r) => r.key);
}
