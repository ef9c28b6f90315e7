/**
 * The cluster's status, derived from observation on every pass. Pure.
 *
 * @module
 */
import { condition, type ConditionInput, listNames, mergeConditions, type ReasonOf } from "./conditions.ts";
import type { KubernetesClusterStatus, Phase } from "../../crds/kubernetescluster.ts";
import type { Problem, StatusInput } from "./input.ts";
import { machinesCondition, planeCondition, planeStatus, rolloutConditions } from "./planes.ts";
import { inFlight, progressConditions, runsDesired, specWorkLeft } from "./progress.ts";
import type { RolloutPlan } from "../rollout/types.ts";
export { requestedSize } from "./planes.ts";
export type { Blocked, Problem, StatusInput, Unresolved } from "./input.ts";

/**
 * What one pass knows, for {@link clusterStatus}: it stopped before it
 * could observe anything (an invalid spec, a failed first write), the
 * cluster is going away, or a normal pass (possibly cut short by a problem).
 */
export type ClusterStatusInput =
  | { kind: "stopped"; problem: Problem; generation: number; previous: KubernetesClusterStatus | undefined; now: Date }
  | {
    kind: "deleting";
    /** Configurations NIO still has to remove. */
    remaining: string[];
    /** Then: why Machines are not released yet. */
    waiting?: string[] | undefined;
    problem?: Problem | undefined;
    generation: number;
    previous: KubernetesClusterStatus | undefined;
    now: Date;
  }
  | ({
    kind: "pass";
    problem?: Problem | undefined;
    /** The pass stopped early for a reason that is no problem (a lost race): nothing overrides Ready. */
    cutShort?: boolean | undefined;
  } & StatusInput);

/**
 * The one status function: every exit of a reconcile, error or not, writes
 * what this answers. The phase is never empty.
 *
 * @example
 * ```ts
 * import { clusterStatus } from "./cluster.ts";
 * const s = clusterStatus({
 *   kind: "stopped",
 *   problem: { reason: "InvalidSpec", message: "spec.controlPlane: Required", blocking: true },
 *   generation: 1,
 *   previous: undefined,
 *   now: new Date("2026-01-01T00:00:00Z"),
 * });
 * if (s.phase !== "Failed") throw new Error("a problem the user must fix fails the cluster");
 * ```
 */
export function clusterStatus(i: ClusterStatusInput): KubernetesClusterStatus {
  if (i.kind === "stopped" || i.kind === "deleting") return stoppedStatus(i);
  const { kind: _kind, problem, cutShort, ...pass } = i;
  // A blocking problem is this generation's answer (the user must act); a race or an error before the plan is not.
  const evaluated = pass.unresolved?.reason !== "ResolvingRef" &&
    (pass.rollout !== undefined || pass.blocked !== undefined || problem?.blocking === true);
  if (!problem && !cutShort) return computeStatus({ ...pass, evaluated });
  // A pass cut short: what it observed (with the problem as Ready); what it could not compute stays as it was.
  const s = computeStatus({
    ...pass,
    evaluated,
    ...(problem ? { blocked: { reason: problem.reason, message: problem.message } } : {}),
  });
  // A race lost before the plan says nothing new about progress: Reconciling and Stalled stay as they were.
  // A halt kept so keeps its Ready=False too: a lost race never makes a halted cluster Ready for one pass.
  const wasHalted = i.previous?.conditions?.some((c) => c.type === "Stalled" && c.status === "True") === true;
  const stale = problem || evaluated
    ? []
    : ["Reconciling", "Stalled", ...(wasHalted ? ["Ready"] : [])].filter((t) =>
      i.previous?.conditions?.some((c) => c.type === t)
    );
  const computed = (s.conditions ?? []).filter((c) => !stale.includes(c.type));
  const kept = (i.previous?.conditions ?? []).filter((c) => !computed.some((n) => n.type === c.type));
  const keptPhase = i.previous?.phase === "Ready" || i.previous?.phase === "Updating";
  // Cut short, this pass cannot tell a Ready cluster from a new one: it is Updating only with spec work left.
  const phase = s.phase === "Provisioning" && keptPhase
    ? (specWorkLeft(pass.nodes, pass.rollout?.plan) ? "Updating" as const : i.previous!.phase!)
    : s.phase;
  const conditions = [...computed, ...kept];
  return {
    ...s,
    ...(s.rollout || !i.previous?.rollout ? {} : { rollout: i.previous.rollout }),
    phase: honestPhase(problem?.blocking ? "Failed" : phase ?? "Provisioning", conditions),
    conditions,
  };
}

/**
 * The one rule that ties the phase to the conditions: a cluster is `Failed` exactly while `Stalled` is True (NICO
 * cannot go on without the user: a failed node, a rollout halted by the skew guard or a drain, a spec it cannot
 * use), whatever else it observed, so the PHASE column never says `Ready` (or `Updating`) beside a halt; `Deleting`
 * stays `Deleting`. A `Failed` that `Stalled` no longer backs is `fallback` (default `Ready`: a cluster that
 * recovers with nothing left to roll out).
 *
 * @example
 * ```ts
 * import { honestPhase } from "./cluster.ts";
 * honestPhase("Ready", [{ type: "Stalled", status: "True" }]); // "Failed"
 * honestPhase("Ready", [{ type: "Stalled", status: "False" }]); // "Ready"
 * ```
 */
export function honestPhase(
  observed: Phase,
  conditions: readonly { type: string; status: string }[],
  fallback: Phase = "Ready",
): Phase {
  if (observed === "Deleting") return observed;
  const stalled = conditions.find((c) => c.type === "Stalled")?.status === "True";
  if (stalled) return "Failed";
  return observed === "Failed" ? fallback : observed;
}

/** A pass that observed nothing (stopped), or a cluster going away: only Ready (and progress) is known. */
function stoppedStatus(i: Extract<ClusterStatusInput, { kind: "stopped" | "deleting" }>): KubernetesClusterStatus {
  const deleting = i.kind === "deleting";
  const problem = i.problem;
  const remaining = i.kind === "deleting" ? i.remaining : [];
  const waiting = i.kind === "deleting" ? i.waiting ?? [] : [];
  const ready = problem ? condition("Ready", "False", problem.reason, problem.message) : condition(
    "Ready",
    "False",
    "Deleting",
    remaining.length || !waiting.length
      ? `waiting for NIO to remove ${remaining.length} configuration(s): ${listNames(remaining)}`
      : `waiting for NIO to be done with the Machines before releasing them: ${waiting.join("; ")}`,
  );
  const progress: ConditionInput[] = deleting || !problem ? [] : problem.blocking
    ? [
      condition("Reconciling", "False", "Stalled", "NICO cannot go on: see Stalled"),
      condition("Stalled", "True", problem.reason, problem.message),
    ]
    : [condition("Reconciling", "True", problem.reason, problem.message)];
  // A stopped pass evaluated the spec only when the user must act on what it found.
  const observed = deleting || problem?.blocking ? i.generation : i.previous?.observedGeneration;
  // Stopped: the other conditions stay as last observed (their observedGeneration says so); deleting: they no
  // longer apply.
  const merged = mergeConditions(i.previous?.conditions, [ready, ...progress], observed, i.now);
  const others = (i.previous?.conditions ?? []).filter((c) => !merged.some((m) => m.type === c.type));
  const { observedGeneration: _dropped, ...previous } = i.previous ?? {};
  const phase = deleting ? "Deleting" : problem?.blocking ? "Failed" : i.previous?.phase ?? "Provisioning";
  return {
    ...previous,
    phase: honestPhase(phase, deleting ? merged : [...merged, ...others]),
    ...(observed === undefined ? {} : { observedGeneration: observed }),
    conditions: deleting ? merged : [...merged, ...others],
  };
}

/**
 * The whole status of a normal pass (see {@link clusterStatus}).
 *
 * @example
 * ```ts
 * import { computeStatus } from "./cluster.ts";
 * const plane = (members: string[]) => ({ members, wanted: members.length, shortfall: 0, mode: "explicit" as const, selector: "" });
 * const s = computeStatus({
 *   generation: 1, previous: undefined, deleting: false,
 *   selection: { controlPlane: plane(["cp-1"]), dataPlane: plane([]), problems: [] },
 *   nodes: [{ machine: "cp-1", plane: "controlPlane", state: "Ready", reason: "Applied", detail: "applied", upToDate: true }],
 *   bootstrap: "cp-1", endpoint: "https://127.0.0.1:6443", kubeconfigSecret: "c-kubeconfig", now: new Date(),
 * });
 * s.phase; // "Ready"
 * ```
 */
export function computeStatus(i: StatusInput): KubernetesClusterStatus {
  const { selection: sel } = i;
  const cpNodes = i.nodes.filter((n) => n.plane === "controlPlane");
  const wNodes = i.nodes.filter((n) => n.plane === "dataPlane");
  const cpCond = planeCondition("controlPlane", sel.controlPlane, cpNodes);
  const dpCond = planeCondition("dataPlane", sel.dataPlane, wNodes);
  const machines = machinesCondition(sel);
  const ready = readyCondition(i, cpCond, dpCond);
  // Once Ready, never Provisioning again (a recovery after a halt is not a first bring-up).
  const provisioned = i.previous?.initialization?.provisioned === true || ready.status === "True";
  const observedPhase = phaseOf(i, ready, provisioned);
  const rollout = rolloutConditions(i);
  const progress = progressConditions({
    phase: observedPhase,
    ready,
    machines,
    nodes: i.nodes,
    plan: i.rollout?.plan,
    rolling: rollout.find((c) => c.type === "RollingOut"),
    paused: i.rollout?.paused ?? false,
    blocked: i.blocked,
    unresolved: i.unresolved,
    remediating: i.extra?.find((c) => c.type === "Remediating"),
    downgrade: i.versions?.downgrade,
  });
  const observed = i.evaluated === false ? i.previous?.observedGeneration : i.generation;
  const conditions = mergeConditions(
    i.previous?.conditions,
    [ready, ...progress, cpCond, dpCond, machines, ...rollout, ...(i.extra ?? [])],
    observed,
    i.now,
  );
  const r = i.rollout;
  return {
    phase: honestPhase(observedPhase, progress),
    ...(observed === undefined ? {} : { observedGeneration: observed }),
    controlPlane: planeStatus(cpNodes, sel.controlPlane),
    dataPlane: planeStatus(wNodes, sel.dataPlane),
    ...(i.bootstrap ? { bootstrapNode: i.bootstrap } : {}),
    ...(provisioned ? { initialization: { provisioned: true } } : {}),
    ...(i.endpoint ? { endpoint: i.endpoint } : {}),
    ...(i.kubeconfigSecret ? { kubeconfigSecret: i.kubeconfigSecret } : {}),
    ...(i.revision ? { revision: i.revision } : {}),
    ...i.versions?.status,
    ...(r
      ? {
        rollout: {
          specHash: r.specHash,
          upToDate: i.nodes.filter(runsDesired).length,
          total: i.nodes.length,
          updating: inFlight(i.nodes),
          pending: r.plan.pending,
          removing: r.plan.removing,
          ...(r.plan.drainHeld?.length
            ? { draining: r.plan.drainHeld.map((h) => ({ node: h.machine, state: h.state, message: h.message })) }
            : {}),
          ...(r.plan.etcdHeld?.length
            ? { etcdHeld: r.plan.etcdHeld.map((h) => ({ node: h.machine, message: h.why })) }
            : {}),
          ...(r.paused ? { paused: true } : {}),
          ...(r.plan.halted ? { halted: haltedStatus(r.plan.halted) } : {}),
        },
      }
      : {}),
    ...(i.etcd ? { etcd: i.etcd } : {}),
    ...(i.restore ?? i.previous?.restore ? { restore: i.restore ?? i.previous!.restore! } : {}),
    conditions,
  };
}

/**
 * `Ready`: the summary. True when every node is Ready, the workload API answers, the kubeconfig is issued and
 * every node runs the desired configuration (a paused change aside): a cluster mid-rollout is not Ready.
 */
function readyCondition(i: StatusInput, cpCond: ConditionInput, dpCond: ConditionInput): ConditionInput {
  const no = (reason: ReasonOf<"Ready", "False">, message: string) => condition("Ready", "False", reason, message);
  const failed = i.nodes.filter((n) => n.state === "Failed");
  if (i.deleting) return no("Deleting", "the cluster is being deleted");
  if (i.blocked) return no(i.blocked.reason, i.blocked.message);
  if (failed.length) return no("NodeFailed", `failed: ${listNames(failed.map((n) => `${n.machine} (${n.detail})`))}`);
  // A halted rollout is never Ready, even with every node switched (honestPhase makes the phase Failed beside it).
  const halted = i.rollout?.plan.halted;
  if (halted) {
    return no(halted.reason ?? "RolloutHalted", `the rollout is halted at ${halted.machine}: ${halted.detail}`);
  }
  if (i.versions?.downgrade) return no("VersionDowngrade", i.versions.downgrade);
  if (i.workloadApi && !i.workloadApi.available && i.kubeconfigSecret) {
    return no("WorkloadAPIUnavailable", i.workloadApi.message);
  }
  if (cpCond.status !== "True") return no("WaitingForControlPlane", cpCond.message);
  if (dpCond.status !== "True") return no("WaitingForWorkers", dpCond.message);
  if (!i.kubeconfigSecret) return no("WaitingForKubeconfig", "nodes are ready; issuing the kubeconfig");
  // Healthy, but not yet what the spec asks for: whoever waits for Ready waits for the rollout too.
  if (i.rollout && !i.rollout.paused && specWorkLeft(i.nodes, i.rollout.plan)) {
    const upToDate = i.nodes.filter(runsDesired).length;
    return no("RollingOut", `${upToDate}/${i.nodes.length} nodes run the desired configuration; see RollingOut`);
  }
  const ready = `${cpCond.message}; ${dpCond.message}; kubeconfig in Secret ${i.kubeconfigSecret}`;
  return condition("Ready", "True", "ClusterReady", ready);
}

/**
 * The phase. `Updating` means spec work on a running cluster: a node that does not run the desired
 * configuration yet, or a departing node (paused: none is done, so none is announced). A health problem with
 * nothing to roll out (a Node NotReady, the workload API away) leaves a `Ready` cluster's phase alone:
 * `Ready=False`, `NodesHealthy` and the columns say it. An `Updating` cluster stays so until it is Ready again
 * (its last node rejoining); one that recovers from `Failed` with nothing left to roll out goes back to `Ready`.
 */
function phaseOf(i: StatusInput, ready: ConditionInput, provisioned: boolean): Phase {
  if (i.deleting) return "Deleting";
  if (i.nodes.some((n) => n.state === "Failed")) return "Failed";
  const prev = i.previous?.phase;
  // After a failure, a node that applied an earlier spec proves this is a rollout of a running cluster, not its
  // first bring-up (so a node recovering from Failed mid-rollout brings the cluster back to Updating). A cluster
  // still in its first bring-up stays Provisioning when a late member changes cluster.nix under applied nodes.
  const runsOlderSpec = prev !== "Provisioning" && i.nodes.some((n) => n.state === "Ready" && !n.upToDate);
  const running = provisioned ||
    (i.kubeconfigSecret !== undefined && (prev === "Ready" || prev === "Updating" || runsOlderSpec));
  if (running && !i.rollout?.paused && specWorkLeft(i.nodes, i.rollout?.plan)) return "Updating";
  if (ready.status === "True") return "Ready";
  if (!running) return "Provisioning";
  // Nothing to roll out: a rollout that was under way finishes (its last node rejoining); anything else is health.
  return prev === "Updating" ? "Updating" : "Ready";
}

/** Where the rollout is halted, as `status.rollout.halted` says it (read as data by `nico get` and `nico describe`). */
function haltedStatus(h: NonNullable<RolloutPlan["halted"]>): { node: string; detail: string; reason?: "VersionSkew" } {
  return { node: h.machine, detail: h.detail, ...(h.reason ? { reason: h.reason } : {}) };
}
