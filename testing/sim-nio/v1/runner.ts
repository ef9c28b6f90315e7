/**
 * The part of Kubernetes NIO v1 relies on, simulated for the Jobs the
 * simulator makes: the Job controller (one Pod per attempt, back-off between
 * attempts, Kubernetes' default of 7 attempts, `Complete` or `Failed` with
 * their preceding conditions), the kubelet (a Pod "runs the switch" for a
 * while, then succeeds or fails) and the TTL controller. The outcome of an
 * attempt is fixed when its Pod starts: the fault annotations and the host's
 * reachability as they are then, the files' paths and the build folder as
 * the Job's Pod template fixed them when the Job was made.
 *
 * @module
 */
import { BOOTSTRAP_LABEL } from "../../../core/contract/labels.ts";
import { JOBS, type Machine, MACHINES, type NixosConfiguration } from "../../../core/contract/nio.ts";
import { PODS } from "../../../lib/kube/resources.ts";
import { timestamp } from "../../../lib/kube/meta.ts";
import { jitter, jobBackoffMs } from "../clock.ts";
import { keyOf, type SimContext } from "../context.ts";
import { flakeFilesProblem } from "../files.ts";
import {
  FAIL_APPLY_ANNOTATION,
  FAIL_ATTEMPTS_ANNOTATION,
  flagged,
  NEVER_FINISH_ANNOTATION,
  UNDISCOVERABLE_ANNOTATION,
} from "../status.ts";
import { attemptPod, type Obj, type RunInfo, runInfoOf } from "./shapes.ts";

/** Kubernetes' default `backoffLimit` is 6: seven attempts in all. */
export const ATTEMPTS = 7;
const OUTCOME = "sim.nio.homystack.com/outcome";
const STARTED = "sim.nio.homystack.com/started-ms";
const ENDED = "sim.nio.homystack.com/ended-ms";
const PENDING = "pending";
/** The spec hash of the configuration when the attempt started (what the host switches to). */
const HASH = "sim.nio.homystack.com/spec-hash";

type Pod = Obj & { status?: { phase?: string } };
type Job = Obj & {
  status?: {
    active?: number;
    failed?: number;
    succeeded?: number;
    startTime?: string;
    completionTime?: string;
    conditions?: { type: string; status: string; reason?: string; lastTransitionTime?: string }[];
  };
};

const terminal = (j: Job) =>
  j.status?.conditions?.some((c) =>
    (c.type === "Complete" || c.type === "Failed") &&
    c.status === "True"
  );

/** The Job runner's state: the simulator's context and, per Pod, how far its apply hooks got. */
interface Runner {
  ctx: SimContext;
  /** By Pod name: `true` once the hooks passed, {@link PENDING} while they run, else why they failed. */
  hooked: Map<string, string | true>;
  /**
   * By Pod name: the configuration as its attempt started, which is what the host runs. The apply hooks get it,
   * not the configuration of when the attempt ends: a run of an older spec that ends after NICO's change did not
   * apply the change.
   */
  started: Map<string, NixosConfiguration>;
}

/** The Job controller, kubelet and TTL controller for the simulator's Jobs: `reconcile` one Job by its key. */
export function jobRunner(ctx: SimContext) {
  const state: Runner = { ctx, hooked: new Map(), started: new Map() };
  return { reconcile: (key: string, ns: string, name: string) => reconcile(state, key, ns, name) };
}

/** One Job: start its next attempt, finish the running one, give up, or let it expire. */
async function reconcile(state: Runner, key: string, ns: string, name: string): Promise<void> {
  const { ctx } = state;
  const job = await ctx.kube.get<Job>(JOBS, name, ns);
  const info = job && runInfoOf(job);
  if (!job || !info || job.metadata.deletionTimestamp) return;
  if (terminal(job)) return await expire(ctx, key, job);
  const pods = (await ctx.kube.list<Pod>(PODS, { namespace: ns, labelSelector: `job-name=${name}` })).items;
  const running = pods.find((p) => p.status?.phase !== "Succeeded" && p.status?.phase !== "Failed");
  const failed = pods.filter((p) => p.status?.phase === "Failed");
  if (running) return await finish(state, key, job, running, failed.length);
  if (failed.length >= ATTEMPTS) return await giveUp(ctx, job, failed.length);
  const lastEnd = Math.max(0, ...failed.map((p) => Number(p.metadata.annotations?.[ENDED] ?? 0)));
  const wait = lastEnd + ctx.clock.real(jobBackoffMs(failed.length)) - Date.now();
  if (failed.length && wait > 0) return ctx.queue.addAfter(key, wait);
  await start(state, key, job, failed.length + 1);
}

/** Starts attempt `attempt`: a running Pod whose outcome is fixed now. */
async function start(state: Runner, key: string, job: Job, attempt: number): Promise<void> {
  const { ctx } = state;
  const info = runInfoOf(job)!;
  const ns = job.metadata.namespace!;
  const cfg = ctx.configs.get(`${ns}/${info.config}`);
  const machine = await ctx.kube.get<Machine>(MACHINES, info.machine, ns);
  const outcome = info.operation === "switch" ? switchOutcome(ctx, info, cfg, machine, attempt) : "ok";
  const pod = attemptPod(job, attempt);
  const hash = cfg?.metadata.annotations?.["nico.homystack.com/spec-hash"];
  pod.metadata.annotations = {
    ...pod.metadata.annotations,
    [OUTCOME]: outcome,
    [STARTED]: String(Date.now()),
    ...(hash ? { [HASH]: hash } : {}),
  };
  ctx.counters.writes += 3;
  const created = await ctx.kube.create<Pod>(PODS, pod);
  if (cfg) state.started.set(created.metadata.name, cfg);
  await ctx.kube.mergePatch(PODS, created.metadata.name, ns, {
    status: { phase: "Running", startTime: timestamp(new Date()) },
  }, "status");
  await ctx.kube.mergePatch(JOBS, job.metadata.name, ns, {
    status: {
      active: 1,
      ready: 0,
      terminating: 0,
      uncountedTerminatedPods: {},
      ...(job.status?.startTime ? {} : { startTime: timestamp(new Date()) }),
    },
  }, "status");
  if (info.operation === "switch") {
    const what = { metadata: { namespace: ns, name: info.config, annotations: { ...cfg?.metadata.annotations } } };
    ctx.record("apply-started", what, `${job.metadata.name} attempt ${attempt}`, job.metadata.name);
    if (cfg && machine && ctx.opts.onApplyStarted) {
      ctx.background(ctx.opts.onApplyStarted(cfg, machine), "apply-started hook");
    }
  } else {
    ctx.record(
      "remove-started",
      { metadata: { namespace: ns, name: info.config } },
      job.metadata.name,
      job.metadata.name,
    );
  }
  ctx.queue.addAfter(key, duration(ctx, job));
}

/** How a switch attempt will end: `ok` or `fail:<message>`. */
function switchOutcome(
  ctx: SimContext,
  info: RunInfo,
  cfg: NixosConfiguration | undefined,
  m: Machine | undefined,
  attempt: number,
): string {
  if (!m || flagged(m, UNDISCOVERABLE_ANNOTATION)) {
    return `fail:ssh: connect to host ${m?.spec?.host ?? info.machine} port 22: Connection timed out`;
  }
  if (!cfg) return "ok";
  // A host that hangs (NEVER_FINISH_ANNOTATION) is not an outcome: finish() holds the run while the flag stays, and a
  // host that recovers (the flag removed) finishes it, as a hung switch that comes back does.
  if (flagged(cfg, FAIL_APPLY_ANNOTATION)) return `fail:nixos-rebuild switch failed (${FAIL_APPLY_ANNOTATION})`;
  const failFirst = Number(cfg.metadata.annotations?.[FAIL_ATTEMPTS_ANNOTATION] ?? 0);
  if (attempt <= failFirst) {
    return `fail:nixos-rebuild switch failed on attempt ${attempt} (${FAIL_ATTEMPTS_ANNOTATION})`;
  }
  // The paths and the folder the Job's Pod template was rendered with, not the configuration's current ones.
  const { configurationSubdir: _now, ...rest } = cfg.spec;
  const spec = {
    ...rest,
    ...(info.dir ? { configurationSubdir: info.dir } : {}),
    flake: info.flake,
    additionalFiles: (info.files ?? []).map((path) => ({ path, valueType: "Inline" as const, inline: "" })),
  };
  const files = flakeFilesProblem(ctx, spec, "v1");
  return files ? `fail:${files}` : "ok";
}

/** How long an attempt's Pod runs. */
function duration(ctx: SimContext, job: Job): number {
  const op = runInfoOf(job)?.operation;
  if (op === "decommission") return ctx.opts.removeDelayMs ?? 200;
  return (ctx.opts.applyDelayMs ?? 300) + jitter(job.metadata.name, ctx.opts.jitterMs ?? 0);
}

/** Ends the running Pod once its time is up and the apply hooks ran. */
async function finish(state: Runner, key: string, job: Job, pod: Pod, failedBefore: number): Promise<void> {
  const { ctx, hooked } = state;
  const outcome = pod.metadata.annotations?.[OUTCOME] ?? "ok";
  if (outcome === "never") return;
  // A host that hangs mid-run: flagged after the run started, it does not finish while the flag stays.
  const now = ctx.configs.get(`${job.metadata.namespace}/${runInfoOf(job)!.config}`);
  if (runInfoOf(job)!.operation === "switch" && now && flagged(now, NEVER_FINISH_ANNOTATION)) {
    return ctx.queue.addAfter(key, Math.max(250, duration(ctx, job)));
  }
  const wait = Number(pod.metadata.annotations?.[STARTED] ?? 0) + duration(ctx, job) - Date.now();
  if (wait > 0) return ctx.queue.addAfter(key, wait);
  let failure = outcome.startsWith("fail:") ? outcome.slice(5) : undefined;
  if (!failure && runInfoOf(job)!.operation === "switch") {
    const h = hooked.get(pod.metadata.name);
    if (h === undefined) return runHooks(state, key, job, pod);
    if (h === PENDING) return; // the hooks queue this Job again when they are done
    if (h !== true) failure = h;
  }
  hooked.delete(pod.metadata.name);
  state.started.delete(pod.metadata.name);
  await endPod(ctx, job, pod, failure, failedBefore + (failure ? 1 : 0));
}

/** Runs the apply hooks beside the queue; their result lands in `state.hooked` and the Job is queued again. */
function runHooks(state: Runner, key: string, job: Job, pod: Pod): void {
  const { ctx, hooked } = state;
  const info = runInfoOf(job)!;
  const ns = job.metadata.namespace!;
  const cfg = state.started.get(pod.metadata.name) ?? ctx.configs.get(`${ns}/${info.config}`);
  const wanted = cfg && (ctx.opts.onApplied ||
    (cfg.metadata.labels?.[BOOTSTRAP_LABEL] === "true" && ctx.opts.onBootstrapApplied));
  if (!cfg || !wanted) {
    hooked.set(pod.metadata.name, true);
    return ctx.queue.add(key);
  }
  hooked.set(pod.metadata.name, PENDING);
  ctx.background(
    (async () => {
      try {
        const machine = await ctx.kube.get<Machine>(MACHINES, info.machine, ns);
        if (!machine) throw new Error(`Machine ${info.machine} is gone`);
        if (cfg.metadata.labels?.[BOOTSTRAP_LABEL] === "true") await ctx.opts.onBootstrapApplied?.(cfg, machine);
        await ctx.opts.onApplied?.(cfg, machine);
        hooked.set(pod.metadata.name, true);
      } catch (err) {
        hooked.set(pod.metadata.name, `apply hook failed: ${(err as Error).message ?? err}`);
      }
      ctx.queue.add(key);
    })(),
    "apply hooks",
  );
}

/** The Pod ends (succeeded, or failed with `failure`) and the Job's status follows. */
async function endPod(ctx: SimContext, job: Job, pod: Pod, failure: string | undefined, failed: number): Promise<void> {
  const ns = job.metadata.namespace!;
  const info = runInfoOf(job)!;
  const now = timestamp(new Date());
  const state = failure
    ? { terminated: { exitCode: 1, reason: "Error", message: failure, finishedAt: now } }
    : { terminated: { exitCode: 0, reason: "Completed", finishedAt: now } };
  ctx.counters.writes += 3;
  await ctx.kube.mergePatch(PODS, pod.metadata.name, ns, {
    metadata: { annotations: { [ENDED]: String(Date.now()) } },
  });
  await ctx.kube.mergePatch(PODS, pod.metadata.name, ns, {
    status: {
      phase: failure ? "Failed" : "Succeeded",
      containerStatuses: [{
        name: "app",
        ready: false,
        restartCount: 0,
        image: "nixos/nix:latest",
        imageID: "",
        state,
      }],
    },
  }, "status");
  const done = { status: "True", reason: "CompletionsReached", message: "Reached expected number of succeeded pods" };
  const conditions = failure ? [] : [
    { type: "SuccessCriteriaMet", ...done, lastProbeTime: now, lastTransitionTime: now },
    { type: "Complete", ...done, lastProbeTime: now, lastTransitionTime: now },
  ];
  // As the Job controller writes it: `active` left out once no Pod runs.
  await ctx.kube.mergePatch(JOBS, job.metadata.name, ns, {
    status: {
      active: null,
      ...(failure ? { failed } : { succeeded: 1, completionTime: now, conditions }),
    },
  }, "status");
  const hash = pod.metadata.annotations?.[HASH];
  const what = {
    metadata: { namespace: ns, name: info.config, annotations: hash ? { "nico.homystack.com/spec-hash": hash } : {} },
  };
  if (info.operation === "switch") {
    ctx.record(failure ? "apply-failed" : "applied", what, failure ?? job.metadata.name, job.metadata.name);
  } else ctx.record("remove-finished", what, job.metadata.name, job.metadata.name);
  ctx.queue.add(keyOf("job", ns, job.metadata.name));
}

/** Seven attempts failed: the Job fails with `BackoffLimitExceeded`. */
async function giveUp(ctx: SimContext, job: Job, failed: number): Promise<void> {
  const now = timestamp(new Date());
  const reason = "BackoffLimitExceeded";
  const message = "Job has reached the specified backoff limit";
  ctx.counters.writes++;
  await ctx.kube.mergePatch(JOBS, job.metadata.name, job.metadata.namespace, {
    status: {
      active: null,
      failed,
      conditions: [
        { type: "FailureTarget", status: "True", reason, message, lastTransitionTime: now },
        { type: "Failed", status: "True", reason, message, lastTransitionTime: now },
      ],
    },
  }, "status");
}

/** The TTL controller: a finished Job with `ttlSecondsAfterFinished` goes, its Pods with it. */
async function expire(ctx: SimContext, key: string, job: Job): Promise<void> {
  const ttl = job.spec?.["ttlSecondsAfterFinished"] as number | undefined;
  if (ttl === undefined) return;
  const done = job.status?.conditions?.find((c) =>
    (c.type === "Complete" || c.type === "Failed") && c.status === "True"
  );
  const at = Date.parse(job.status?.completionTime ?? done?.lastTransitionTime ?? "") + ctx.clock.real(ttl * 1000);
  if (!Number.isFinite(at)) return;
  if (at > Date.now()) return ctx.queue.addAfter(key, at - Date.now());
  await deleteJobAndPods(ctx, job.metadata.namespace!, job.metadata.name);
}

/** Deletes a Job and its Pods (the garbage collector's part, which no envtest runs). */
export async function deleteJobAndPods(ctx: SimContext, ns: string, name: string): Promise<void> {
  ctx.counters.writes++;
  // Background, as the TTL controller and NIO delete Jobs: batch/v1's default (Orphan) would leave the Job behind
  // with an `orphan` finalizer for a garbage collector no test control plane runs.
  await ctx.kube.delete(JOBS, name, ns, { propagationPolicy: "Background" });
  const pods = await ctx.kube.list<Obj>(PODS, { namespace: ns, labelSelector: `job-name=${name}` });
  for (const p of pods.items) {
    ctx.counters.writes++;
    await ctx.kube.delete(PODS, p.metadata.name, ns);
  }
}
