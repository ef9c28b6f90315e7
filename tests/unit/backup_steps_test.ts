/**
 * stepsSince (core/rollout/backuphold.ts): since when each control-plane step has waited for a snapshot, kept
 * until the step is carried out, so a step served by a snapshot and then held by something else wants no other.
 */
import assert from "node:assert/strict";
import { backupBeforeControlPlane, stepsSince } from "../../core/rollout/backuphold.ts";
import { rolloutPass } from "../../core/rollout/rules.ts";
import type { BackupHold, RolloutPlan } from "../../core/rollout/types.ts";
import { input, n, outdated } from "../rollout_rules_kit.ts";

const plan = (o: Partial<RolloutPlan> = {}): RolloutPlan => ({
  create: [],
  update: [],
  remove: [],
  pending: [],
  removing: [],
  updating: [],
  ...o,
});
const hold = (machines: string[], state: BackupHold["state"] = "taking"): BackupHold => ({
  machines,
  state,
  message: "",
});

const ROWS: { name: string; before: [string, number][]; plan: RolloutPlan | undefined; want: [string, number][] }[] = [
  {
    name: "a step held for a snapshot now is remembered from now",
    before: [],
    plan: plan({ pending: ["cp-2"], backupHeld: hold(["cp-2"]) }),
    want: [["cp-2", 50]],
  },
  {
    name: "a step held again keeps when it was first held",
    before: [["cp-2", 10]],
    plan: plan({ pending: ["cp-2"], backupHeld: hold(["cp-2"], "failed") }),
    want: [["cp-2", 10]],
  },
  {
    name: "a step served by its snapshot and held by another rule (no backup hold) is kept while pending",
    before: [["cp-2", 10]],
    plan: plan({ pending: ["cp-2", "cp-3"], etcdHeld: [{ machine: "cp-2", why: "leadership moves off it" }] }),
    want: [["cp-2", 10]],
  },
  {
    name: "a step carried out (its node no longer pending) is forgotten",
    before: [["cp-2", 10], ["cp-3", 20]],
    plan: plan({ pending: ["cp-3"], backupHeld: hold(["cp-3"]) }),
    want: [["cp-3", 20]],
  },
  {
    name: "a leaving node's removal is kept while it leaves",
    before: [["cp-4", 10]],
    plan: plan({ removing: ["cp-4"] }),
    want: [["cp-4", 10]],
  },
  {
    name: "BestEffort skipped: not remembered anew, kept while pending",
    before: [["cp-2", 10]],
    plan: plan({ pending: ["cp-2", "cp-3"], backupHeld: hold([], "skipped") }),
    want: [["cp-2", 10]],
  },
  { name: "no plan (paused, or no rollout): nothing kept", before: [["cp-2", 10]], plan: undefined, want: [] },
];

Deno.test("stepsSince: held steps remembered until carried out", async (t) => {
  for (const row of ROWS) {
    await t.step(row.name, () => {
      const got = stepsSince(new Map(row.before), row.plan, 50);
      assert.deepEqual([...got].sort(), row.want);
    });
  }
});

Deno.test("a step served by a snapshot, then held elsewhere, is still fresh on the next pass (no second snapshot)", () => {
  const now = 1_000_000;
  const pass = (since: Map<string, number>, at: number) => {
    const backup = { policy: "Required" as const, taking: false, lastSuccess: now, since, now: at };
    const { pass, draft } = rolloutPass(input([n("cp-2", outdated)], { backup }));
    draft.plan.update = ["cp-2"];
    backupBeforeControlPlane(pass, draft);
    return draft.plan;
  };
  // The pass that held it took the snapshot at `now`; this one finds it fresh, and etcd then holds the step.
  const served = pass(new Map([["cp-2", now]]), now + 1_000);
  assert.deepEqual(served.update, ["cp-2"]);
  assert.equal(served.backupHeld, undefined);
  const kept = stepsSince(new Map([["cp-2", now]]), { ...served, update: [] }, now + 1_000);
  assert.deepEqual(pass(kept, now + 2_000).update, ["cp-2"], "the held step is still served by its snapshot");
  // What was forgotten before: a new snapshot wanted on every pass etcd held the step.
  assert.deepEqual(pass(new Map(), now + 2_000).update, [], "a forgotten step wants a snapshot again");
});
