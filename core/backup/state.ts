/**
 * What NICO knows of a cluster's backups between passes (kept in its
 * memory, rebuilt from a listing of the store after a restart), and the
 * decision of each pass: which backup job to start, if any, and when to
 * look again ({@link nextBackupJob}). Pure.
 *
 * @module
 */
import { nextCronTick, parseCron } from "../../lib/cron.ts";
import type { BackupsStatus } from "../../crds/backup.ts";
import type { BackupProblem } from "./store.ts";
import type { BackupReason } from "./keys.ts";

/** A backup that exists, as status shows it. */
export type BackupRecordView = NonNullable<BackupsStatus["last"]>;

/** A job: a snapshot for a reason, or a `check` of the store (its Secrets, its bucket, a listing). */
export type BackupJobKind = BackupReason | "check";

/** What NICO knows of one cluster's backups. */
export interface BackupState {
  /** The newest successful backup known. */
  last?: BackupRecordView | undefined;
  /** The store was listed (or a backup made) since NICO started: `last` is what the store holds. */
  listed: boolean;
  /** The last failed job, newer than `last`'s success; cleared by a success. */
  failure?: { time: string; job: BackupJobKind; problem: BackupProblem } | undefined;
  /** Failed jobs in a row (the re-check's backoff). */
  failures: number;
  /** A job under way. */
  running?: { job: BackupJobKind; since: string } | undefined;
  /** When the last scheduled backup was attempted. */
  scheduledAt?: string | undefined;
  /** The store's spec when it was last checked or used. */
  checked?: string | undefined;
  /** When backups were first configured in this process (the first schedule counts from it). */
  since: string;
  /**
   * The last on-demand request answered: its token, and the backup it took or why it failed (a later scheduled backup
   * or failure does not hide them).
   */
  answered?: { token: string; record?: BackupRecordView | undefined; failure?: string | undefined } | undefined;
}

/** What a pass decides about a cluster's backups. */
export interface BackupPassInput {
  state: BackupState;
  now: Date;
  /** `spec.etcd.backup.schedule`. */
  schedule?: string | undefined;
  /** The store's spec as this pass reads it (a change means a check). */
  store: string;
  /** An on-demand request token (the annotation), if any. */
  request?: string | undefined;
  /** The plan holds a control-plane step for a snapshot: `taking` (none tried yet) or `failed`. */
  preChange?: "taking" | "failed" | undefined;
}

/** A failed pre-change snapshot is tried again after this long (the rollout is halted meanwhile). */
export const PRE_CHANGE_RETRY_MS = 30_000;
/** A failed check is tried again after 1 minute, doubling up to 10. */
export const CHECK_RETRY_MS = 60_000;
const CHECK_RETRY_MAX_MS = 600_000;

/**
 * The job to start in this pass, if any, and when a job will be due (to look again then).
 *
 * @example
 * ```ts
 * import { nextBackupJob } from "./state.ts";
 * const state = { listed: true, failures: 0, checked: "s", since: "2026-01-01T00:00:00.000Z" };
 * nextBackupJob({ state, now: new Date("2026-01-01T00:30:00Z"), schedule: "0 * * * *", store: "s" });
 * // { at: new Date("2026-01-01T01:00:00Z") }
 * ```
 */
export function nextBackupJob(i: BackupPassInput): { start?: BackupJobKind; at?: Date } {
  const { state: s, now } = i;
  if (s.running) return {};
  const failedAt = s.failure ? Date.parse(s.failure.time) : undefined;
  if (i.preChange === "taking") return { start: "pre-change" };
  if (i.preChange === "failed") {
    const retry = (failedAt ?? 0) + PRE_CHANGE_RETRY_MS;
    return retry <= now.getTime() ? { start: "pre-change" } : { at: new Date(retry) };
  }
  if (i.request && i.request !== s.answered?.token) return { start: "manual" };
  if (s.checked !== i.store) return { start: "check" };
  if (!s.listed) {
    const retry = (failedAt ?? 0) + Math.min(CHECK_RETRY_MS * 2 ** Math.max(s.failures - 1, 0), CHECK_RETRY_MAX_MS);
    return retry <= now.getTime() ? { start: "check" } : { at: new Date(retry) };
  }
  if (!i.schedule) return {};
  const base = Math.max(
    Date.parse(s.since),
    ...[s.last?.time, s.scheduledAt].filter((t) => t).map((t) => Date.parse(t!)),
  );
  const next = nextCronTick(parseCron(i.schedule), new Date(base));
  if (!next) return {};
  return next.getTime() <= now.getTime() ? { start: "schedule" } : { at: next };
}

/**
 * The state once a job ended: its backup (a snapshot's record; a check's newest listed one, if any), or its problem.
 *
 * @example
 * ```ts
 * import { afterJob } from "./state.ts";
 * const state = { listed: false, failures: 2, since: "2026-01-01T00:00:00.000Z" };
 * const s = afterJob(state, { job: "check", store: "s", at: new Date("2026-01-01T00:01:00Z") });
 * [s.listed, s.failures, s.checked]; // [true, 0, "s"]
 * ```
 */
export function afterJob(
  s: BackupState,
  end: {
    job: BackupJobKind;
    store: string;
    at: Date;
    record?: BackupRecordView | undefined;
    problem?: BackupProblem | undefined;
    request?: string | undefined;
  },
): BackupState {
  const out: BackupState = { ...s, running: undefined, checked: end.store };
  if (end.job === "schedule") out.scheduledAt = end.at.toISOString();
  if (end.job === "manual" && end.request) {
    out.answered = end.problem
      ? { token: end.request, failure: end.problem.message }
      : { token: end.request, record: end.record };
  }
  if (end.problem) {
    return {
      ...out,
      failure: { time: end.at.toISOString(), job: end.job, problem: end.problem },
      failures: s.failures + 1,
    };
  }
  const newer = end.record && (!s.last || end.record.time >= s.last.time) ? end.record : s.last;
  return { ...out, last: newer, listed: true, failure: undefined, failures: 0 };
}

/**
 * The time between the next two ticks of `schedule` after `now`, in seconds (what "twice the schedule" doubles);
 * undefined for a schedule that never fires.
 *
 * @example
 * ```ts
 * import { scheduleIntervalSeconds } from "./state.ts";
 * scheduleIntervalSeconds("0 3 * * *", new Date("2026-01-01T00:00:00Z")); // 86400
 * ```
 */
export function scheduleIntervalSeconds(schedule: string, now: Date): number | undefined {
  const cron = parseCron(schedule);
  const first = nextCronTick(cron, now);
  const second = first && nextCronTick(cron, first);
  return second ? (second.getTime() - first!.getTime()) / 1000 : undefined;
}
