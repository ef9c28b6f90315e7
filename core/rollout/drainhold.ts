/**
 * Drains as an input of the rollout: which nodes of a plan are drained
 * first, and what the plan becomes while their drains run. The reconciler
 * does the evictions and feeds their progress back here; `nico plan` feeds
 * back the drains the status recorded, so both tell the same story. Pure;
 * table-tested.
 *
 * @module
 */
import type { DrainHold, RolloutPlan } from "./plan.ts";
export type { DrainHold } from "./plan.ts";

/** Where one node's drain stands after a pass: done, still waiting, or past `spec.rollout.drain.timeout`. */
export type DrainState = "Drained" | "Draining" | "TimedOut";

/** One node's drain, as the last drain pass left it. */
export interface NodeDrain {
  machine: string;
  state: DrainState;
  /** What the drain did and waits for (`draining w-1: eviction refused for …`). */
  message: string;
}

/**
 * The nodes a plan changes or removes in this pass, and of those the ones to drain first: a node is drained
 * before an update of a configuration that exists (a new node has nothing to drain) and before it leaves,
 * and only while its Node is Ready (nothing can leave a NotReady node gracefully).
 *
 * @example
 * ```ts
 * import { drainTargets } from "./drainhold.ts";
 * const plan = { create: ["w-3"], update: ["w-1", "w-2"], remove: ["w-9"], pending: [], removing: [], updating: [] };
 * const t = drainTargets(plan, new Set(["w-1", "w-2", "w-9"]), (m) => m !== "w-2");
 * t.touched; // ["w-1", "w-2", "w-9"]
 * t.drain; // ["w-1", "w-9"]: w-2's Node is not Ready
 * ```
 */
export function drainTargets(
  plan: Pick<RolloutPlan, "update" | "remove">,
  configured: ReadonlySet<string>,
  nodeReady: (machine: string) => boolean,
): { touched: string[]; drain: string[] } {
  const touched = [...plan.update.filter((m) => configured.has(m)), ...plan.remove];
  return { touched, drain: touched.filter(nodeReady) };
}

/**
 * The plan once the drains of its nodes are known: a node whose drain is still running, or ran past its
 * timeout with `onTimeout: Halt`, is neither updated nor removed in this pass (the rollout halts at the first
 * such timeout); what a held drain waits for leads the plan's `waiting`. A drained node, and one past its
 * timeout with `onTimeout: Proceed`, goes ahead. `drainHeld` lists the held nodes, for the status and
 * `nico plan`. Drains of nodes the plan does not change are ignored. The plan given is not modified.
 *
 * @example
 * ```ts
 * import { holdForDrains } from "./drainhold.ts";
 * const plan = { create: [], update: ["w-1"], remove: [], pending: ["w-1", "w-2"], removing: [], updating: [],
 *   waiting: "at most 1 worker(s) unavailable at once" };
 * const held = holdForDrains(plan, [{ machine: "w-1", state: "Draining", message: "draining w-1: eviction refused" }], "Halt");
 * held.update; // []
 * held.waiting; // "draining w-1: eviction refused; at most 1 worker(s) unavailable at once"
 * held.drainHeld; // [{ machine: "w-1", state: "Draining", message: "draining w-1: eviction refused" }]
 * ```
 */
export function holdForDrains(
  plan: RolloutPlan,
  drains: readonly NodeDrain[],
  onTimeout: "Halt" | "Proceed",
): RolloutPlan {
  const changing = new Set([...plan.update, ...plan.remove]);
  const held: DrainHold[] = [];
  for (const d of drains) {
    if (!changing.has(d.machine) || d.state === "Drained") continue;
    if (d.state === "TimedOut" && onTimeout === "Proceed") continue;
    if (held.some((h) => h.machine === d.machine)) continue;
    held.push({ machine: d.machine, state: d.state, message: d.message });
  }
  if (!held.length) return plan;
  const out: RolloutPlan = { ...plan, drainHeld: held };
  out.update = plan.update.filter((m) => !held.some((h) => h.machine === m));
  out.remove = plan.remove.filter((m) => !held.some((h) => h.machine === m));
  const timedOut = held.find((h) => h.state === "TimedOut");
  if (timedOut && !out.halted) out.halted = { machine: timedOut.machine, detail: `DrainTimeout: ${timedOut.message}` };
  const waiting = held.filter((h) => h.state === "Draining").map((h) => h.message);
  if (waiting.length) out.waiting = [...waiting, plan.waiting].filter(Boolean).join("; ");
  return out;
}
