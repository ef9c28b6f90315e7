/**
 * A control-plane scale-down orders its switches and removals so that etcd
 * never has fewer healthy members than a majority: a staying node switches
 * while three members remain, and with two left the leaver goes first. The
 * rules' rows, then whole scale-downs (3 → 1, 3 → 2, 5 → 3, 5 → 1, 2 → 1,
 * with and without workers, both orders) played pass by pass through the
 * real planner, counting the members at every switch.
 */
import assert from "node:assert/strict";
import { controlPlaneLeavesKeepingQuorum, controlPlaneOneAtATime } from "../../core/rollout/rules.ts";
import { planRollout } from "../../core/rollout/plan.ts";
import type { PlanNode, RolloutInput, RolloutOrder } from "../../core/rollout/types.ts";
import { input, leaving, n, outdated, type Row, ruleOutcome } from "../rollout_rules_kit.ts";
import { QUIET } from "../rollout_input_kit.ts";

/** Only cp-1 stays (and the workers): 3 → 1. */
const only = (nodes: PlanNode[], o: Partial<RolloutInput>): RolloutInput => ({ ...input([], o), nodes });

const rows: Row[] = [
  {
    rule: controlPlaneLeavesKeepingQuorum,
    name: "3 → 1: no removal while the staying node has its switch to come (it switches with three members)",
    input: only([n("cp-1", outdated), n("w-1")], { departing: [leaving("cp-2"), leaving("cp-3")] }),
    want: {
      answer: "pass",
      reasons: [
        "control-plane removal of cp-2 waits until cp-1 switched (with two etcd members left, a switch would cost quorum)",
      ],
    },
  },
  {
    rule: controlPlaneLeavesKeepingQuorum,
    name: "…once it switched, the leavers go",
    input: only([n("cp-1"), n("w-1")], { departing: [leaving("cp-2"), leaving("cp-3")] }),
    want: { answer: "pass", remove: ["cp-2"] },
  },
  {
    rule: controlPlaneLeavesKeepingQuorum,
    name: "…a dead leaver's member goes first all the same (it costs no vote)",
    input: only([n("cp-1", outdated), n("w-1")], { departing: [leaving("cp-2", { down: true }), leaving("cp-3")] }),
    want: { answer: "pass", remove: ["cp-2"] },
  },
  {
    rule: controlPlaneLeavesKeepingQuorum,
    name: "5 → 3: four members left can lose one, the removal goes",
    input: input([n("cp-1", outdated)], { departing: [leaving("cp-4"), leaving("cp-5")] }),
    want: { answer: "pass", remove: ["cp-4"] },
  },
  {
    rule: controlPlaneOneAtATime,
    name: "two members, one leaving: it leaves before the other switches",
    input: only([n("cp-1", outdated), n("w-1")], { departing: [leaving("cp-3")] }),
    want: {
      answer: "pass",
      reasons: ["control plane: cp-3 leaves before cp-1 switches (two etcd members cannot lose one)"],
    },
  },
  {
    rule: controlPlaneOneAtATime,
    name: "three members, one leaving: the staying ones switch",
    input: input([n("cp-2", outdated)], { departing: [] }),
    want: { answer: "pass", update: ["cp-2"] },
  },
];

Deno.test("the scale-down rows", async (t) => {
  for (const row of rows) {
    await t.step(`${row.rule.name}: ${row.name}`, () => {
      assert.deepEqual(ruleOutcome(row), { create: [], update: [], remove: [], reasons: [], ...row.want });
    });
  }
});

/**
 * Plays a scale-down: `from` control-plane nodes (cp-1 … cp-<from>) to the first `to`, every staying node (and
 * worker) outdated by the change. Each pass applies the plan at once (an update is a switch: the member restarts; a
 * removal takes the member away). Answers the members etcd had at each switch, and the order of the moves.
 */
function play(from: number, to: number, workers: number, order: RolloutOrder): { atSwitch: number[]; moves: string[] } {
  const cp = Array.from({ length: from }, (_, k) => `cp-${k + 1}`);
  const ws = Array.from({ length: workers }, (_, k) => `w-${k + 1}`);
  const upToDate = new Set<string>();
  let members = new Set(cp);
  const atSwitch: number[] = [];
  const moves: string[] = [];
  for (let pass = 0; pass < 50; pass++) {
    const staying = [...cp.slice(0, to), ...ws];
    const plan = planRollout({
      nodes: staying.map((m) => n(m, { upToDate: upToDate.has(m) })),
      ...QUIET,
      departing: cp.slice(to).filter((m) => members.has(m)).map((m) => leaving(m)),
      bootstrap: "cp-1",
      order,
      maxUnavailable: 1,
      paused: false,
    });
    if (!plan.update.length && !plan.remove.length) break;
    for (const m of plan.update) {
      if (m.startsWith("cp")) atSwitch.push(members.size);
      upToDate.add(m);
      moves.push(`switch ${m}`);
    }
    for (const m of plan.remove) {
      members = new Set([...members].filter((x) => x !== m));
      moves.push(`remove ${m}`);
    }
  }
  assert.ok(staying(cp, to, ws).every((m) => upToDate.has(m)), `every staying node switched: ${moves.join(", ")}`);
  assert.equal(members.size, to, `the leavers left: ${moves.join(", ")}`);
  return { atSwitch, moves };
}
const staying = (cp: string[], to: number, ws: string[]) => [...cp.slice(0, to), ...ws];

Deno.test("whole scale-downs: every switch with one member or at least three, never two", () => {
  for (const [from, to] of [[3, 1], [3, 2], [5, 3], [5, 1], [2, 1], [4, 2]] as const) {
    for (const workers of [0, 2]) {
      for (const order of ["WorkersFirst", "ControlPlaneFirst"] as const) {
        const { atSwitch, moves } = play(from, to, workers, order);
        const what = `${from} → ${to}, ${workers} workers, ${order}: ${moves.join(", ")}`;
        assert.ok(atSwitch.every((k) => k === 1 || k >= 3), what);
        if (from >= 3 && to < 3) assert.ok(atSwitch.every((k) => k >= 3), `a switch with three members: ${what}`);
      }
    }
  }
});
