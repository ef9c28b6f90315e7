/**
 * The planner's inputs, each in a fast table, as the reconciler builds them:
 * node reports (every state the readiness model has) go through
 * `planNodeOf` into `planRollout`. The slow scenarios cover these too
 * (quorum while a node joins, a halted rollout, pause, a held bootstrap
 * node, a workload API that cannot be read); here a wrong view of one
 * input fails in milliseconds.
 */
import assert from "node:assert/strict";
import { planNodeOf, planRollout, type RolloutInput } from "../../core/rollout/plan.ts";
import type { NodeState } from "../../core/nodes/readiness.ts";
import { QUIET } from "../rollout_input_kit.ts";

type Plane = "controlPlane" | "dataPlane";

/** What the planner may assume of a node in each state; a new state fails to type-check until it has a row. */
const VIEW: Record<NodeState, { exists: boolean; available: boolean; failed: boolean }> = {
  Ready: { exists: true, available: true, failed: false },
  Pending: { exists: false, available: false, failed: false },
  Applying: { exists: true, available: false, failed: false },
  Joining: { exists: true, available: false, failed: false },
  Blocked: { exists: true, available: false, failed: false },
  Failed: { exists: true, available: false, failed: true },
  Removing: { exists: true, available: false, failed: false },
};
const STATES = Object.keys(VIEW) as NodeState[];

const report = (machine: string, plane: Plane, state: NodeState, upToDate = true) => ({
  machine,
  plane,
  state,
  upToDate,
  detail: `${state} (test)`,
});

/** Three control-plane nodes and two workers; `cp-1` is the bootstrap node. */
function input(over: Partial<RolloutInput> & { reports: ReturnType<typeof report>[] }): RolloutInput {
  const { reports, ...rest } = over;
  return {
    nodes: reports.map(planNodeOf),
    ...QUIET,
    departing: [],
    bootstrap: "cp-1",
    order: "WorkersFirst",
    maxUnavailable: 1,
    paused: false,
    ...rest,
  };
}

Deno.test("planNodeOf: what each node state lets the planner assume", () => {
  for (const state of STATES) {
    const n = planNodeOf(report("m", "dataPlane", state));
    assert.deepEqual({ exists: n.exists, available: n.available, failed: n.failed }, VIEW[state], state);
  }
});

Deno.test("quorum: a second control-plane node is updated only while the first is Ready", async (t) => {
  for (const state of STATES.filter((s) => s !== "Pending")) {
    await t.step(`cp-2 ${state}`, () => {
      const plan = planRollout(input({
        reports: [
          report("cp-1", "controlPlane", "Ready"),
          report("cp-2", "controlPlane", state),
          report("cp-3", "controlPlane", "Ready", false),
          report("w-1", "dataPlane", "Ready"),
        ],
      }));
      if (state === "Ready") assert.deepEqual(plan.update, ["cp-3"]);
      else {
        assert.deepEqual(plan.update, [], `cp-3 taken down while cp-2 is ${state}`);
        assert.match(plan.waiting ?? "", state === "Failed" ? /halted at cp-2/ : /waiting for cp-2/);
      }
    });
  }
});

Deno.test("the worker budget counts every worker that is not Ready as unavailable", async (t) => {
  for (const state of STATES.filter((s) => s !== "Pending" && s !== "Failed")) {
    await t.step(`w-1 ${state}`, () => {
      const plan = planRollout(input({
        reports: [
          report("cp-1", "controlPlane", "Ready"),
          report("w-1", "dataPlane", state),
          report("w-2", "dataPlane", "Ready", false),
        ],
      }));
      assert.deepEqual(plan.update, state === "Ready" ? ["w-2"] : [], `w-2 with w-1 ${state} and maxUnavailable 1`);
    });
  }
});

Deno.test("the other inputs: paused, a failed node, a hold, a departing bootstrap that is the endpoint", async (t) => {
  const rolling = [
    report("cp-1", "controlPlane", "Ready"),
    report("w-1", "dataPlane", "Ready", false),
    report("w-2", "dataPlane", "Ready", false),
  ];
  const cases: { name: string; input: RolloutInput; update: string[]; remove?: string[]; waiting: RegExp }[] = [
    { name: "rolling", input: input({ reports: rolling }), update: ["w-1"], waiting: /at most 1 worker/ },
    { name: "paused", input: input({ reports: rolling, paused: true }), update: [], waiting: /paused/ },
    {
      name: "a failed worker halts the rest",
      input: input({ reports: [...rolling.slice(0, 2), report("w-3", "dataPlane", "Failed")] }),
      update: [],
      waiting: /halted at w-3/,
    },
    {
      name: "a hold (workload API unreadable): nothing healthy is touched",
      input: input({ reports: rolling, hold: "the workload API cannot be read" }),
      update: [],
      waiting: /rollout waits: the workload API cannot be read/,
    },
    {
      name: "a departing bootstrap that is the API endpoint is held",
      input: input({
        reports: [report("cp-2", "controlPlane", "Ready")],
        ...QUIET,
        departing: [{ machine: "cp-1", plane: "controlPlane", deleting: false }],
        endpointIsBootstrap: true,
      }),
      update: [],
      remove: [],
      waiting: /bootstrap node cp-1 is the API endpoint/,
    },
    {
      name: "with a controlPlaneEndpoint it may leave",
      input: input({
        reports: [report("cp-2", "controlPlane", "Ready")],
        ...QUIET,
        departing: [{ machine: "cp-1", plane: "controlPlane", deleting: false }],
        endpointIsBootstrap: false,
      }),
      update: [],
      remove: ["cp-1"],
      waiting: /^$/,
    },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      const plan = planRollout(c.input);
      assert.deepEqual(plan.update, c.update);
      if (c.remove) assert.deepEqual(plan.remove, c.remove);
      assert.match(plan.waiting ?? "", c.waiting);
    });
  }
});
