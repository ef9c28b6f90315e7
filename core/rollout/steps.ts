/**
 * The whole pending rollout, step by step: runs the rollout planner
 * (core/rollout/plan.ts) pass after pass, assuming every node it touches
 * converges before the next pass, and records what each pass starts and why
 * the rest waits. The drains under way hold their nodes in the first pass
 * (core/rollout/drainhold.ts) and are assumed finished after it. `nico plan` prints
 * it. Pure.
 *
 * @module
 */
import { type DrainHold, holdForDrains, type NodeDrain } from "./drainhold.ts";
import { planRollout, type RolloutInput } from "./plan.ts";

export type StepAction = "create" | "update" | "remove";

/** One pass of the planner: what it starts, and why it starts nothing more. */
export interface RolloutStep {
  /** 0 is the pass NICO makes now; later steps assume the earlier ones finished. */
  index: number;
  actions: { machine: string; action: StepAction }[];
  /** Nodes still converging from earlier passes that this pass waits for. */
  waitingFor: string[];
  /** The planner's reason for not starting more in this pass. */
  waiting?: string | undefined;
  /** Nodes this pass would change or remove but holds until their drain finishes (the first pass only). */
  held?: DrainHold[] | undefined;
}

/** The drains under way when the simulation starts, and what a drain past its timeout does. */
export interface StepDrains {
  drains: readonly NodeDrain[];
  onTimeout: "Halt" | "Proceed";
}

export interface RolloutSteps {
  steps: RolloutStep[];
  /** The rollout cannot go on by itself: a failed node or a pause. */
  stopped?: { reason: "halted" | "paused"; machine?: string; detail: string } | undefined;
  /** Nodes left over when the simulation gave up (it should not happen; a guard against a loop). */
  unfinished: string[];
}

/**
 * Simulates the rollout from `input` to its end. A halted or paused
 * rollout stops at once: what follows depends on people, not on NICO.
 *
 * @example
 * ```ts
 * import { rolloutSteps } from "./steps.ts";
 * import type { Plane } from "../contract/labels.ts";
 * const node = (machine: string, plane: Plane) => ({ machine, plane, exists: true, upToDate: false, available: true, failed: false });
 * const r = rolloutSteps({
 *   nodes: [node("cp-1", "controlPlane"), node("w-1", "dataPlane"), node("w-2", "dataPlane")],
 *   departing: [], bootstrap: "cp-1", order: "WorkersFirst", maxUnavailable: 1, paused: false,

 *   endpointIsBootstrap: false, provisioning: "BootstrapFirst", firstBringUp: false, hold: undefined, releasing: [],
 *   versions: undefined,
 *   backup: undefined,
 * });
 * r.steps.map((s) => s.actions.map((a) => a.machine)); // [["w-1"], ["w-2"], ["cp-1"]]
 * ```
 */
export function rolloutSteps(input: RolloutInput, drains?: StepDrains, maxSteps = 200): RolloutSteps {
  let nodes = input.nodes.map((n) => ({ ...n }));
  let departing = input.departing.map((d) => ({ ...d }));
  const steps: RolloutStep[] = [];
  for (let index = 0; index < maxSteps; index++) {
    const planned = planRollout({ ...input, nodes, departing });
    const plan = index === 0 && drains ? holdForDrains(planned, drains.drains, drains.onTimeout) : planned;
    const held = plan.drainHeld ? { held: plan.drainHeld } : {};
    const actions = [
      ...plan.create.map((machine) => ({ machine, action: "create" as const })),
      ...plan.update.map((machine) => ({ machine, action: "update" as const })),
      ...plan.remove.map((machine) => ({ machine, action: "remove" as const })),
    ];
    const converging = [
      ...nodes.filter((n) => n.exists && !n.available && !n.failed).map((n) => n.machine),
      ...departing.filter((d) => d.deleting).map((d) => d.machine),
    ].filter((m) => !actions.some((a) => a.machine === m)).sort();
    if (plan.halted || input.paused) {
      if (actions.length || converging.length) {
        steps.push({ index, actions, waitingFor: converging, waiting: plan.waiting, ...held });
      }
      return {
        steps,
        stopped: plan.halted
          ? { reason: "halted", machine: plan.halted.machine, detail: plan.halted.detail }
          : { reason: "paused", detail: plan.waiting ?? "paused" },
        unfinished: plan.pending,
      };
    }
    const done = !plan.pending.length && !plan.removing.length && !converging.length;
    if (done) return { steps, unfinished: [] };
    steps.push({ index, actions, waitingFor: converging, waiting: plan.waiting, ...held });
    // The next pass: whatever was started or converging has finished.
    const started = new Set(actions.map((a) => a.machine));
    nodes = nodes.map((n) =>
      started.has(n.machine) || (n.exists && !n.available && !n.failed)
        ? { ...n, exists: true, upToDate: true, available: true }
        : n
    );
    departing = departing.filter((d) => !d.deleting && !started.has(d.machine));
  }
  const last = planRollout({ ...input, nodes, departing });
  return { steps, unfinished: [...last.pending, ...last.removing] };
}
