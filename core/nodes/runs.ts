/**
 * NIO v1's runs, as NICO judges them. NIO v1's own status cannot say whether
 * a host ran the spec NICO wrote (its `Ready` holds once any run ever
 * succeeded, and it marks a new commit rolled out before running it); the
 * run Jobs can. A node has applied a spec when a run Job of its day-two
 * NixCronJob (or of that NixCronJob's batch CronJob), created after NICO
 * wrote the spec, completed. Pure; table-tested.
 *
 * @module
 */
import type { ObjectMeta } from "../../lib/kube/meta.ts";
import { dayTwoName, NIO_DEFAULT_SCHEDULE } from "../contract/nio.ts";

/** The parts of a batch Job NICO reads. */
export interface BatchJob {
  metadata: ObjectMeta;
  status?: {
    active?: number;
    failed?: number;
    succeeded?: number;
    startTime?: string;
    completionTime?: string;
    conditions?: { type: string; status: string; reason?: string; message?: string }[];
  };
}

/** One run of a node's day-two workload. */
export interface Run {
  job: string;
  /** `NixCronJob`: fired by NIO on a new commit; `CronJob`: a scheduled tick. */
  firedBy: "NixCronJob" | "CronJob";
  createdAt: Date;
  active: number;
  /** Pods of this run that failed so far (each a try of the switch). */
  failedAttempts: number;
  complete: boolean;
  /** When it completed. */
  completedAt?: Date | undefined;
  /** Kubernetes gave up on it (NIO's `Degraded` follows). */
  gaveUp: boolean;
  /** Why its last Pod failed, when the shell could read it. */
  lastFailure?: string | undefined;
}

/** How many times Kubernetes tries a run Job of NIO v1 (no `backoffLimit`: the default 6 retries). */
export const RUN_ATTEMPTS = 7;

const cond = (j: BatchJob, type: string) => j.status?.conditions?.some((c) => c.type === type && c.status === "True");

/**
 * The runs of configuration `config`'s day-two workload among `jobs` (one namespace), oldest first.
 *
 * @example
 * ```ts
 * import { runsOf } from "./runs.ts";
 * const job = {
 *   metadata: { name: "c.w-1-day2-r-1-manual", creationTimestamp: "2026-01-01T00:00:05Z", ownerReferences: [{ apiVersion: "nio.homystack.com/v1alpha1", kind: "NixCronJob", name: "c.w-1-day2", uid: "u1" }] },
 *   status: { succeeded: 1, conditions: [{ type: "Complete", status: "True" }] },
 * };
 * runsOf([job], "c.w-1")[0]?.complete; // true
 * ```
 */
export function runsOf(jobs: readonly BatchJob[], config: string, failures?: ReadonlyMap<string, string>): Run[] {
  const owner = dayTwoName(config);
  const out: Run[] = [];
  for (const j of jobs) {
    const ref = j.metadata.ownerReferences?.find((o) =>
      o.name === owner &&
      ((o.kind === "NixCronJob" && o.apiVersion?.startsWith("nio.homystack.com/") !== false) ||
        (o.kind === "CronJob" && (o.apiVersion ?? "batch/v1").startsWith("batch/")))
    );
    if (!ref || !j.metadata.creationTimestamp) continue;
    out.push({
      job: j.metadata.name,
      firedBy: ref.kind as Run["firedBy"],
      createdAt: new Date(j.metadata.creationTimestamp),
      active: j.status?.active ?? 0,
      failedAttempts: j.status?.failed ?? 0,
      complete: cond(j, "Complete") === true,
      completedAt: j.status?.completionTime ? new Date(j.status.completionTime) : undefined,
      gaveUp: cond(j, "Failed") === true,
      lastFailure: failures?.get(j.metadata.name),
    });
  }
  return out.sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || (a.job < b.job ? -1 : 1));
}

/**
 * Whether `run` ran the spec NICO wrote at `changedAt`. Kubernetes stamps
 * creation in whole seconds: a run NIO fired on a new commit counts from the
 * second of the write (it can only come from that write); a scheduled run
 * counts only from the next second, so a tick just before the write is never
 * taken for a run of it.
 *
 * @example
 * ```ts
 * import { ranAfter } from "./runs.ts";
 * const run = { job: "j", firedBy: "CronJob" as const, createdAt: new Date("2026-01-01T00:00:05Z"), active: 0, failedAttempts: 0, complete: true, gaveUp: false };
 * ranAfter(run, new Date("2026-01-01T00:00:05.400Z")); // false: the same second as the write
 * ranAfter({ ...run, firedBy: "NixCronJob" }, new Date("2026-01-01T00:00:05.400Z")); // true
 * ```
 */
export function ranAfter(run: Run, changedAt: Date): boolean {
  const second = Math.floor(changedAt.getTime() / 1000) * 1000;
  return run.firedBy === "NixCronJob" ? run.createdAt.getTime() >= second : run.createdAt.getTime() > second;
}

/** What the runs since NICO's last write say about a node. */
export type RunVerdict =
  | { state: "applied"; job: string; at?: Date | undefined }
  | { state: "failed"; job: string; attempt: number; retrying: boolean; detail: string }
  | { state: "running"; job: string; attempt: number; detail: string }
  | { state: "waiting"; detail: string };

/**
 * Judges a node by its runs since `changedAt`: applied once one of them
 * completed; otherwise the latest decides (failed from its first failed Pod).
 *
 * @example
 * ```ts
 * import { runVerdict } from "./runs.ts";
 * const at = new Date("2026-01-01T00:00:00Z");
 * const run = { job: "j", firedBy: "NixCronJob" as const, createdAt: new Date("2026-01-01T00:00:01Z"), active: 1, failedAttempts: 1, complete: false, gaveUp: false };
 * runVerdict([run], at).state; // "failed"
 * runVerdict([{ ...run, failedAttempts: 0 }], at).state; // "running"
 * runVerdict([], at).state; // "waiting"
 * ```
 */
export function runVerdict(runs: readonly Run[], changedAt: Date): RunVerdict {
  const mine = runs.filter((r) => ranAfter(r, changedAt));
  const latest = mine.at(-1);
  if (!latest) return { state: "waiting", detail: "no run of this configuration has started yet" };
  // Applied once a run of it completed: a later scheduled run of the same spec that fails (the host was away, a
  // transient error) leaves the host on it, and is NIO's to retry.
  const first = mine.find((r) => r.complete);
  if (first) return { state: "applied", job: first.job, at: first.completedAt };
  // Failed from the first failed attempt, and until a run completes: a later run of the same spec (NIO's next
  // scheduled tick) is a retry, not a recovery, so the halt does not come and go with each tick.
  const failed = mine.findLast((r) => r.failedAttempts > 0);
  if (failed) {
    const attempt = failed.failedAttempts;
    const why = failed.lastFailure ? `: ${failed.lastFailure}` : "";
    const next = failed !== latest
      ? `; NIO is running it again (run ${latest.job})`
      : failed.gaveUp
      ? `; Kubernetes gave up after ${attempt} attempt(s)`
      : `; NIO retries it (up to ${RUN_ATTEMPTS} attempts)`;
    return {
      state: "failed",
      job: failed.job,
      attempt,
      retrying: failed !== latest || !failed.gaveUp,
      detail: `the switch failed on attempt ${attempt} of run ${failed.job}${why}${next}`,
    };
  }
  return {
    state: "running",
    job: latest.job,
    attempt: 1,
    detail: latest.active > 0 ? `NIO is running the switch (run ${latest.job})` : `run ${latest.job} is starting`,
  };
}

/**
 * The schedule NICO gives a node while NIO v1 must run it soon: every minute.
 * NIO v1 runs a node at once only for a new commit; any other change waits
 * for a scheduled run.
 */
export const RUN_SOON_SCHEDULE = "* * * * *";

/**
 * How long after a change that moves the commit NICO waits for NIO v1 to fire a run by itself (it does within a
 * second) before it asks for one with {@link RUN_SOON_SCHEDULE}. Asking at once would let a scheduled run start
 * beside the one NIO fires: NIO's `Forbid` covers only its CronJob's own runs. A change that keeps the commit gets
 * no such wait: NIO v1 never fires a run for it ({@link firesRun}), so NICO writes it with the schedule forward.
 */
export const RUN_SOON_GRACE_MS = 5_000;

/**
 * The grace of a configuration that still has its first spec: NIO v1 fires its first run by itself, for the new
 * revision, when it reconciles the new NixCronJob, and with a fleet coming up at once it gets there later than
 * {@link RUN_SOON_GRACE_MS} (its controllers take one object at a time). Asking sooner would only write the
 * configuration twice (the schedule forward, then back) and give NIO a NixCronJob and a CronJob to update while it is
 * behind. The wait is a net for a NIO that failed to fire it (NIO v1 logs that and goes on).
 */
export const FIRST_RUN_GRACE_MS = 60_000;

/** The parts of a configuration's spec that say whether NIO v1 fires a run by itself. */
export interface RunSource {
  gitRepo?: string | undefined;
  ref?: string | undefined;
  dayTwoSchedule?: string | undefined;
}

/**
 * Whether NIO v1 fires a run by itself when a configuration's spec goes from `before` to `after`: for a new
 * configuration (no commit rolled out yet) and for a change of the commit it resolves (`gitRepo`, `ref`; its
 * NixCronJob's `revChanged`). A change of anything else (`additionalFiles` such as `cluster.nix`, the folder,
 * the flake attribute) only re-templates the node's CronJob: it runs at the next tick of the schedule.
 *
 * @example
 * ```ts
 * import { firesRun } from "./runs.ts";
 * const spec = { gitRepo: "https://git.example.test/flake.git", ref: "0123456789abcdef0123456789abcdef01234567" };
 * firesRun(undefined, spec); // true: the first run of a new configuration
 * firesRun(spec, { ...spec, ref: "fedcba9876543210fedcba9876543210fedcba98" }); // true
 * firesRun(spec, spec); // false: cluster.nix alone runs on the schedule
 * ```
 */
export function firesRun(before: RunSource | undefined, after: RunSource): boolean {
  if (!before) return true;
  // NIO's CRD defaults `ref` to `main`.
  return before.gitRepo !== after.gitRepo || (before.ref ?? "main") !== (after.ref ?? "main");
}

/**
 * How long NICO waits for NIO v1 to run a configuration by itself: none once its schedule is brought forward
 * (it was written so, or a grace ended), {@link FIRST_RUN_GRACE_MS} while it has its first spec
 * (`metadata.generation` 1: only a spec change moves it), {@link RUN_SOON_GRACE_MS} after a change.
 *
 * @example
 * ```ts
 * import { runSoonGraceMs } from "./runs.ts";
 * runSoonGraceMs(1); // 60000
 * runSoonGraceMs(4); // 5000
 * runSoonGraceMs(4, "* * * * *"); // 0: a change NIO v1 will not run itself was written with the schedule forward
 * ```
 */
export function runSoonGraceMs(generation: number | undefined, schedule?: string | undefined): number {
  if (schedule === RUN_SOON_SCHEDULE) return 0;
  return generation === 1 ? FIRST_RUN_GRACE_MS : RUN_SOON_GRACE_MS;
}

/**
 * The `dayTwoSchedule` NICO writes with a new spec of an existing configuration (NIO v1): the user's when NIO fires
 * a run of it by itself ({@link firesRun}: a new commit), which a schedule brought forward could only double; else
 * {@link RUN_SOON_SCHEDULE} at once, since nothing but a tick will run it.
 *
 * @example
 * ```ts
 * import { scheduleOnChange } from "./runs.ts";
 * const before = { gitRepo: "https://git.example.test/flake.git", ref: "0123456789abcdef0123456789abcdef01234567" };
 * scheduleOnChange(before, { ...before, dayTwoSchedule: "0 3 * * *" }); // "* * * * *"
 * scheduleOnChange(before, { ...before, ref: "fedcba9876543210fedcba9876543210fedcba98", dayTwoSchedule: "0 3 * * *" }); // "0 3 * * *"
 * ```
 */
export function scheduleOnChange(before: RunSource, after: RunSource): string | undefined {
  return firesRun(before, after) ? after.dayTwoSchedule : RUN_SOON_SCHEDULE;
}

/** {@link scheduleFor}'s answer for "leave the schedule as it is". */
export const KEEP_SCHEDULE: unique symbol = Symbol("keep the schedule");

/** What {@link scheduleFor} needs to know of a node. */
export interface ScheduleInput {
  /** The user's schedule (`spec.nio.dayTwoSchedule`); `undefined`: NIO's default. */
  resting: string | undefined;
  /** The node's readiness state and reason (core/nodes/readiness.ts). */
  state: string;
  reason: string;
  /** When NICO last changed the node's spec. */
  changedAt: Date | undefined;
  /** How long NIO may take to fire a run by itself ({@link runSoonGraceMs}; default {@link RUN_SOON_GRACE_MS}). */
  graceMs?: number | undefined;
  now: Date;
}

/**
 * The `dayTwoSchedule` a node's configuration carries (NIO v1): every minute
 * while NIO has run nothing of the node's current spec and the grace for NIO
 * to fire a run by itself ({@link runSoonGraceMs}: none for a change that
 * keeps the commit, such as `cluster.nix`, which NICO writes with the schedule
 * forward) is over, so it reaches the node within a minute, and only that
 * node; the user's schedule otherwise (`undefined`: NIO's default), once a
 * run started. A node NIO is blocked on, removing, or that is not created
 * yet keeps what it has.
 *
 * @example
 * ```ts
 * import { KEEP_SCHEDULE, scheduleFor } from "./runs.ts";
 * const now = new Date("2026-01-01T00:00:10Z");
 * const waiting = { resting: "0 3 * * *", state: "Applying", reason: "WaitingForRun", now };
 * scheduleFor({ ...waiting, changedAt: new Date("2026-01-01T00:00:00Z") }); // "* * * * *"
 * scheduleFor({ ...waiting, changedAt: new Date("2026-01-01T00:00:09Z") }); // "0 3 * * *": NIO may still fire a run itself
 * scheduleFor({ ...waiting, changedAt: new Date("2026-01-01T00:00:00Z"), graceMs: 60_000 }); // "0 3 * * *": a first spec waits longer
 * scheduleFor({ ...waiting, reason: "Running", changedAt: new Date("2026-01-01T00:00:00Z") }); // "0 3 * * *"
 * scheduleFor({ ...waiting, state: "Blocked", reason: "MachineNotReady", changedAt: undefined }) === KEEP_SCHEDULE; // true
 * ```
 */
export function scheduleFor(i: ScheduleInput): string | undefined | typeof KEEP_SCHEDULE {
  if (i.state === "Blocked" || i.state === "Removing" || i.state === "Pending") return KEEP_SCHEDULE;
  const grace = i.graceMs ?? RUN_SOON_GRACE_MS;
  const waited = i.changedAt !== undefined && i.now.getTime() - i.changedAt.getTime() >= grace;
  return i.state === "Applying" && i.reason === "WaitingForRun" && waited ? RUN_SOON_SCHEDULE : i.resting;
}

/**
 * Whether two schedules are the same for NIO v1: its CRD defaults an absent one to `*\/30 * * * *`.
 *
 * @example
 * ```ts
 * import { sameSchedule } from "./runs.ts";
 * sameSchedule(undefined, "*\/30 * * * *"); // true
 * sameSchedule("* * * * *", undefined); // false
 * ```
 */
export function sameSchedule(a: string | undefined, b: string | undefined): boolean {
  return (a ?? NIO_DEFAULT_SCHEDULE) === (b ?? NIO_DEFAULT_SCHEDULE);
}
