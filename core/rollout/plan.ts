/**
 * The rollout planner: which node configurations to create, update or
 * delete in this pass so that no change ever takes the cluster down.
 *
 * Rules, in order:
 * - paused: touch nothing;
 * - Parallel provisioning, during the first bring-up only: every missing
 *   node is created at once (the flake's joins retry until the bootstrap
 *   server answers); once all exist, the rules below apply;
 * - the bootstrap node comes first and alone; nothing else moves until it is up;
 * - a failed node halts the rollout: nothing else is touched until it
 *   recovers or the spec changes (then only failed nodes are re-rendered);
 * - control-plane nodes are created, updated and removed strictly one at a
 *   time, and only while every other control-plane node is available, so at
 *   least floor(n/2)+1 stay up; a departing control-plane node that is down
 *   (a remediated one) is removed before any other one is updated (its
 *   replacement may be created first: 3 → 4 → 3);
 * - workers are updated at most `maxUnavailable` at a time (unavailable
 *   workers count against it) and removed one at a time; new workers are
 *   created as soon as the bootstrap node is up;
 * - `order` decides whether updates go to workers or the control plane first;
 * - while the workload cluster cannot be observed (`hold`), nothing is
 *   updated or removed (every node would look down and "cost nothing"),
 *   except a suspect of the outage, toward a newer spec (fix forward).
 *
 * Pure; golden-tested by simulating many rounds.
 *
 * @module
 */
import type { Plane } from "../machines/selection.ts";

export type RolloutOrder = "WorkersFirst" | "ControlPlaneFirst";

/** How a new cluster's nodes are first created: all at once, or the bootstrap node first and alone. */
export type ProvisioningMode = "Parallel" | "BootstrapFirst";

export interface PlanNode {
  machine: string;
  plane: Plane;
  /** Its NixosConfiguration exists. */
  exists: boolean;
  /** Its configuration carries the spec NICO wants now. */
  upToDate: boolean;
  /** NIO applied its current configuration and the Machine reports it. */
  available: boolean;
  /** NIO reports the apply failed, or it missed the node timeout. */
  failed: boolean;
  /** Short human state, for messages. */
  detail?: string;
  /** The workload API went away after this node's current change, which was not seen working (core/nodes/joined.ts). */
  suspect?: boolean;
  /** Unseen since the workload API came back moments ago: unavailable, but not down (core/nodes/joined.ts). */
  settling?: boolean;
  /** Changed while the workload API was away: in flight until it is seen working (core/nodes/joined.ts). */
  changedInOutage?: boolean;
}

/**
 * The planner's view of a node from its readiness report: one mapping for the
 * reconciler and `nico plan`.
 *
 * @example
 * ```ts
 * import { planNodeOf } from "./plan.ts";
 * planNodeOf({ machine: "w-1", plane: "dataPlane", state: "Ready", upToDate: false, detail: "applied" });
 * // { machine: "w-1", plane: "dataPlane", exists: true, upToDate: false, available: true, failed: false, detail: "applied" }
 * ```
 */
export function planNodeOf(
  n: Omit<PlanNode, "exists" | "available" | "failed" | "detail"> & { state: string; detail: string },
): PlanNode {
  return {
    machine: n.machine,
    plane: n.plane,
    exists: n.state !== "Pending",
    upToDate: n.upToDate,
    available: n.state === "Ready",
    failed: n.state === "Failed",
    detail: n.detail,
    ...(n.suspect ? { suspect: true } : {}),
    ...(n.settling ? { settling: true } : {}),
    ...(n.changedInOutage ? { changedInOutage: true } : {}),
  };
}

export interface DepartingNode {
  machine: string;
  plane: Plane;
  /** Its deletion is in progress (NIO applies #minimal). */
  deleting: boolean;
  /**
   * It is down (taken out of service, or its Node is not Ready): removing it takes nothing away, and a
   * control-plane node that is down leaves before any other control-plane node changes (etcd still counts it).
   */
  down?: boolean;
}

export interface RolloutInput {
  nodes: PlanNode[];
  departing: DepartingNode[];
  bootstrap: string;
  order: RolloutOrder;
  maxUnavailable: number;
  paused: boolean;
  /** The bootstrap node is the API endpoint (no controlPlaneEndpoint): it may not leave while others remain. */
  endpointIsBootstrap?: boolean;
  /** Default BootstrapFirst. Parallel only changes the first bring-up. */
  provisioning?: ProvisioningMode;
  /** The cluster is new (its bootstrap node has never been up): no running node can be taken down by creating others. */
  firstBringUp?: boolean;
  /** Why the workload cluster cannot be observed now; set: creations only. */
  hold?: string | undefined;
  /**
   * Departed nodes whose configuration is gone but whose Machine NIO is not done with yet (its removal
   * flake may still run): no further removal starts until they are released.
   */
  releasing?: string[];
}

/** A node the plan would change or remove, held back until its drain finishes (core/rollout/drainhold.ts). */
export interface DrainHold {
  machine: string;
  state: "Draining" | "TimedOut";
  message: string;
}

export interface RolloutPlan {
  create: string[];
  update: string[];
  remove: string[];
  /** The rollout is halted at this node. */
  halted?: { machine: string; detail: string } | undefined;
  /** Why nothing more happens in this pass, for people. */
  waiting?: string | undefined;
  /** Everything left to create or update, in the order the planner will do it. */
  pending: string[];
  /** Departing nodes, in removal order. */
  removing: string[];
  /** Nodes NIO is converging now. */
  updating: string[];
  /** Departing nodes kept on purpose (the bootstrap node while it is the API endpoint), with why. */
  held?: { machine: string; why: string } | undefined;
  /** Nodes the planner chose that wait for their drain (core/rollout/drainhold.ts), with what each waits for. */
  drainHeld?: DrainHold[] | undefined;
}

const byName = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** Control-plane order: the bootstrap node first when it is missing, otherwise last. */
function cpOrder(nodes: PlanNode[], bootstrap: string): PlanNode[] {
  return [...nodes].sort((a, b) => {
    const ab = a.machine === bootstrap ? (a.exists ? 1 : -1) : 0;
    const bb = b.machine === bootstrap ? (b.exists ? 1 : -1) : 0;
    return ab - bb || byName(a.machine, b.machine);
  });
}

/**
 * Plans one pass.
 *
 * @example
 * ```ts
 * import { planRollout } from "./plan.ts";
 * const node = (machine: string) => ({ machine, plane: "controlPlane" as const, exists: false, upToDate: false, available: false, failed: false });
 * const plan = planRollout({
 *   nodes: [node("cp-1"), node("cp-2")],
 *   departing: [],
 *   bootstrap: "cp-1",
 *   order: "WorkersFirst",
 *   maxUnavailable: 1,
 *   paused: false,
 * });
 * plan.create; // ["cp-1"]: the bootstrap node first, the others once it is up
 * ```
 */
export function planRollout(i: RolloutInput): RolloutPlan {
  const plan = planPass(i);
  if (i.hold && !i.paused && (plan.update.length || plan.remove.length || plan.pending.length)) {
    return darkPlan(i, plan);
  }
  return plan;
}

/**
 * The one rule while the workload API cannot be read: no node is changed or removed except a suspect (a node
 * whose change in this step came before the outage and was not seen working), and then only toward a newer
 * spec, one control-plane node at a time (none while another control-plane node changed for it, or re-rendered
 * during the outage, is not seen working). New nodes are still created.
 */
function darkPlan(i: RolloutInput, plan: RolloutPlan): RolloutPlan {
  const fixable = i.nodes.filter((n) => n.exists && !n.upToDate && n.suspect);
  const cpInFlight = i.nodes.some((n) =>
    n.plane === "controlPlane" && !n.available && n.upToDate && (n.suspect || n.changedInOutage)
  );
  const cp = cpOrder(fixable.filter((n) => n.plane === "controlPlane"), i.bootstrap);
  plan.update = [
    ...fixable.filter((n) => n.plane === "dataPlane").map((n) => n.machine).sort(byName),
    ...(cp.length && !cpInFlight ? [cp[0]!.machine] : []),
  ];
  plan.remove = [];
  plan.waiting = `rollout waits: ${i.hold}` +
    (plan.update.length ? `; fixing forward ${plan.update.join(", ")} (changed just before the outage)` : "");
  return plan;
}

function planPass(i: RolloutInput): RolloutPlan {
  const cp = cpOrder(i.nodes.filter((n) => n.plane === "controlPlane"), i.bootstrap);
  const workers = i.nodes.filter((n) => n.plane === "dataPlane").sort((a, b) => byName(a.machine, b.machine));
  const todo = (n: PlanNode) => !n.exists || !n.upToDate;
  const pendingCp = cp.filter(todo).map((n) => n.machine);
  const pendingW = workers.filter(todo).map((n) => n.machine);
  const removing = [
    ...i.departing.filter((d) => d.plane === "dataPlane").map((d) => d.machine).sort(byName),
    ...i.departing.filter((d) => d.plane === "controlPlane").map((d) => d.machine).sort(byName),
  ];
  const plan: RolloutPlan = {
    create: [],
    update: [],
    remove: [],
    pending: i.order === "WorkersFirst" ? [...pendingW, ...pendingCp] : [...pendingCp, ...pendingW],
    removing,
    updating: i.nodes.filter((n) => n.exists && n.upToDate && !n.available && !n.failed).map((n) => n.machine).sort(
      byName,
    ),
  };
  if (i.paused) {
    plan.waiting = "paused: no child object is changed";
    return plan;
  }
  const act = (n: PlanNode) => (n.exists ? plan.update : plan.create).push(n.machine);

  if (i.provisioning === "Parallel" && i.firstBringUp && !i.nodes.some((n) => n.failed)) {
    const missing = [...cp, ...workers].filter((n) => !n.exists);
    if (missing.length) {
      plan.create.push(...missing.map((n) => n.machine));
      plan.waiting = `creating ${missing.length} node(s) at once (Parallel provisioning)`;
      return plan;
    }
  }

  const boot = cp.find((n) => n.machine === i.bootstrap);
  if (boot && !boot.exists) {
    act(boot);
    plan.waiting = `creating the bootstrap node ${boot.machine} first`;
    return plan;
  }
  if (boot && !boot.available) {
    if (boot.failed && !boot.upToDate) act(boot);
    plan.waiting = `waiting for the bootstrap node ${boot.machine} (${boot.detail ?? "not ready"})`;
    if (boot.failed) plan.halted = { machine: boot.machine, detail: boot.detail ?? "failed" };
    return plan;
  }

  const failed = i.nodes.filter((n) => n.failed);
  if (failed.length) {
    // Fix forward only: a failed node whose spec changed may be re-rendered; nothing else moves.
    for (const n of failed) if (n.exists && !n.upToDate) act(n);
    plan.halted = { machine: failed[0]!.machine, detail: failed[0]!.detail ?? "failed" };
    plan.waiting = `rollout halted at ${
      failed[0]!.machine
    }: nothing else is touched until it recovers or the spec changes`;
    return plan;
  }

  const cpSettled = cp.every((n) => n.exists && n.upToDate && n.available);
  const wSettled = workers.every((n) => n.exists && n.upToDate && n.available);
  const reasons: string[] = [];

  // Workers: creations at once; updates within the unavailability budget.
  for (const n of workers) if (!n.exists) plan.create.push(n.machine);
  if (i.order === "ControlPlaneFirst" && !cpSettled) {
    if (workers.some((n) => n.exists && !n.upToDate)) {
      reasons.push("workers wait for the control plane (ControlPlaneFirst)");
    }
  } else {
    // Outdated workers that are down already cost nothing to update; then the budget applies.
    for (const n of workers) if (n.exists && !n.upToDate && !n.available && !n.settling) plan.update.push(n.machine);
    let budget = i.maxUnavailable - workers.filter((n) => n.exists && !n.available).length;
    for (const n of workers) {
      if (budget <= 0) break;
      if (n.exists && !n.upToDate && n.available) {
        plan.update.push(n.machine);
        budget--;
      }
    }
    if (workers.some((n) => n.exists && !n.upToDate && !plan.update.includes(n.machine))) {
      reasons.push(`at most ${i.maxUnavailable} worker(s) unavailable at once`);
    }
  }

  // Control plane: one at a time, only while every control-plane node is available.
  const cpBusy = cp.find((n) => n.exists && !n.available);
  const cpLeaving = i.departing.find((d) => d.plane === "controlPlane" && d.deleting);
  const cpDownLeaving = i.departing.find((d) => d.plane === "controlPlane" && d.down && !d.deleting);
  const nextCp = cp.find((n) => !n.exists) ?? cp.find((n) => !n.upToDate);
  if (nextCp) {
    const cpDown = cp.filter((n) => n.exists && !n.available).length;
    const lone = cpBusy && !cpBusy.upToDate && !cpBusy.settling && cpDown === 1 && !cpLeaving;
    if (cpBusy && lone) {
      // The one control-plane node that is down is outdated: re-render it, touching nothing else.
      act(cpBusy);
    } else if (cpBusy) {
      reasons.push(
        `control plane: waiting for ${cpBusy.machine} (${cpBusy.detail ?? "not ready"}) before touching another`,
      );
    } else if (cpLeaving) {
      reasons.push(`control plane: waiting for ${cpLeaving.machine} to be removed before touching another`);
    } else if (cpDownLeaving && nextCp.exists) {
      // Its replacement may join (above); a running member restarted now would leave etcd one vote short.
      reasons.push(`control plane: ${cpDownLeaving.machine} is down and leaves before another member changes`);
    } else if (nextCp.exists && i.order === "WorkersFirst" && !wSettled) {
      reasons.push("control plane waits for the workers (WorkersFirst)");
    } else {
      act(nextCp);
    }
  }

  // Departures: one per plane at a time, each only once the one before has left entirely; a control-plane
  // node only while the rest keep quorum.
  const departingCp = i.departing.filter((d) => d.plane === "controlPlane");
  const departingW = i.departing.filter((d) => d.plane === "dataPlane");
  const releasing = [...(i.releasing ?? [])].sort(byName);
  if (releasing.length && i.departing.some((d) => !d.deleting)) {
    reasons.push(`removals wait until ${releasing.join(", ")} left (NIO is still removing it)`);
  } else if (departingW.length && !departingW.some((d) => d.deleting)) {
    plan.remove.push(departingW.map((d) => d.machine).sort(byName)[0]!);
  }
  if (departingCp.length && !departingCp.some((d) => d.deleting) && !releasing.length) {
    const candidates = departingCp.map((d) => d.machine).sort(byName)
      .filter((m) => !(m === i.bootstrap && i.endpointIsBootstrap && cp.length > 0));
    if (candidates.length < departingCp.length) {
      const why = `bootstrap node ${i.bootstrap} is the API endpoint: set spec.controlPlaneEndpoint before removing it`;
      plan.held = { machine: i.bootstrap, why };
      reasons.push(why);
    }
    if (
      candidates.length && cp.every((n) => n.exists && n.available) && !plan.create.length &&
      !plan.update.some((m) => cp.some((n) => n.machine === m))
    ) {
      plan.remove.push(candidates[0]!);
    } else if (candidates.length) {
      reasons.push("control-plane removal waits until every remaining control-plane node is available");
    }
  }
  if (reasons.length) plan.waiting = reasons.join("; ");
  return plan;
}
