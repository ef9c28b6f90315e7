/**
 * etcd as an input of the rollout, the way drains are (core/rollout/drainhold.ts):
 * which of a plan's control-plane nodes change or leave in this pass, for
 * core/etcd/membership.ts to judge, and what the plan becomes while etcd holds
 * some of them (a leadership move first, a leaving node's member removed first, a
 * step that would leave fewer healthy members than a majority). Pure;
 * table-tested.
 *
 * @module
 */
import type { EtcdHold } from "../etcd/membership.ts";
import type { RolloutPlan } from "./plan.ts";
export type { EtcdHold } from "../etcd/membership.ts";

/**
 * The control-plane nodes of a plan that etcd cares about in this pass: updates of configurations that exist
 * (a member restarts for the switch), removals (a member leaves), creations (a member joins), and the configured
 * nodes that leave the control plane now or later (`removing`: a departing node's dead member goes before a new one
 * joins).
 *
 * @example
 * ```ts
 * import { etcdTargets } from "./etcdhold.ts";
 * const plan = { create: ["cp-4"], update: ["cp-1", "w-1"], remove: ["cp-3"], pending: [], removing: ["cp-3"], updating: [] };
 * etcdTargets(plan, new Set(["cp-1", "cp-3", "cp-4"]), new Set(["cp-1", "cp-3"]));
 * // { changing: ["cp-1"], removing: ["cp-3"], creating: ["cp-4"], departing: ["cp-3"] }
 * ```
 */
export function etcdTargets(
  plan: Pick<RolloutPlan, "create" | "update" | "remove" | "removing" | "pending">,
  controlPlane: ReadonlySet<string>,
  configured: ReadonlySet<string>,
): { changing: string[]; removing: string[]; creating: string[]; departing: string[] } {
  return {
    changing: plan.update.filter((m) => controlPlane.has(m) && configured.has(m)),
    removing: plan.remove.filter((m) => controlPlane.has(m)),
    // Every control-plane node still to be created, in this pass or later: etcd holds them all alike.
    creating: [...new Set([...plan.create, ...plan.pending])].filter((m) => controlPlane.has(m) && !configured.has(m)),
    departing: plan.removing.filter((m) => controlPlane.has(m) && configured.has(m)),
  };
}

/**
 * The plan once etcd's holds are known: a held node is neither created, updated nor removed in this pass, what it waits for
 * leads `waiting`, and `etcdHeld` lists every held node (status and `nico plan`), a node still to be created that the
 * planner did not pick in this pass included. The plan given is not modified.
 *
 * @example
 * ```ts
 * import { holdForEtcd } from "./etcdhold.ts";
 * const plan = { create: [], update: ["cp-1"], remove: [], pending: ["cp-1"], removing: [], updating: [] };
 * const held = holdForEtcd(plan, [{ machine: "cp-1", why: "leadership moves off its etcd member cp-1 (1) first" }]);
 * held.update; // []
 * held.waiting; // "cp-1: leadership moves off its etcd member cp-1 (1) first"
 * ```
 */
export function holdForEtcd(plan: RolloutPlan, holds: readonly EtcdHold[]): RolloutPlan {
  const changing = new Set([...plan.create, ...plan.update, ...plan.remove, ...plan.pending]);
  const held = holds.filter((h, k) => changing.has(h.machine) && holds.findIndex((x) => x.machine === h.machine) === k);
  if (!held.length) return plan;
  const out: RolloutPlan = { ...plan, etcdHeld: held.map((h) => ({ ...h })) };
  out.create = plan.create.filter((m) => !held.some((h) => h.machine === m));
  out.update = plan.update.filter((m) => !held.some((h) => h.machine === m));
  out.remove = plan.remove.filter((m) => !held.some((h) => h.machine === m));
  out.waiting = [...held.map((h) => `${h.machine}: ${h.why}`), plan.waiting].filter(Boolean).join("; ");
  return out;
}

/** How long a control-plane switch waits for etcd's members to be seen again before it goes anyway (a fix). */
export const UNSEEN_SWITCH_WAIT_MS = 30_000;

/**
 * The holds while etcd runs but NICO cannot see its members (no member answered the last look, or its answer is
 * stale: a leader restarting, an election, a slow look): no control-plane node leaves (removing a configuration
 * stops its member, which may still vote; its member is removed first, and that needs the list) and none joins (its
 * member is added through the list). Where the last look saw more than one voter, a switch waits too, while
 * `unseenForMs` is under {@link UNSEEN_SWITCH_WAIT_MS} (leadership is moved off a node before its switch, and that
 * needs the list); past it etcd is down rather than unseen, and a fix for its control plane must go out. A single
 * voter has no one to hand leadership to: its switch never waits.
 *
 * @example
 * ```ts
 * import { unseenHolds } from "./etcdhold.ts";
 * const t = { changing: ["cp-1"], removing: ["cp-3"], creating: [] };
 * unseenHolds(t, "no member answers", { unseenForMs: 60_000, voters: 3 });
 * // [{ machine: "cp-3", why: "NICO cannot see etcd's members (no member answers): it leaves once it can" }]
 * unseenHolds(t, "no member answers", { unseenForMs: 2_000, voters: 3 }).map((h) => h.machine); // ["cp-3", "cp-1"]
 * ```
 */
export function unseenHolds(
  t: { changing: string[]; removing: string[]; creating: string[] },
  why: string,
  seen: { unseenForMs: number; voters: number },
): EtcdHold[] {
  const wait = (machine: string, what: string) => ({
    machine,
    why: `NICO cannot see etcd's members (${why}): it ${what} once it can`,
  });
  return [
    ...t.removing.map((m) => wait(m, "leaves")),
    ...t.creating.map((m) => wait(m, "joins")),
    ...(seen.voters > 1 && seen.unseenForMs < UNSEEN_SWITCH_WAIT_MS ? t.changing.map((m) => wait(m, "switches")) : []),
  ];
}
