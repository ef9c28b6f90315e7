/**
 * The planner's rule for a control-plane node that leaves because it is down (a remediated member): its
 * replacement joins first, then it leaves, and only then is another control-plane node changed (3 → 4 → 3),
 * so etcd, which still counts the dead member until its Node goes, never has a live member restarted meanwhile.
 */
import assert from "node:assert/strict";
import { type DepartingNode, type PlanNode, planRollout, type RolloutInput } from "../../core/rollout/plan.ts";
import { rolloutSteps } from "../../core/rollout/steps.ts";
import { QUIET } from "../rollout_input_kit.ts";

const cp = (machine: string, o: Partial<PlanNode> = {}): PlanNode => ({
  machine,
  plane: "controlPlane",
  exists: true,
  upToDate: false,
  available: true,
  failed: false,
  ...o,
});
const input = (nodes: PlanNode[], departing: DepartingNode[]): RolloutInput => ({
  ...QUIET,
  nodes,
  departing,
  bootstrap: "cp-1",
  order: "WorkersFirst",
  maxUnavailable: 1,
  paused: false,
});
const dead: DepartingNode = { machine: "cp-2", plane: "controlPlane", deleting: false, down: true };

Deno.test("a dead control-plane member: its replacement joins, it leaves, then the others change", async (t) => {
  const cases: { name: string; in: RolloutInput; create?: string[]; update?: string[]; remove?: string[] }[] = [
    {
      name: "the spare is created while the dead member is still there",
      in: input([cp("cp-1"), cp("cp-3"), cp("cp-4", { exists: false, available: false })], [dead]),
      create: ["cp-4"],
    },
    {
      name: "nothing else while the spare joins",
      in: input([cp("cp-1"), cp("cp-3"), cp("cp-4", { upToDate: true, available: false })], [dead]),
    },
    {
      name: "the spare is Ready: the dead member goes before any live one changes",
      in: input([cp("cp-1"), cp("cp-3"), cp("cp-4", { upToDate: true })], [dead]),
      remove: ["cp-2"],
    },
    {
      name: "while it is being removed, nothing",
      in: input([cp("cp-1"), cp("cp-3"), cp("cp-4", { upToDate: true })], [{ ...dead, deleting: true }]),
    },
    {
      name: "gone: the live members are updated, one at a time",
      in: input([cp("cp-1"), cp("cp-3"), cp("cp-4", { upToDate: true })], []),
      update: ["cp-3"],
    },
    {
      name: "a live member leaving (a scale-down) is not down: updates may come first, as before",
      in: input([cp("cp-1"), cp("cp-3"), cp("cp-4", { upToDate: true })], [{ ...dead, down: false }]),
      update: ["cp-3"],
    },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      const p = planRollout(c.in);
      assert.deepEqual([p.create, p.update, p.remove], [c.create ?? [], c.update ?? [], c.remove ?? []], p.waiting);
    });
  }
});

Deno.test("the whole replacement, step by step: 3 → 4 → 3, then the rollout of the new member list", () => {
  const r = rolloutSteps(input([cp("cp-1"), cp("cp-3"), cp("cp-4", { exists: false, available: false })], [dead]));
  const steps = r.steps.map((s) => s.actions.map((a) => `${a.action} ${a.machine}`).join(", "));
  assert.deepEqual(steps, ["create cp-4", "remove cp-2", "update cp-3", "update cp-1"]);
});
