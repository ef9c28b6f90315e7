/**
 * The rollout planner's rules, one small function each, in the order they
 * are asked ({@link RULES}, then {@link LIMITS}). Each rule reads the pass
 * ({@link RolloutPass}: the input, with its nodes sorted once) and either
 * decides the pass (no later rule of {@link RULES} is asked) or adds the
 * moves it allows and why it holds the rest back, and passes. The limits
 * then narrow whatever was chosen, however the rules ended.
 *
 * A new rule is one function here, one row in its list, and one row in the
 * table of tests/unit/rollout_rules_test.ts. Pure.
 *
 * @module
 */
import type {
  DepartingNode,
  Draft,
  PlanNode,
  RolloutInput,
  RolloutPass,
  RolloutPlan,
  Rule,
  RuleAnswer,
} from "./types.ts";
import { versionChangesControlPlaneFirst, versionSkewGuard } from "./version_rules.ts";
import { backupBeforeControlPlane } from "./backuphold.ts";

export type { Draft, RolloutPass, Rule, RuleAnswer } from "./types.ts";

/** The rules that choose the moves, in order: the first that decides ends the choosing. */
export const RULES: readonly Rule[] = [
  paused,
  versionChangesControlPlaneFirst,
  parallelFirstBringUp,
  bootstrapFirst,
  failedHalts,
  newWorkersAtOnce,
  workersWithinBudget,
  controlPlaneOneAtATime,
  releasedBeforeRemovals,
  oneWorkerLeavesAtATime,
  controlPlaneLeavesKeepingQuorum,
];

/** The rules that narrow what {@link RULES} chose, in order, asked however those ended. */
export const LIMITS: readonly Rule[] = [outageHold, versionSkewGuard, backupBeforeControlPlane];

const byName = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** Control-plane order: the bootstrap node first when it is missing, otherwise last. */
function cpOrder(nodes: readonly PlanNode[], bootstrap: string): PlanNode[] {
  return [...nodes].sort((a, b) => {
    const ab = a.machine === bootstrap ? (a.exists ? 1 : -1) : 0;
    const bb = b.machine === bootstrap ? (b.exists ? 1 : -1) : 0;
    return ab - bb || byName(a.machine, b.machine);
  });
}

/**
 * The pass of `i` and its empty plan: what is left to do, what leaves, what converges; no move yet.
 *
 * @example
 * ```ts
 * import { rolloutPass } from "./rules.ts";
 * const node = (machine: string) => ({ machine, plane: "controlPlane" as const, exists: true, upToDate: false, available: true, failed: false });
 * const { pass, draft } = rolloutPass({
 *   nodes: [node("cp-1"), node("cp-3"), node("cp-2")], departing: [], bootstrap: "cp-1",
 *   order: "WorkersFirst", maxUnavailable: 1, paused: false,

 *   endpointIsBootstrap: false, provisioning: "BootstrapFirst", firstBringUp: false, hold: undefined, releasing: [],
 *   versions: undefined,
 *   backup: undefined,
 * });
 * pass.cp.map((n) => n.machine); // ["cp-2", "cp-3", "cp-1"]: the bootstrap node last once it exists
 * draft.plan.pending; // ["cp-2", "cp-3", "cp-1"]
 * ```
 */
export function rolloutPass(i: RolloutInput): { pass: RolloutPass; draft: Draft } {
  const cp = cpOrder(i.nodes.filter((n) => n.plane === "controlPlane"), i.bootstrap);
  const workers = i.nodes.filter((n) => n.plane === "dataPlane").sort((a, b) => byName(a.machine, b.machine));
  const todo = (n: PlanNode) => !n.exists || !n.upToDate;
  const pendingCp = cp.filter(todo).map((n) => n.machine);
  const pendingW = workers.filter(todo).map((n) => n.machine);
  const names = (plane: DepartingNode["plane"]) =>
    i.departing.filter((d) => d.plane === plane).map((d) => d.machine).sort(byName);
  const plan: RolloutPlan = {
    create: [],
    update: [],
    remove: [],
    pending: i.order === "WorkersFirst" ? [...pendingW, ...pendingCp] : [...pendingCp, ...pendingW],
    removing: [...names("dataPlane"), ...names("controlPlane")],
    updating: i.nodes.filter((n) => n.exists && n.upToDate && !n.available && !n.failed).map((n) => n.machine)
      .sort(byName),
  };
  const releasing = [...(i.releasing ?? [])].sort(byName);
  return { pass: { i, cp, workers, releasing }, draft: { plan, reasons: [], order: i.order } };
}

/** Creates a node that is missing, updates one that exists. */
function act(d: Draft, n: PlanNode): void {
  (n.exists ? d.plan.update : d.plan.create).push(n.machine);
}

/** Paused: nothing is touched. */
export function paused(p: RolloutPass, d: Draft): RuleAnswer {
  if (!p.i.paused) return "pass";
  d.reasons.push("paused: no child object is changed");
  return "decided";
}

/**
 * Parallel provisioning, during the first bring-up only: every missing node is created at once (the flake's joins
 * retry until the bootstrap server answers); once all exist, or once a node failed, the rules after it apply.
 */
export function parallelFirstBringUp(p: RolloutPass, d: Draft): RuleAnswer {
  const { i } = p;
  if (i.provisioning !== "Parallel" || !i.firstBringUp || i.nodes.some((n) => n.failed)) return "pass";
  const missing = [...p.cp, ...p.workers].filter((n) => !n.exists);
  if (!missing.length) return "pass";
  d.plan.create.push(...missing.map((n) => n.machine));
  d.reasons.push(`creating ${missing.length} node(s) at once (Parallel provisioning)`);
  return "decided";
}

/**
 * The bootstrap node comes first and alone: created first, then waited for; nothing else moves until it is up.
 * Failed, it halts the rollout (and is re-rendered when its spec changed).
 */
export function bootstrapFirst(p: RolloutPass, d: Draft): RuleAnswer {
  const boot = p.cp.find((n) => n.machine === p.i.bootstrap);
  if (!boot) return "pass";
  if (!boot.exists) {
    act(d, boot);
    d.reasons.push(`creating the bootstrap node ${boot.machine} first`);
    return "decided";
  }
  if (boot.available) return "pass";
  if (boot.failed && !boot.upToDate) act(d, boot);
  d.reasons.push(`waiting for the bootstrap node ${boot.machine} (${boot.detail ?? "not ready"})`);
  if (boot.failed) d.plan.halted = { machine: boot.machine, detail: boot.detail ?? "failed" };
  return "decided";
}

/**
 * A failed node halts the rollout: nothing else is touched until it recovers or the spec changes. Fix forward
 * only: a failed node whose spec changed is re-rendered.
 */
export function failedHalts(p: RolloutPass, d: Draft): RuleAnswer {
  const failed = p.i.nodes.filter((n) => n.failed);
  const first = failed[0];
  if (!first) return "pass";
  for (const n of failed) if (n.exists && !n.upToDate) act(d, n);
  d.plan.halted = { machine: first.machine, detail: first.detail ?? "failed" };
  d.reasons.push(`rollout halted at ${first.machine}: nothing else is touched until it recovers or the spec changes`);
  return "decided";
}

/** New workers are created at once (the bootstrap node is up: the rules before decided otherwise). */
export function newWorkersAtOnce(p: RolloutPass, d: Draft): RuleAnswer {
  for (const n of p.workers) if (!n.exists) d.plan.create.push(n.machine);
  return "pass";
}

/**
 * Workers are updated at most `maxUnavailable` at a time (unavailable workers count against it; an outdated
 * worker that is down already costs nothing, unless it is only settling after an outage). Under
 * `ControlPlaneFirst` they wait until every control-plane node is up to date and available.
 */
export function workersWithinBudget(p: RolloutPass, d: Draft): RuleAnswer {
  const { i, workers } = p;
  const outdated = workers.filter((n) => n.exists && !n.upToDate);
  const cpSettled = p.cp.every((n) => n.exists && n.upToDate && n.available);
  if (d.order === "ControlPlaneFirst" && !cpSettled) {
    if (outdated.length) d.reasons.push("workers wait for the control plane (ControlPlaneFirst)");
    return "pass";
  }
  const update = outdated.filter((n) => !n.available && !n.settling).map((n) => n.machine);
  let budget = i.maxUnavailable - workers.filter((n) => n.exists && !n.available).length;
  for (const n of outdated) {
    if (budget <= 0) break;
    if (n.available) {
      update.push(n.machine);
      budget--;
    }
  }
  d.plan.update.push(...update);
  if (outdated.some((n) => !d.plan.update.includes(n.machine))) {
    d.reasons.push(`at most ${i.maxUnavailable} worker(s) unavailable at once`);
  }
  return "pass";
}

/**
 * Control-plane nodes are created, updated and removed strictly one at a time, and only while every other
 * control-plane node is available, so at least floor(n/2)+1 stay up. The one node that is down, if outdated, is
 * re-rendered. A departing control-plane node that is down (a remediated one) leaves before any other one is
 * updated (its replacement may be created first: 3 → 4 → 3). Under `WorkersFirst` updates wait for the workers.
 */
export function controlPlaneOneAtATime(p: RolloutPass, d: Draft): RuleAnswer {
  const { i, cp } = p;
  const next = cp.find((n) => !n.exists) ?? cp.find((n) => !n.upToDate);
  if (!next) return "pass";
  const busy = cp.find((n) => n.exists && !n.available);
  const leaving = i.departing.find((n) => n.plane === "controlPlane" && n.deleting);
  const downLeaving = i.departing.find((n) => n.plane === "controlPlane" && n.down && !n.deleting);
  const down = cp.filter((n) => n.exists && !n.available).length;
  const cpLeaver = i.departing.find((n) => n.plane === "controlPlane");
  const workersSettled = p.workers.every((n) => n.exists && n.upToDate && n.available);
  if (busy && !busy.upToDate && !busy.settling && down === 1 && !leaving) {
    // The one control-plane node that is down is outdated: re-render it, touching nothing else.
    act(d, busy);
  } else if (busy) {
    d.reasons.push(
      `control plane: waiting for ${busy.machine} (${busy.detail ?? "not ready"}) before touching another`,
    );
  } else if (leaving) {
    d.reasons.push(`control plane: waiting for ${leaving.machine} to be removed before touching another`);
  } else if (downLeaving && next.exists) {
    // Its replacement may join (above); a running member restarted now would leave etcd one vote short.
    d.reasons.push(`control plane: ${downLeaving.machine} is down and leaves before another member changes`);
  } else if (next.exists && etcdMembers(p) === 2 && cpLeaver) {
    // Two members cannot lose one for a switch: the leaver goes first, and the one left switches alone.
    d.reasons.push(
      `control plane: ${cpLeaver.machine} leaves before ${next.machine} switches (two etcd members cannot lose one)`,
    );
  } else if (next.exists && d.order === "WorkersFirst" && !workersSettled) {
    d.reasons.push("control plane waits for the workers (WorkersFirst)");
  } else {
    act(d, next);
  }
  return "pass";
}

/**
 * The etcd members the control plane has, as the planner counts them: its nodes whose configuration exists and its
 * departing nodes (their members stay until they leave). A scale-down orders its switches and removals by it so
 * that no step leaves fewer healthy members than a majority: a staying node switches while three members remain,
 * and a leaver goes first when only two are left (core/etcd/membership.ts judges each step on etcd's own count).
 */
function etcdMembers(p: RolloutPass): number {
  return p.cp.filter((n) => n.exists).length + p.i.departing.filter((n) => n.plane === "controlPlane").length;
}

/** Departures wait until the departed nodes NIO is still removing are released (their removal flake may run). */
export function releasedBeforeRemovals(p: RolloutPass, d: Draft): RuleAnswer {
  if (p.releasing.length && p.i.departing.some((n) => !n.deleting)) {
    d.reasons.push(`removals wait until ${p.releasing.join(", ")} left (NIO is still removing it)`);
  }
  return "pass";
}

/** Workers leave one at a time, each once the one before has left entirely. */
export function oneWorkerLeavesAtATime(p: RolloutPass, d: Draft): RuleAnswer {
  const departing = p.i.departing.filter((n) => n.plane === "dataPlane");
  if (p.releasing.length || !departing.length || departing.some((n) => n.deleting)) return "pass";
  d.plan.remove.push(departing.map((n) => n.machine).sort(byName)[0]!);
  return "pass";
}

/**
 * Control-plane nodes leave one at a time, each once the one before has left entirely, and only while every
 * remaining control-plane node is available and none is created or updated in this pass. The bootstrap node
 * stays while it is the API endpoint (no controlPlaneEndpoint) and other control-plane nodes remain.
 */
export function controlPlaneLeavesKeepingQuorum(p: RolloutPass, d: Draft): RuleAnswer {
  const { i, cp } = p;
  const departing = i.departing.filter((n) => n.plane === "controlPlane");
  if (!departing.length || departing.some((n) => n.deleting) || p.releasing.length) return "pass";
  const candidates = departing.map((n) => n.machine).sort(byName)
    .filter((m) => !(m === i.bootstrap && i.endpointIsBootstrap && cp.length > 0));
  if (candidates.length < departing.length) {
    const why = `bootstrap node ${i.bootstrap} is the API endpoint: set spec.controlPlaneEndpoint before removing it`;
    d.plan.held = { machine: i.bootstrap, why };
    d.reasons.push(why);
  }
  const quiet = cp.every((n) => n.exists && n.available) && !d.plan.create.length &&
    !d.plan.update.some((m) => cp.some((n) => n.machine === m));
  // Three members would become two, which cannot lose one: a staying node switches first, while three remain.
  const first = departing.find((n) => n.machine === candidates[0]);
  const toSwitch = cp.filter((n) => n.exists && !n.upToDate).map((n) => n.machine);
  if (first && !first.down && etcdMembers(p) === 3 && toSwitch.length) {
    d.reasons.push(
      `control-plane removal of ${first.machine} waits until ${toSwitch.join(", ")} switched (with two etcd ` +
        "members left, a switch would cost quorum)",
    );
  } else if (candidates.length && quiet) d.plan.remove.push(candidates[0]!);
  else if (candidates.length) {
    d.reasons.push("control-plane removal waits until every remaining control-plane node is available");
  }
  return "pass";
}

/**
 * While the workload API cannot be read (`hold`), no node is changed or removed (every node would look down and
 * "cost nothing") except a suspect (a node whose change in this step came before the outage and was not seen
 * working), and then only toward a newer spec, one control-plane node at a time (none while another
 * control-plane node changed for it, or re-rendered during the outage, is not seen working). New nodes are still
 * created.
 */
export function outageHold(p: RolloutPass, d: Draft): RuleAnswer {
  const { i } = p;
  const { plan } = d;
  if (!i.hold || i.paused || !(plan.update.length || plan.remove.length || plan.pending.length)) return "pass";
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
  d.reasons.splice(
    0,
    d.reasons.length,
    `rollout waits: ${i.hold}` +
      (plan.update.length ? `; fixing forward ${plan.update.join(", ")} (changed just before the outage)` : ""),
  );
  return "pass";
}
