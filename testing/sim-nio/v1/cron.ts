/**
 * NIO v1's NixCronJob controller, simulated (after `nixcronjob_controller.go`),
 * with the CronJob controller's ticks: the batch CronJob is re-templated on
 * every reconcile; a one-off run is fired only when the resolved commit
 * changed and `activeJobs` is empty (ForbidConcurrent); the new commit counts
 * as rolled out at once, before any run; `Ready` means the last finished run
 * did not fail; a scheduled run starts at each tick of the schedule while no
 * run the CronJob scheduled is active.
 *
 * `activeJobs` is the CronJob's `status.active`: only runs the CronJob itself
 * scheduled. The one-off run belongs to the NixCronJob, and Kubernetes'
 * CronJob controller does not count a Job it did not create (it only warns
 * `UnexpectedJob`), so neither a newer commit nor a tick waits for a one-off
 * run: two switches of one host can overlap, as on NIO v1.
 *
 * A suspended NixCronJob is not projected at all (NIO v1 returns before
 * `project`), so its batch CronJob keeps its schedule and keeps starting runs.
 *
 * @module
 */
import { JOBS, NIX_CRON_JOBS } from "../../../core/contract/nio.ts";
import { timestamp } from "../../../lib/kube/meta.ts";
import { isNotFound } from "../../../lib/kube/errors.ts";
import { keyOf, type SimContext } from "../context.ts";
import { covers, fakeRevision, mergePatchOf, setCondition, stableJson } from "../status.ts";
import { deleteJobAndPods } from "./runner.ts";
import { batchCronJob, type Obj, runJob, scheduledRun } from "./shapes.ts";

const CRONJOBS = { group: "batch", version: "v1", kind: "CronJob", plural: "cronjobs", namespaced: true };

type Job = Obj & {
  status?: { completionTime?: string; conditions?: { type: string; status: string; lastTransitionTime?: string }[] };
};
type CronStatus = {
  observedGeneration?: number;
  phase?: string;
  resolvedRevision?: string;
  rolledOutRevision?: string;
  activeJobs?: string[] | undefined;
  workloadRef?: string;
  lastScheduleTime?: string | undefined;
  lastSuccessfulTime?: string | undefined;
  lastFailedTime?: string | undefined;
  conditions?: { type: string; status: string; reason?: string; message?: string }[];
};

const finishedAt = (j: Job, type: string) => {
  const c = j.status?.conditions?.find((x) => x.type === type && x.status === "True");
  return c ? (j.status?.completionTime ?? c.lastTransitionTime) : undefined;
};
const running = (j: Job) => !finishedAt(j, "Complete") && !finishedAt(j, "Failed");
const ownedBy = (j: Job, uid: string | undefined) => j.metadata.ownerReferences?.some((o) => o.uid === uid) === true;
type Cron = Obj & { status?: { lastScheduleTime?: string } };
const later = (
  a: string | undefined,
  b: string | undefined,
) => (!a ? b : !b ? a : Date.parse(b) > Date.parse(a) ? b : a);

/** The NixCronJob controller's state: the simulator's context and the ticks it planned. */
interface CronState {
  ctx: SimContext;
  /** The next tick of each NixCronJob's schedule (real ms), as last planned. */
  ticks: Map<string, number>;
}

/** NIO v1's NixCronJob controller with the CronJob controller's ticks: `reconcile` a NixCronJob, `tick` its schedule. */
export function cronController(ctx: SimContext) {
  const state: CronState = { ctx, ticks: new Map() };
  return {
    reconcile: (key: string, ns: string, name: string) => reconcile(state, key, ns, name),
    tick: (ns: string, name: string) => tick(state, ns, name),
  };
}

/** Projects the batch CronJob, fires a one-off run for a new commit, and writes the status. */
async function reconcile(state: CronState, key: string, ns: string, name: string): Promise<void> {
  const { ctx, ticks } = state;
  const ncj = await ctx.kube.get<Obj & { status?: CronStatus }>(NIX_CRON_JOBS, name, ns);
  if (!ncj || ncj.metadata.deletionTimestamp) return void ticks.delete(key);
  const gen = ncj.metadata.generation ?? 1;
  const now = new Date();
  const st: CronStatus = { ...ncj.status, observedGeneration: gen };
  const cond = (type: string, status: string, reason: string, message: string) =>
    st.conditions = setCondition(st.conditions, { type, status, reason, message, observedGeneration: gen }, now);
  cond("Reconciling", "True", "Progressing", "reconciling"); // NIO v1 never sets it False
  const nix = ncj.spec!["nix"] as { suspend?: boolean; source: { gitRepo?: string; ref?: string; rev?: string } };
  if (nix.suspend) {
    // NIO v1 stops here, before `project`: the batch CronJob keeps its template and its schedule.
    const cron = await getCron(ctx, ns, name);
    if (cron) planTick(state, key, (cron.spec!["schedule"] as string | undefined) ?? "");
    else ticks.delete(key);
    return await writeStatus(ctx, ncj, { ...st, phase: "Suspended" });
  }
  const revision = await fakeRevision(nix.source.gitRepo, nix.source.rev ?? nix.source.ref);
  st.resolvedRevision = revision;
  cond("GitSynced", "True", "Ready", "revision resolved");
  const cron = await project(ctx, ncj, revision);
  const jobs = runsOf(ctx, ncj, cron);
  // From the activeJobs of its last status, as NIO v1 does: a scheduled run that ended since still counts,
  // and then the new commit is marked rolled out without a run of its own.
  if (st.rolledOutRevision !== revision && (ncj.status?.activeJobs ?? []).length === 0) {
    const job = runJob(ncj, revision);
    if (!jobs.some((j) => j.metadata.name === job.metadata.name)) await createRun(ctx, job, "immediate");
  }
  st.workloadRef = name;
  const active = jobs.filter((j) => running(j) && ownedBy(j, cron.metadata.uid)).map((j) => j.metadata.name);
  st.activeJobs = active.length ? active : undefined; // omitempty
  st.lastScheduleTime = cron.status?.lastScheduleTime;
  for (const j of jobs) {
    st.lastSuccessfulTime = later(st.lastSuccessfulTime, finishedAt(j, "Complete"));
    st.lastFailedTime = later(st.lastFailedTime, finishedAt(j, "Failed"));
  }
  const failing = st.lastFailedTime !== undefined &&
    (st.lastSuccessfulTime === undefined || Date.parse(st.lastSuccessfulTime) < Date.parse(st.lastFailedTime));
  st.rolledOutRevision = revision; // before any run of it: NIO v1's `markReady`/degraded path both set it
  st.phase = failing ? "Degraded" : "Ready";
  if (failing) cond("Ready", "False", "RunFailed", `the most recent run failed at ${st.lastFailedTime}`);
  else {
    cond("Ready", "True", "Ready", "workload is ready");
    cond("Progressing", "False", "Ready", "rollout complete");
  }
  await writeStatus(ctx, ncj, st);
  planTick(state, key, (ncj.spec!["cronJobTemplate"] as { schedule: string }).schedule);
}

/** The batch CronJob, if there is one. */
function getCron(ctx: SimContext, ns: string, name: string): Promise<Cron | undefined> {
  return ctx.kube.get<Cron>(CRONJOBS, name, ns).catch((e) => isNotFound(e) ? undefined : Promise.reject(e));
}

/** Creates or re-templates the batch CronJob; answers it (with its uid). */
async function project(ctx: SimContext, ncj: Obj, revision: string): Promise<Cron> {
  const want = batchCronJob(ncj, revision);
  const have = await getCron(ctx, want.metadata.namespace!, want.metadata.name);
  if (!have) {
    ctx.counters.writes++;
    return await ctx.kube.create<Cron>(CRONJOBS, want);
  }
  // The API server fills in defaults (history limits, the pod's DNS policy, …): what the template sets is what counts.
  if (covers(have.spec, want.spec)) return have;
  const spec = { ...have.spec, ...want.spec };
  ctx.counters.writes++;
  return await ctx.kube.replace<Cron>(CRONJOBS, { ...have, spec });
}

/**
 * The Jobs owned by the NixCronJob (one-off runs) or its CronJob (scheduled runs), from the simulator's Job cache
 * as NIO v1 and the CronJob controller read them (a LIST per reconcile would cost the API server what the real ones
 * never ask of it: at 1,000 clusters, dozens of namespace-wide Job lists a second).
 */
function runsOf(ctx: SimContext, ncj: Obj, cron: Obj): Job[] {
  const byKey = new Map<string, Job>();
  for (const uid of [ncj.metadata.uid, cron.metadata.uid]) {
    for (const [key, j] of ctx.jobs.get(uid ?? "") ?? []) {
      if (j.metadata.ownerReferences?.some((o) => o.uid === uid)) byKey.set(key, j as Job);
    }
  }
  return [...byKey.values()];
}

/** Creates a run, unless a Job of that name exists. */
async function createRun(ctx: SimContext, job: Obj, how: "immediate" | "scheduled"): Promise<void> {
  ctx.counters.writes++;
  try {
    await ctx.kube.create(JOBS, job);
  } catch (err) {
    if ((err as { status?: number }).status !== 409) throw err;
    return;
  }
  ctx.record("run-created", job, how);
}

/** Writes the status as a Go struct with `omitempty` fields serializes it: an unset field is left out. */
async function writeStatus(ctx: SimContext, ncj: Obj & { status?: CronStatus }, st: CronStatus): Promise<void> {
  const next = Object.fromEntries(Object.entries(st).filter(([, v]) => v !== undefined)) as CronStatus;
  if (stableJson(ncj.status ?? {}) === stableJson(next)) return;
  ctx.counters.writes++;
  await ctx.kube.mergePatch(NIX_CRON_JOBS, ncj.metadata.name, ncj.metadata.namespace, {
    metadata: { resourceVersion: ncj.metadata.resourceVersion },
    status: mergePatchOf(ncj.status, next),
  }, "status");
}

/** Queues the schedule's next tick, unless it is already queued. */
function planTick(state: CronState, key: string, schedule: string): void {
  const { ctx, ticks } = state;
  const next = ctx.clock.nextTick(schedule, Date.now());
  if (next === undefined) return void ticks.delete(key);
  if (ticks.get(key) === next) return;
  ticks.set(key, next);
  ctx.queue.addAfter(`tick/${key.slice("ncj/".length)}`, next - Date.now());
}

/** A tick of the CronJob: a scheduled run from its template, unless a run it scheduled is active. */
async function tick(state: CronState, ns: string, name: string): Promise<void> {
  const { ctx, ticks } = state;
  const key = keyOf("ncj", ns, name);
  const due = ticks.get(key);
  if (due === undefined) return;
  if (Date.now() < due) return ctx.queue.addAfter(`tick/${ns}/${name}`, due - Date.now());
  ticks.delete(key);
  const ncj = await ctx.kube.get<Obj & { status?: CronStatus }>(NIX_CRON_JOBS, name, ns);
  const cron = ncj && await getCron(ctx, ns, name);
  if (!ncj || !cron || (cron.spec?.["suspend"] as boolean | undefined)) return ctx.queue.add(key);
  const jobs = runsOf(ctx, ncj, cron);
  await prune(ctx, cron, jobs);
  if (!jobs.some((j) => running(j) && ownedBy(j, cron.metadata.uid))) {
    await createRun(ctx, scheduledRun(cron, ctx.clock.minuteOf(due)), "scheduled");
    ctx.counters.writes++;
    await ctx.kube.mergePatch(CRONJOBS, name, ns, { status: { lastScheduleTime: timestamp(new Date()) } }, "status");
  }
  ctx.queue.add(key);
}

/** The CronJob controller's history limits (Kubernetes' defaults: 3 succeeded, 1 failed) on the runs it made. */
async function prune(ctx: SimContext, cron: Cron, jobs: Job[]): Promise<void> {
  const limits = {
    Complete: Number(cron.spec?.["successfulJobsHistoryLimit"] ?? 3),
    Failed: Number(cron.spec?.["failedJobsHistoryLimit"] ?? 1),
  };
  for (const type of ["Complete", "Failed"] as const) {
    const done = jobs.filter((j) => ownedBy(j, cron.metadata.uid) && finishedAt(j, type))
      .sort((a, b) => Date.parse(finishedAt(b, type)!) - Date.parse(finishedAt(a, type)!));
    for (const j of done.slice(limits[type])) await deleteJobAndPods(ctx, j.metadata.namespace!, j.metadata.name);
  }
}
