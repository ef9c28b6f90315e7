/**
 * The cluster's status, derived from observation on every pass. Pure.
 *
 * @module
 */
import type { ConditionInput } from "./conditions.ts";
import { listNames, mergeConditions } from "./conditions.ts";
import type { KubernetesClusterStatus, Phase, PlaneStatus } from "../crds/kubernetescluster.ts";
import type { NodeReport } from "./readiness.ts";
import type { RolloutPlan } from "./rollout.ts";
import type { Plane, PlaneSelection, Selection } from "./selection.ts";

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
  now: Date;
}

const PLANE_WORDS: Record<Plane, string> = { controlPlane: "control plane", dataPlane: "worker" };

/** How many nodes a plane asks for: the list's length or `count`; every matching Machine when neither bounds it. */
export function requestedSize(sel: PlaneSelection): number {
  return sel.wanted ?? sel.members.length;
}

function planeStatus(nodes: NodeReport[], sel: PlaneSelection): PlaneStatus {
  const ready = nodes.filter((n) => n.state === "Ready").map((n) => n.machine).sort();
  const requested = requestedSize(sel);
  return {
    ready: ready.length,
    total: sel.members.length,
    requested,
    summary: `${ready.length}/${requested}`,
    readyMachines: ready,
    machines: [...sel.members].sort(),
  };
}

function planeCondition(type: string, plane: Plane, sel: PlaneSelection, nodes: NodeReport[]): ConditionInput {
  const words = PLANE_WORDS[plane];
  const ready = nodes.filter((n) => n.state === "Ready").length;
  const total = sel.members.length;
  const requested = requestedSize(sel);
  const counted = `${ready}/${requested} ${words} machines ready`;
  if (total === 0) {
    return plane === "dataPlane" && (sel.wanted ?? 0) === 0
      ? { type, status: "True", reason: "NoWorkers", message: "no workers requested" }
      : { type, status: "False", reason: "NoMachines", message: `no ${words} machines selected` };
  }
  const failed = nodes.filter((n) => n.state === "Failed");
  if (failed.length) {
    return {
      type,
      status: "False",
      reason: "NodeFailed",
      message: `${counted}; failed: ${listNames(failed.map((n) => `${n.machine} (${n.detail})`))}`,
    };
  }
  const waiting = nodes.filter((n) => n.state !== "Ready").map((n) => `${n.machine} (${n.detail})`);
  if (ready === total && total < requested) {
    // One rule for both planes: a plane below the size asked for is not Ready, however healthy its nodes.
    return {
      type,
      status: "False",
      reason: "Underprovisioned",
      message: `${counted}: ${total} of ${requested} requested ${words} machines are available; see MachinesAvailable`,
    };
  }
  if (ready === total) return { type, status: "True", reason: "NodesReady", message: counted };
  if (!waiting.length) {
    // Nodes were not evaluated this pass (NICO is blocked before it can render them): say so, not "waiting for".
    return { type, status: "False", reason: "WaitingForNodes", message: `${counted}; nodes not evaluated yet` };
  }
  return { type, status: "False", reason: "WaitingForNodes", message: `${counted}; waiting for ${listNames(waiting)}` };
}

function machinesCondition(sel: Selection): ConditionInput {
  const parts: string[] = [];
  let underprovisioned = false;
  for (const plane of ["controlPlane", "dataPlane"] as const) {
    const p = sel[plane];
    if (p.shortfall > 0) {
      underprovisioned = true;
      const source = p.mode === "explicit" ? "listed" : `matching ${p.selector} and free`;
      parts.push(
        `${
          PLANE_WORDS[plane]
        }: ${p.members.length} of ${p.wanted} machines available (${p.shortfall} short; no more ${source})`,
      );
    }
  }
  const problems = sel.problems.map((p) => `${p.message}${p.kept ? " (kept as a member)" : ""}`);
  const explicitMissing = sel.problems.some((p) => !p.kept && sel[p.plane].mode === "explicit");
  if (underprovisioned || explicitMissing) {
    return {
      type: "MachinesAvailable",
      status: "False",
      reason: explicitMissing ? "MachinesUnavailable" : "Underprovisioned",
      message: [...parts, ...problems].join("; "),
    };
  }
  const cp = sel.controlPlane.members.length;
  const w = sel.dataPlane.members.length;
  const msg = `${cp} control plane and ${w} worker machines selected`;
  return {
    type: "MachinesAvailable",
    status: "True",
    reason: "MachinesSelected",
    message: problems.length ? `${msg}; ${problems.join("; ")}` : msg,
  };
}

function rolloutConditions(i: StatusInput): ConditionInput[] {
  const r = i.rollout;
  if (!r) return [];
  const { plan } = r;
  const paused: ConditionInput = r.paused
    ? {
      type: "Paused",
      status: "True",
      reason: "Paused",
      message:
        "paused: NICO changes no child object until spec.paused and the nico.homystack.com/paused annotation are cleared",
    }
    : { type: "Paused", status: "False", reason: "NotPaused", message: "changes are rolled out" };
  const upToDate = i.nodes.filter((n) => n.upToDate && n.state === "Ready").length;
  const total = i.nodes.length;
  const left = plan.pending.length + plan.removing.length;
  const uptodate: ConditionInput = left === 0 && upToDate === total
    ? {
      type: "UpToDate",
      status: "True",
      reason: "UpToDate",
      message: `${upToDate}/${total} nodes run the desired configuration`,
    }
    : {
      type: "UpToDate",
      status: "False",
      reason: "RolloutPending",
      message: `${upToDate}/${total} nodes run the desired configuration` +
        (plan.pending.length ? `; to update, in order: ${listNames(plan.pending, 8)}` : "") +
        (plan.removing.length ? `; to remove: ${listNames(plan.removing)}` : ""),
    };
  const smallCp = r.controlPlaneSize < 3
    ? `; with ${r.controlPlaneSize} control-plane node(s) an update of the control plane interrupts the Kubernetes API`
    : "";
  let rolling: ConditionInput;
  if (plan.halted) {
    rolling = {
      type: "RollingOut",
      status: "False",
      reason: "RolloutStalled",
      message:
        `halted at ${plan.halted.machine} (${plan.halted.detail}): nothing else is touched until it recovers or the spec changes`,
    };
  } else if (plan.held && left === 1 && !plan.updating.length) {
    rolling = {
      type: "RollingOut",
      status: "False",
      reason: "RemovalHeld",
      message: `${plan.held.machine} stays: ${plan.held.why}; ${upToDate}/${total} nodes up to date`,
    };
  } else if (r.paused && left) {
    rolling = { type: "RollingOut", status: "False", reason: "Paused", message: `paused with ${left} node(s) pending` };
  } else if (left || plan.updating.length) {
    const now = plan.updating.length ? `updating ${listNames(plan.updating)}` : "starting";
    rolling = {
      type: "RollingOut",
      status: "True",
      reason: "RollingOut",
      message: `${now}; ${upToDate}/${total} up to date${plan.waiting ? `; ${plan.waiting}` : ""}${smallCp}`,
    };
  } else {
    rolling = {
      type: "RollingOut",
      status: "False",
      reason: "RolloutComplete",
      message: `${total}/${total} nodes up to date`,
    };
  }
  return [rolling, uptodate, paused];
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
    const ready: ConditionInput = problem
      ? { type: "Ready", status: "False", reason: problem.reason, message: problem.message }
      : {
        type: "Ready",
        status: "False",
        reason: "Deleting",
        message: `waiting for NIO to remove ${remaining.length} configuration(s): ${listNames(remaining)}`,
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

/** The whole status of a normal pass (see {@link clusterStatus}). */
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

  // A node that applied an earlier spec proves this is a rollout of a running cluster, not its first bring-up
  // (so a node recovering from Failed mid-rollout brings the cluster back to Updating, not Provisioning).
  const runsOlderSpec = i.nodes.some((n) => n.state === "Ready" && !n.upToDate);
  const phase: Phase = i.deleting
    ? "Deleting"
    : failed.length
    ? "Failed"
    : ready.status === "True"
    ? "Ready"
    : i.kubeconfigSecret && (i.previous?.phase === "Ready" || i.previous?.phase === "Updating" || runsOlderSpec)
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
