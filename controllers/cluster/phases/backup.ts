/**
 * Phase: etcd backups (`spec.etcd.backup`). {@link backupGate}, before the
 * rollout is planned, tells the planner what it knows of snapshots (the
 * limit core/rollout/backuphold.ts holds control-plane steps on it);
 * {@link reconcileBackups}, once the plan is made, starts the job that is
 * due (a snapshot the plan waits for, an on-demand one, a check of the
 * store, a scheduled one), at most one per cluster and never awaited: the
 * job wakes the cluster when it ends (controllers/cluster/backup/). It
 * answers `EtcdBackedUp`, `status.etcd.backups` and when to look again.
 *
 * @module
 */
import type { BackupsStatus } from "../../../crds/backup.ts";
import { BACKUP_REQUEST_ANNOTATION } from "../../../core/contract/labels.ts";
import { backupMember } from "../../../core/backup/member.ts";
import { type BackupJobKind, nextBackupJob } from "../../../core/backup/state.ts";
import { backupCondition, backupsStatus, describeBackup } from "../../../core/backup/status.ts";
import type { ConditionInput } from "../../../core/status/conditions.ts";
import type { BackupGate, RolloutPlan } from "../../../core/rollout/plan.ts";
import { stepsSince } from "../../../core/rollout/backuphold.ts";
import { errorMessage } from "../../../lib/runtime/log.ts";
import { BackupKeeper } from "../backup/keeper.ts";
import type { BackupJobEnd, BackupJobRequest } from "../backup/job.ts";
import type { Requeue } from "../requeue.ts";
import type { ClusterScope } from "../scope.ts";
import type { EtcdView, Identity } from "../view.ts";
import { postEvent } from "../../events.ts";

/** What the backup phase answers. */
export interface BackupsOutcome {
  condition: ConditionInput;
  status: BackupsStatus;
  requeue?: Requeue | undefined;
}

/** The cluster's backup keeper while `spec.etcd.backup` is set and NICO looks at etcd; dropped (its job stopped) otherwise. */
function keeperOf(s: ClusterScope): BackupKeeper | undefined {
  if (!s.spec.etcd?.backup || !s.deps.etcd) {
    void s.memory.backup?.stop();
    s.memory.backup = undefined;
    return undefined;
  }
  return s.memory.backup ??= new BackupKeeper(s.now, s.cluster.status?.etcd?.backups);
}

/** What the planner reads of the cluster's snapshots; undefined where backups are not configured. */
export function backupGate(s: ClusterScope): BackupGate | undefined {
  const spec = s.spec.etcd?.backup;
  const k = keeperOf(s);
  if (!spec || !k) return undefined;
  const { last, failure, running } = k.state;
  return {
    policy: spec.beforeChanges,
    lastSuccess: last ? Date.parse(last.time) : undefined,
    failure: failure && { at: Date.parse(failure.time), message: failure.problem.message },
    taking: running?.job === "pre-change",
    since: k.stepSince,
    now: s.now.getTime(),
  };
}

/** Remembers since when each control-plane step has waited for a snapshot (core/rollout/backuphold.ts). */
function rememberSteps(k: BackupKeeper, plan: RolloutPlan | undefined, now: number): "taking" | "failed" | undefined {
  k.stepSince = stepsSince(k.stepSince, plan, now);
  const held = plan?.backupHeld;
  return held && held.state !== "skipped" && held.machines.length ? held.state : undefined;
}

/**
 * Starts the job that is due and answers the condition, the status and when to look again. While a restore of etcd
 * runs (`restoring`) no job starts: the members are being replaced, and a snapshot taken then is of no use (one
 * due starts once the restore ended).
 */
export async function reconcileBackups(
  s: ClusterScope,
  plan: RolloutPlan | undefined,
  etcd: EtcdView | undefined,
  identity: Identity | undefined,
  restoring = false,
): Promise<BackupsOutcome | undefined> {
  const spec = s.spec.etcd?.backup;
  const k = keeperOf(s);
  if (!spec || !k) return undefined;
  const preChange = rememberSteps(k, plan, s.now.getTime());
  tellSkipped(s, k, plan);
  const store = JSON.stringify(spec.store);
  const request = s.cluster.metadata.annotations?.[BACKUP_REQUEST_ANNOTATION];
  const due = nextBackupJob({ state: k.state, now: s.now, schedule: spec.schedule, store, request, preChange });
  if (due.start && !restoring) await start(s, k, due.start, { store, request, etcd, identity });
  const status: BackupsStatus = {
    ...backupsStatus(k.state, plan?.backupHeld),
    ...(k.state.failures ? { failures: k.state.failures } : {}),
    since: k.state.since,
  };
  const requeue = due.at && !restoring
    ? { after: Math.max(1_000, due.at.getTime() - s.now.getTime() + 50), why: "the next etcd backup or retry" }
    : undefined;
  return { condition: backupCondition(k.state), status, requeue };
}

/** BestEffort: a pre-change snapshot skipped is told by a Warning Event too (status says it only while it holds). */
function tellSkipped(s: ClusterScope, k: BackupKeeper, plan: RolloutPlan | undefined): void {
  const held = plan?.backupHeld;
  const skipped = held?.state === "skipped" ? held.message : held?.skipped;
  if (skipped && k.warnings.allow("skipped", "EtcdBackupSkipped", skipped, s.now.getTime())) {
    postEvent(s.deps.recorder, s.cluster, "EtcdBackupSkipped", skipped);
  }
}

interface StartInput {
  store: string;
  request: string | undefined;
  etcd: EtcdView | undefined;
  identity: Identity | undefined;
}

async function start(s: ClusterScope, k: BackupKeeper, job: BackupJobKind, i: StartInput): Promise<void> {
  const spec = s.spec.etcd!.backup!;
  const request: Omit<BackupJobRequest, "signal"> = {
    job,
    namespace: s.namespace,
    cluster: s.name,
    spec,
    kube: s.deps.client,
    now: s.now,
    log: s.log,
  };
  if (job !== "check") {
    const ca = i.identity?.etcd?.ca;
    const sight = i.etcd?.sight;
    const choice = sight?.kind === "seen" ? backupMember(sight.members) : undefined;
    const endpoint = choice?.member && s.memory.etcd?.endpointOf(choice.member.id);
    if (ca && endpoint) {
      const timeoutMs = s.deps.etcd?.timeoutMs ?? 2_000;
      request.etcd = { ca, client: await k.clientCertificate(ca), endpoint, timeoutMs: Math.max(timeoutMs, 10_000) };
    } else {
      request.noMember = choice?.why ?? `etcd cannot be read (${sight?.kind === "seen" ? "" : sight?.why ?? ""}); ` +
          "see EtcdHealthy";
    }
  }
  s.log.info("etcd backup job started", { job });
  k.start(request, i.store, job === "manual" ? i.request : undefined, (end, j) => ended(s, k, end, j));
}

/** Tells how a job ended (a Warning for a failure, an Event for a backup) and wakes the cluster. */
function ended(s: ClusterScope, k: BackupKeeper, end: BackupJobEnd, job: BackupJobKind): void {
  try {
    if (end.problem) {
      s.log.error("etcd backup job failed", { job, reason: end.problem.reason, error: end.problem.message });
      if (k.warnings.allow("failed", end.problem.reason, end.problem.message, Date.now())) {
        postEvent(s.deps.recorder, s.cluster, "EtcdBackupFailed", `${job}: ${end.problem.message}`);
      }
    } else {
      k.warnings.clear("failed");
      if (job !== "check" && end.record) {
        const gone = end.deleted.length ? `; deleted ${end.deleted.length} older backup(s) (keep)` : "";
        s.log.info("etcd backup taken", { job, key: end.record.key, size: end.record.size });
        postEvent(s.deps.recorder, s.cluster, "EtcdBackupTaken", `${describeBackup(end.record)}${gone}`);
      }
    }
  } catch (err) {
    s.log.error("telling an etcd backup's end failed", { error: errorMessage(err) });
  }
  s.deps.etcd?.onChange(s.memory.key);
}
