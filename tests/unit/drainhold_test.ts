/**
 * Drains as an input of the rollout (core/rollout/drainhold.ts): which nodes are
 * drained, what the plan becomes for each drain state and `onTimeout`, the
 * step-by-step simulation `nico plan` runs, and the status that records the
 * holds for it.
 */
import assert from "node:assert/strict";
import { drainTargets, holdForDrains, type NodeDrain } from "../../core/rollout/drainhold.ts";
import type { PlanNode, RolloutPlan } from "../../core/rollout/plan.ts";
import { rolloutSteps } from "../../core/rollout/steps.ts";
import { computeStatus } from "../../core/status/cluster.ts";
import { QUIET } from "../rollout_input_kit.ts";

const WAIT = "draining w-1: eviction refused for apps/web-1 (PodDisruptionBudget apps/web: needs 1 healthy)";
const LATE = "draining w-1 took longer than 10m (spec.rollout.drain.timeout): eviction refused for apps/web-1";

/** A pass that updates w-1 and removes w-9, with the planner's own reason for not doing more. */
function plan(over: Partial<RolloutPlan> = {}): RolloutPlan {
  return {
    create: [],
    update: ["w-1"],
    remove: ["w-9"],
    pending: ["w-1", "w-2"],
    removing: ["w-9"],
    updating: [],
    waiting: "at most 1 worker(s) unavailable at once",
    ...over,
  };
}

const drain = (machine: string, state: NodeDrain["state"], message = WAIT): NodeDrain => ({ machine, state, message });

interface Row {
  name: string;
  drains: NodeDrain[];
  onTimeout: "Halt" | "Proceed";
  over?: Partial<RolloutPlan>;
  update: string[];
  remove: string[];
  waiting: string | undefined;
  halted?: { machine: string; detail: string };
  held: string[];
}

const ROWS: Row[] = [
  {
    name: "no drain: the plan as the planner made it",
    drains: [],
    onTimeout: "Halt",
    update: ["w-1"],
    remove: ["w-9"],
    waiting: "at most 1 worker(s) unavailable at once",
    held: [],
  },
  {
    name: "Drained: the node goes ahead",
    drains: [drain("w-1", "Drained", "drained w-1")],
    onTimeout: "Halt",
    update: ["w-1"],
    remove: ["w-9"],
    waiting: "at most 1 worker(s) unavailable at once",
    held: [],
  },
  {
    name: "Draining: held, and what it waits for leads the reason",
    drains: [drain("w-1", "Draining")],
    onTimeout: "Halt",
    update: [],
    remove: ["w-9"],
    waiting: `${WAIT}; at most 1 worker(s) unavailable at once`,
    held: ["w-1"],
  },
  {
    name: "Draining with no other reason: the drain alone",
    drains: [drain("w-1", "Draining")],
    onTimeout: "Halt",
    over: { waiting: undefined },
    update: [],
    remove: ["w-9"],
    waiting: WAIT,
    held: ["w-1"],
  },
  {
    name: "a departing node still draining is not removed",
    drains: [drain("w-9", "Draining", "draining w-9: waiting for apps/db-0 to terminate")],
    onTimeout: "Halt",
    update: ["w-1"],
    remove: [],
    waiting: "draining w-9: waiting for apps/db-0 to terminate; at most 1 worker(s) unavailable at once",
    held: ["w-9"],
  },
  {
    name: "TimedOut with Halt: held, and the rollout halts there",
    drains: [drain("w-1", "TimedOut", LATE)],
    onTimeout: "Halt",
    update: [],
    remove: ["w-9"],
    waiting: "at most 1 worker(s) unavailable at once",
    halted: { machine: "w-1", detail: `DrainTimeout: ${LATE}` },
    held: ["w-1"],
  },
  {
    name: "TimedOut with Halt on an already halted plan: the first halt stays",
    drains: [drain("w-1", "TimedOut", LATE)],
    onTimeout: "Halt",
    over: { halted: { machine: "cp-1", detail: "ApplyFailed" } },
    update: [],
    remove: ["w-9"],
    waiting: "at most 1 worker(s) unavailable at once",
    halted: { machine: "cp-1", detail: "ApplyFailed" },
    held: ["w-1"],
  },
  {
    name: "TimedOut with Proceed: the node is updated anyway",
    drains: [drain("w-1", "TimedOut", LATE)],
    onTimeout: "Proceed",
    update: ["w-1"],
    remove: ["w-9"],
    waiting: "at most 1 worker(s) unavailable at once",
    held: [],
  },
  {
    name: "a drain of a node the plan does not change holds nothing",
    drains: [drain("w-2", "Draining", "draining w-2: evicted 1 pod(s)"), drain("w-3", "TimedOut", LATE)],
    onTimeout: "Halt",
    update: ["w-1"],
    remove: ["w-9"],
    waiting: "at most 1 worker(s) unavailable at once",
    held: [],
  },
];

for (const row of ROWS) {
  Deno.test(`holdForDrains: ${row.name}`, () => {
    const given = plan(row.over);
    const before = structuredClone(given);
    const got = holdForDrains(given, row.drains, row.onTimeout);
    assert.deepEqual(given, before, "the planner's plan is not modified");
    assert.deepEqual(got.update, row.update);
    assert.deepEqual(got.remove, row.remove);
    assert.equal(got.waiting, row.waiting);
    assert.deepEqual(got.halted, row.halted ?? row.over?.halted);
    assert.deepEqual((got.drainHeld ?? []).map((h) => h.machine), row.held);
    for (const h of got.drainHeld ?? []) {
      assert.deepEqual(h, row.drains.find((d) => d.machine === h.machine), "each hold says what its drain said");
    }
    assert.deepEqual([got.pending, got.removing], [given.pending, given.removing], "the rest of the plan stays");
  });
}

Deno.test("drainTargets: nodes whose Node is not Ready are not drained; a new node has nothing to drain", () => {
  const ready = new Map([["w-1", true], ["w-2", false], ["w-9", true]]);
  const t = drainTargets(
    { update: ["w-1", "w-2", "w-3"], remove: ["w-9", "w-8"] },
    new Set(["w-1", "w-2", "w-9", "w-8"]),
    (m) => ready.get(m) === true,
  );
  assert.deepEqual(t.touched, ["w-1", "w-2", "w-9", "w-8"], "every changed or leaving node stays cordoned");
  assert.deepEqual(t.drain, ["w-1", "w-9"], "w-2 and w-8 are not Ready (w-8 has no Node); w-3 is not configured yet");
});

const worker = (machine: string): PlanNode => ({
  machine,
  plane: "dataPlane",
  exists: true,
  upToDate: false,
  available: true,
  failed: false,
});
const INPUT = {
  nodes: [{ ...worker("cp-1"), plane: "controlPlane" as const }, worker("w-1"), worker("w-2")],
  ...QUIET,
  departing: [],
  bootstrap: "cp-1",
  order: "WorkersFirst" as const,
  maxUnavailable: 1,
  paused: false,
};

Deno.test("rolloutSteps: a drain holds its node in the first pass only, then the rollout goes on", () => {
  const r = rolloutSteps(INPUT, { drains: [drain("w-1", "Draining")], onTimeout: "Halt" });
  assert.equal(r.stopped, undefined);
  assert.deepEqual(r.steps.map((s) => s.actions.map((a) => a.machine)), [[], ["w-1"], ["w-2"], ["cp-1"]]);
  assert.deepEqual(r.steps[0]!.held, [drain("w-1", "Draining")]);
  assert.match(r.steps[0]!.waiting!, /^draining w-1: eviction refused/);
  assert.equal(r.steps[1]!.held, undefined);
  assert.deepEqual(
    rolloutSteps(INPUT).steps.map((s) => s.actions.map((a) => a.machine)),
    [["w-1"], ["w-2"], ["cp-1"]],
    "without the drain",
  );
});

Deno.test("rolloutSteps: a drain past its timeout halts the simulation (Halt) or does not (Proceed)", () => {
  const halted = rolloutSteps(INPUT, { drains: [drain("w-1", "TimedOut", LATE)], onTimeout: "Halt" });
  assert.deepEqual(halted.stopped, { reason: "halted", machine: "w-1", detail: `DrainTimeout: ${LATE}` });
  assert.deepEqual(halted.unfinished, ["w-1", "w-2", "cp-1"]);
  const proceeds = rolloutSteps(INPUT, { drains: [drain("w-1", "TimedOut", LATE)], onTimeout: "Proceed" });
  assert.equal(proceeds.stopped, undefined);
  assert.deepEqual(proceeds.steps[0]!.actions.map((a) => a.machine), ["w-1"]);
});

Deno.test("the status records the drain holds of the pass, and nothing when none holds", () => {
  const plane = (members: string[]) => ({
    members,
    wanted: members.length,
    shortfall: 0,
    mode: "explicit" as const,
    selector: "",
  });
  const status = (p: RolloutPlan) =>
    computeStatus({
      generation: 1,
      previous: undefined,
      deleting: false,
      selection: { controlPlane: plane(["cp-1"]), dataPlane: plane([]), problems: [] },
      nodes: [{
        machine: "cp-1",
        plane: "controlPlane",
        state: "Ready",
        reason: "Applied",
        detail: "",
        upToDate: false,
      }],
      bootstrap: "cp-1",
      endpoint: undefined,
      kubeconfigSecret: "c-kubeconfig",
      rollout: { plan: p, paused: false, specHash: "h", controlPlaneSize: 1 },
      now: new Date("2026-01-01T00:00:00Z"),
    });
  const held = holdForDrains(plan(), [drain("w-1", "Draining")], "Halt");
  assert.deepEqual(status(held).rollout?.draining, [{ node: "w-1", state: "Draining", message: WAIT }]);
  assert.equal(status(plan()).rollout?.draining, undefined);
  assert.ok(!("draining" in status(plan()).rollout!), "no empty list: an old status reads the same");
});
