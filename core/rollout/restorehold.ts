/**
 * A restore of etcd as the rollout's master while it runs (core/etcd/restore.ts): the plan of the pass is the
 * restore's own, so every other change is held. Only the control-plane nodes whose restore part changes are written
 * (created when they have no configuration yet: a cluster brought up from a backup), one step of the restore at a
 * time; nothing is removed, no worker is touched. Pure; table-tested (tests/unit/restore_plan_test.ts); the
 * controller follows it while a restore runs (controllers/cluster/phases/restore.ts).
 *
 * @module
 */
import type { RestoreNode, RestoreRole } from "../etcd/restore.ts";
import type { RolloutPlan } from "./plan.ts";

/**
 * The rollout plan while a restore runs: `roles` are the parts the restore asks for now (the planner's
 * `RestorePlan.roles`), `nodes` the control-plane nodes as they are.
 *
 * @example
 * ```ts
 * import { restoreRollout } from "./restorehold.ts";
 * const node = (name: string) => ({ name, configured: true, applied: true, member: false });
 * const plan = restoreRollout("r1", new Map([["cp-1", "restore" as const]]), [node("cp-1"), node("cp-2")]);
 * [plan.update, plan.create, plan.remove]; // [["cp-1"], [], []]
 * ```
 */
export function restoreRollout(
  requestId: string,
  roles: ReadonlyMap<string, RestoreRole>,
  nodes: readonly RestoreNode[],
): RolloutPlan {
  const create: string[] = [];
  const update: string[] = [];
  for (const [name, role] of roles) {
    const n = nodes.find((x) => x.name === name);
    if (!n?.configured) create.push(name);
    else if (n.role?.role !== role || n.role.requestId !== requestId) update.push(name);
  }
  const updating = nodes.filter((n) => roles.has(n.name) && n.configured && !n.applied).map((n) => n.name);
  const held = nodes.filter((n) => !roles.has(n.name)).map((n) => n.name);
  const waiting = `a restore of etcd (request ${requestId}) runs: every other change is held` +
    (held.length ? `; ${held.join(", ")} wait for their turn` : "");
  return { create, update, remove: [], pending: [...create, ...update], removing: [], updating, waiting };
}

/**
 * The plan of a cluster that was to come up from a backup whose restore did not succeed: nothing is created,
 * every node waits, and `waiting` says why.
 *
 * @example
 * ```ts
 * import { heldForRestore } from "./restorehold.ts";
 * const plan = heldForRestore("restore r1 ended Refused", ["cp-1"]);
 * [plan.create, plan.pending, plan.waiting]; // [[], ["cp-1"], "restore r1 ended Refused"]
 * ```
 */
export function heldForRestore(why: string, members: readonly string[]): RolloutPlan {
  return { create: [], update: [], remove: [], pending: [...members], removing: [], updating: [], waiting: why };
}
