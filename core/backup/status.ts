/**
 * `status.etcd.backups` and `EtcdBackedUp` from what NICO knows of a
 * cluster's backups ({@link BackupState}) and what the plan holds for one.
 * Pure.
 *
 * @module
 */
import type { BackupsStatus } from "../../crds/backup.ts";
import { condition, type ConditionInput } from "../status/conditions.ts";
import type { BackupHold } from "../rollout/types.ts";
import type { BackupState } from "./state.ts";

const MIB = 1024 * 1024;

/** One backup for people: its object, when, why, how big, its revision and member. */
export function describeBackup(r: NonNullable<BackupsStatus["last"]>): string {
  const size = r.size >= MIB ? `${(r.size / MIB).toFixed(1)} MiB` : `${Math.ceil(r.size / 1024)} KiB`;
  return `${r.key} at ${r.time} (${r.reason}, ${size}, revision ${r.revision}, member ${r.member})`;
}

/**
 * `status.etcd.backups`.
 *
 * @example
 * ```ts
 * import { backupsStatus } from "./status.ts";
 * backupsStatus({ listed: true, failures: 0, since: "2026-01-01T00:00:00Z", running: { job: "manual", since: "2026-01-01T00:00:01Z" } });
 * // { taking: "manual" }
 * ```
 */
export function backupsStatus(s: BackupState, hold?: BackupHold | undefined): BackupsStatus {
  const skipped = hold?.state === "skipped" ? hold.message : hold?.skipped;
  return {
    ...(s.last ? { last: s.last } : {}),
    ...(s.failure
      ? { lastFailure: { time: s.failure.time, reason: s.failure.job, message: s.failure.problem.message } }
      : {}),
    ...(s.running && s.running.job !== "check" ? { taking: s.running.job } : {}),
    ...(skipped ? { skipped } : {}),
    ...(s.answered ? { request: s.answered.token } : {}),
    ...(s.answered?.record ? { requestBackup: s.answered.record } : {}),
    ...(s.answered?.failure ? { requestFailure: s.answered.failure } : {}),
  };
}

/**
 * `EtcdBackedUp`: the last job's failure (naming the field or the store's error), else the last backup, else
 * one under way or none yet.
 *
 * @example
 * ```ts
 * import { backupCondition } from "./status.ts";
 * const problem = { reason: "BucketNotFound" as const, message: "spec.etcd.backup.store.bucket: no bucket etcd" };
 * backupCondition({ listed: false, failures: 1, since: "t", failure: { time: "t", job: "check", problem } }).reason;
 * // "BucketNotFound"
 * ```
 */
export function backupCondition(s: BackupState): ConditionInput {
  if (s.failure) return condition("EtcdBackedUp", "False", s.failure.problem.reason, s.failure.problem.message);
  const taking = s.running && s.running.job !== "check" ? `; taking one now (${s.running.job})` : "";
  if (s.last) return condition("EtcdBackedUp", "True", "BackedUp", `last backup ${describeBackup(s.last)}${taking}`);
  if (s.running || !s.listed) {
    return condition(
      "EtcdBackedUp",
      "Unknown",
      "BackupInProgress",
      s.running?.job === "check" || !s.running
        ? "checking the store (its Secrets, its bucket, the backups it holds)"
        : `taking the first backup (${s.running.job})`,
    );
  }
  return condition(
    "EtcdBackedUp",
    "Unknown",
    "NoBackupYet",
    "the store holds no backup of the cluster yet; " +
      "one is taken at the next schedule, before a control-plane change, or with nico backup",
  );
}
