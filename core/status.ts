/**
 * The cluster's status, derived from observation on every pass. Pure.
 *
 * @module
 */
import type { ConditionInput } from "./conditions.ts";
import { listNames, mergeConditions } from "./conditions.ts";
import type { KubernetesClusterStatus, Phase } from "../crds/kubernetescluster.ts";
import type { NodeReport } from "./readiness.ts";
import type { RolloutPlan } from "./rollout.ts";
import type { Selection } from "./selection.ts";
import { machinesCondition, planeCondition, planeStatus, rolloutConditions } from "./status_conditions.ts";
export { requestedSize } from "./status_conditions.ts";

export interface StatusInput {
  generation: number;
  previous: KubernetesClusterStatus | undefined;
  deleting: boolean;
  selection: Selection;
  nodes: NodeReport[];
  bootstrap: string | undefined;
  endpoint: string | undefined;
  /** Set only when the kubeconfig Secret exists. */
  kubeconfigSecret: string | undefined;
  /** The commit nodes are pinned to. */
  revision?: string | undefined;
  /** A problem that stops NICO before it can render nodes (for example no gitRepo). */
  blocked?: { reason: string; message: string } | undefined;
  /** Extra conditions computed elsewhere. */
  extra?: ConditionInput[];
  /** The rollout planner's view of this pass. */
  rollout?: { plan: RolloutPlan; paused: boolean; specHash: string; controlPlaneSize: number } | undefined;
  /** The workload API, when NICO watches workload clusters: the cluster is Ready only while it answers. */
  workloadApi?: { available: boolean; message: string } | undefined;
  now: Date;
}

/**
 * Something that stopped this pass, shown as `Ready=False` with its reason
 * and message. `blocking`: the user must act (phase `Failed`); otherwise the
 * phase is what the observations say and NICO retries.
 */
export interface Problem {
  reason: string;
  message: string;
  blocking: boolean;
}

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
 * import { clusterStatus } from "./status.ts";
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
  if (i.kind === "stopped" || i.kind === "deleting") {
    const deleting = i.kind === "deleting";
    const problem = i.problem;
    const remaining = i.kind === "deleting" ? i.remaining : [];
    const waiting = i.kind === "deleting" ? i.waiting ?? [] : [];
    const ready: ConditionInput = problem
      ? { type: "Ready", status: "False", reason: problem.reason, message: problem.message }
      : {
        type: "Ready",
        status: "False",
        reason: "Deleting",
        message: remaining.length || !waiting.length
          ? `waiting for NIO to remove ${remaining.length} configuration(s): ${listNames(remaining)}`
          : `waiting for NIO to be done with the Machines before releasing them: ${waiting.join("; ")}`,
      };
    // Only Ready is known this pass. Stopped: the other conditions stay as last observed (their
    // observedGeneration says so); deleting: they no longer apply.
    const others = (i.previous?.conditions ?? []).filter((c) => c.type !== "Ready");
    const [merged] = mergeConditions(i.previous?.conditions, [ready], i.generation, i.now);
    return {
      ...i.previous,
      phase: deleting ? "Deleting" : problem?.blocking ? "Failed" : i.previous?.phase ?? "Provisioning",
      observedGeneration: i.generation,
      conditions: deleting ? [merged!] : [merged!, ...others],
    };
  }
  const { kind: _kind, problem, cutShort, ...pass } = i;
  if (!problem && !cutShort) return computeStatus(pass);
  // A pass cut short: what it observed (with the problem as Ready); what it could not compute stays as it was.
  const s = computeStatus(problem ? { ...pass, blocked: { reason: problem.reason, message: problem.message } } : pass);
  const kept = (i.previous?.conditions ?? []).filter((c) => !s.conditions?.some((n) => n.type === c.type));
  const keptPhase = i.previous?.phase === "Ready" || i.previous?.phase === "Updating";
  return {
    ...s,
    ...(s.rollout || !i.previous?.rollout ? {} : { rollout: i.previous.rollout }),
    // Cut short, this pass cannot tell a Ready cluster from a new one: it does not move it back to Provisioning.
    ...(s.phase === "Provisioning" && keptPhase ? { phase: "Updating" as const } : {}),
    ...(problem?.blocking ? { phase: "Failed" as const } : {}),
    conditions: [...(s.conditions ?? []), ...kept],
  };
}

/**
 * The whole status of a normal pass (see {@link clusterStatus}).
 *
 * @example
 * ```ts
 * import { computeStatus } from "./status.ts";
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
  const cpCond = planeCondition("ControlPlaneReady", "controlPlane", sel.controlPlane, cpNodes);
  const dpCond = planeCondition("DataPlaneReady", "dataPlane", sel.dataPlane, wNodes);
  const machines = machinesCondition(sel);
  const failed = i.nodes.filter((n) => n.state === "Failed");

  let ready: ConditionInput;
  if (i.deleting) {
    ready = { type: "Ready", status: "False", reason: "Deleting", message: "the cluster is being deleted" };
  } else if (i.blocked) {
    ready = { type: "Ready", status: "False", reason: i.blocked.reason, message: i.blocked.message };
  } else if (failed.length) {
    ready = {
      type: "Ready",
      status: "False",
      reason: "NodeFailed",
      message: `failed: ${listNames(failed.map((n) => `${n.machine} (${n.detail})`))}`,
    };
  } else if (i.workloadApi && !i.workloadApi.available && i.kubeconfigSecret) {
    ready = { type: "Ready", status: "False", reason: "WorkloadAPIUnavailable", message: i.workloadApi.message };
  } else if (cpCond.status !== "True") {
    ready = { type: "Ready", status: "False", reason: "WaitingForControlPlane", message: cpCond.message };
  } else if (dpCond.status !== "True") {
    ready = { type: "Ready", status: "False", reason: "WaitingForWorkers", message: dpCond.message };
  } else if (!i.kubeconfigSecret) {
    ready = {
      type: "Ready",
      status: "False",
      reason: "WaitingForKubeconfig",
      message: "nodes are ready; issuing the kubeconfig",
    };
  } else {
    ready = {
      type: "Ready",
      status: "True",
      reason: "ClusterReady",
      message: `${cpCond.message}; ${dpCond.message}; kubeconfig in Secret ${i.kubeconfigSecret}`,
    };
  }

  // After a failure, a node that applied an earlier spec proves this is a rollout of a running cluster, not its
  // first bring-up (so a node recovering from Failed mid-rollout brings the cluster back to Updating). A cluster
  // still in its first bring-up stays Provisioning when a late member changes cluster.nix under applied nodes.
  const runsOlderSpec = i.previous?.phase !== "Provisioning" && i.nodes.some((n) => n.state === "Ready" && !n.upToDate);
  // Once Ready, never Provisioning again (a recovery after a halt is not a first bring-up).
  const provisioned = i.previous?.initialization?.provisioned === true || ready.status === "True";
  const phase: Phase = i.deleting
    ? "Deleting"
    : failed.length
    ? "Failed"
    : ready.status === "True"
    ? "Ready"
    : provisioned ||
        (i.kubeconfigSecret && (i.previous?.phase === "Ready" || i.previous?.phase === "Updating" || runsOlderSpec))
    ? "Updating"
    : "Provisioning";
  const conditions = mergeConditions(
    i.previous?.conditions,
    [ready, cpCond, dpCond, machines, ...rolloutConditions(i), ...(i.extra ?? [])],
    i.generation,
    i.now,
  );
  const r = i.rollout;
  return {
    phase,
    observedGeneration: i.generation,
    controlPlane: planeStatus(cpNodes, sel.controlPlane),
    dataPlane: planeStatus(wNodes, sel.dataPlane),
    ...(i.bootstrap ? { bootstrapNode: i.bootstrap } : {}),
    ...(provisioned ? { initialization: { provisioned: true } } : {}),
    ...(i.endpoint ? { endpoint: i.endpoint } : {}),
    ...(i.kubeconfigSecret ? { kubeconfigSecret: i.kubeconfigSecret } : {}),
    ...(i.revision ? { revision: i.revision } : {}),
    ...(r
      ? {
        rollout: {
          specHash: r.specHash,
          upToDate: i.nodes.filter((n) => n.upToDate && n.state === "Ready").length,
          total: i.nodes.length,
          updating: r.plan.updating,
          pending: r.plan.pending,
          removing: r.plan.removing,
        },
      }
      : {}),
    conditions,
  };
}
