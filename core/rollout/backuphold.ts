/**
 * The planner's rule about etcd backups (core/rollout/rules.ts lists it
 * with the limits): where `spec.etcd.backup` is set, a step that touches
 * the control plane (a control-plane node updated: a switch or a version
 * step; removed: a member removal or a remediation; created once the
 * cluster is up: a replacement joining) waits until a snapshot younger than
 * the step exists. While one is taken the step is held (status says so);
 * when none could be taken it halts (`beforeChanges: Required`, naming the
 * store's error), or goes on and says the snapshot was skipped
 * (`BestEffort`). Pure; its rows are in tests/rollout_backup_rows.ts.
 *
 * @module
 */
import type { BackupGate, Draft, RolloutPass, RolloutPlan, RuleAnswer } from "./types.ts";

export type { BackupGate, BackupHold } from "./types.ts";

/** The control-plane nodes the draft creates (after the first bring-up), updates or removes in this pass. */
export function controlPlaneSteps(p: RolloutPass, d: Draft): string[] {
  const cp = new Set(p.cp.map((n) => n.machine));
  const leaving = new Set(p.i.departing.filter((n) => n.plane === "controlPlane").map((n) => n.machine));
  const created = p.i.firstBringUp ? [] : d.plan.create.filter((m) => cp.has(m));
  return [...created, ...d.plan.update.filter((m) => cp.has(m)), ...d.plan.remove.filter((m) => leaving.has(m))];
}

/** Whether `g`'s newest snapshot is younger than the step on `machine`. */
function fresh(g: BackupGate, machine: string): boolean {
  const since = g.since.get(machine) ?? g.now;
  return g.lastSuccess !== undefined && g.lastSuccess >= since;
}

/** Whether the last attempt failed after the step on `machine` was first wanted. */
function failedSince(g: BackupGate, machine: string): boolean {
  const since = g.since.get(machine) ?? g.now;
  return g.failure !== undefined && g.failure.at >= since;
}

/**
 * Control-plane steps wait for a snapshot younger than them (`i.backup`: where backups are configured). A step
 * whose snapshot failed halts the rollout (`Required`) or goes on with `backupHeld.skipped` said (`BestEffort`);
 * any other waits while one is taken (`backupHeld.state: "taking"`).
 */
export function backupBeforeControlPlane(p: RolloutPass, d: Draft): RuleAnswer {
  const g = p.i.backup;
  if (!g || p.i.paused) return "pass";
  const steps = controlPlaneSteps(p, d).filter((m) => !fresh(g, m));
  if (!steps.length) return "pass";
  const failed = steps.filter((m) => failedSince(g, m));
  if (failed.length && g.policy === "BestEffort") {
    d.plan.backupHeld = {
      machines: [],
      state: "skipped",
      message: `the etcd snapshot before changing ${failed.join(", ")} failed and is skipped (BestEffort): ` +
        g.failure!.message,
    };
    if (failed.length === steps.length) return "pass";
  }
  const held = g.policy === "BestEffort" ? steps.filter((m) => !failed.includes(m)) : steps;
  const heldSet = new Set(held);
  d.plan.create = d.plan.create.filter((m) => !heldSet.has(m));
  d.plan.update = d.plan.update.filter((m) => !heldSet.has(m));
  d.plan.remove = d.plan.remove.filter((m) => !heldSet.has(m));
  if (failed.length && g.policy === "Required") {
    const message = `the etcd snapshot a control-plane change waits for cannot be taken: ${g.failure!.message}`;
    d.plan.backupHeld = { machines: held, state: "failed", message };
    d.plan.halted ??= { machine: failed[0]!, detail: `BackupFailed: ${message}` };
    d.reasons.push(`control plane: ${held.join(", ")} waits for an etcd snapshot, and none can be taken`);
    return "pass";
  }
  d.plan.backupHeld = {
    machines: held,
    state: "taking",
    message: `taking an etcd snapshot before changing ${held.join(", ")}`,
    ...(d.plan.backupHeld?.state === "skipped" ? { skipped: d.plan.backupHeld.message } : {}),
  };
  d.reasons.push(`control plane: ${held.join(", ")} waits for an etcd snapshot (${g.taking ? "taking one" : "asked"})`);
  return "pass";
}

/**
 * Since when each control-plane step has waited for a snapshot (ms, by machine), after a pass planned `plan`: a step
 * held for one now is remembered from now on, and stays until it is carried out (its node no longer pending nor
 * leaving). A step whose snapshot was taken and that another hold (etcd's, a drain's) keeps back is still served by
 * that snapshot: forgotten then, each pass of that hold would want a snapshot of its own, and enough of them would
 * let `keep` delete the one taken before the step.
 *
 * @example
 * ```ts
 * import { stepsSince } from "./backuphold.ts";
 * const plan = { create: [], update: [], remove: [], pending: ["cp-2", "cp-3"], removing: [], updating: [] };
 * const held = { ...plan, backupHeld: { machines: ["cp-3"], state: "taking" as const, message: "" } };
 * stepsSince(new Map([["cp-1", 1], ["cp-2", 2]]), held, 5); // Map { "cp-2" => 2, "cp-3" => 5 }
 * ```
 */
export function stepsSince(
  before: ReadonlyMap<string, number>,
  plan: RolloutPlan | undefined,
  now: number,
): Map<string, number> {
  const held = plan?.backupHeld;
  const waiting = held && held.state !== "skipped" ? held.machines : [];
  const wanted = new Set([...(plan?.pending ?? []), ...(plan?.removing ?? []), ...waiting]);
  const next = new Map([...before].filter(([m]) => wanted.has(m)));
  for (const m of waiting) if (!next.has(m)) next.set(m, now);
  return next;
}
