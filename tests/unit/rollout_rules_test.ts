/**
 * Each rule of the rollout planner (core/rollout/rules.ts) on its own: given a pass, what it decides or adds.
 * A new rule is one function and at least one row here; the last test fails for a rule without a row.
 */
import assert from "node:assert/strict";
import {
  bootstrapFirst,
  controlPlaneLeavesKeepingQuorum,
  controlPlaneOneAtATime,
  failedHalts,
  LIMITS,
  newWorkersAtOnce,
  oneWorkerLeavesAtATime,
  outageHold,
  parallelFirstBringUp,
  paused,
  releasedBeforeRemovals,
  RULES,
  workersWithinBudget,
} from "../../core/rollout/rules.ts";
import { converging, input, leaving, missing, n, outdated, type Row, ruleOutcome } from "../rollout_rules_kit.ts";
import { VERSION_ROWS } from "../rollout_version_rows.ts";
import { BACKUP_ROWS } from "../rollout_backup_rows.ts";

const HOLD = "the workload API cannot be read";

const rows: Row[] = [
  {
    rule: paused,
    name: "paused: decides, nothing moves",
    input: input([n("w-1", outdated)], { paused: true }),
    want: { answer: "decided", reasons: ["paused: no child object is changed"] },
  },
  { rule: paused, name: "not paused: passes", input: input([n("w-1", outdated)]), want: { answer: "pass" } },
  {
    rule: parallelFirstBringUp,
    name: "first bring-up, Parallel: every missing node at once",
    input: input([n("cp-1", missing), n("cp-2", missing), n("w-1", missing)], {
      provisioning: "Parallel",
      firstBringUp: true,
    }),
    want: {
      answer: "decided",
      create: ["cp-1", "cp-2", "w-1"],
      reasons: ["creating 3 node(s) at once (Parallel provisioning)"],
    },
  },
  {
    rule: parallelFirstBringUp,
    name: "…not once a node failed",
    input: input([n("cp-1", { failed: true, available: false }), n("w-1", missing)], {
      provisioning: "Parallel",
      firstBringUp: true,
    }),
    want: { answer: "pass" },
  },
  {
    rule: parallelFirstBringUp,
    name: "…nor after the first bring-up",
    input: input([n("w-1", missing)], { provisioning: "Parallel", firstBringUp: false }),
    want: { answer: "pass" },
  },
  {
    rule: parallelFirstBringUp,
    name: "…nor with BootstrapFirst",
    input: input([n("cp-2", missing)], { provisioning: "BootstrapFirst", firstBringUp: true }),
    want: { answer: "pass" },
  },
  {
    rule: bootstrapFirst,
    name: "the bootstrap node missing: created first and alone",
    input: input([n("cp-1", missing), n("cp-2", missing), n("w-1", missing)]),
    want: { answer: "decided", create: ["cp-1"], reasons: ["creating the bootstrap node cp-1 first"] },
  },
  {
    rule: bootstrapFirst,
    name: "the bootstrap node converging: waited for",
    input: input([n("cp-1", converging), n("w-1", outdated)]),
    want: { answer: "decided", reasons: ["waiting for the bootstrap node cp-1 (Converging)"] },
  },
  {
    rule: bootstrapFirst,
    name: "the bootstrap node failed: halts, re-rendered toward a newer spec",
    input: input([n("cp-1", { failed: true, available: false, upToDate: false, detail: "ApplyFailed" })]),
    want: {
      answer: "decided",
      update: ["cp-1"],
      halted: "cp-1",
      reasons: ["waiting for the bootstrap node cp-1 (ApplyFailed)"],
    },
  },
  { rule: bootstrapFirst, name: "the bootstrap node up: passes", input: input([]), want: { answer: "pass" } },
  {
    rule: failedHalts,
    name: "a failed node halts; only failed nodes are re-rendered",
    input: input([n("w-1", outdated), n("w-2", { failed: true, available: false, upToDate: false })]),
    want: {
      answer: "decided",
      update: ["w-2"],
      halted: "w-2",
      reasons: ["rollout halted at w-2: nothing else is touched until it recovers or the spec changes"],
    },
  },
  { rule: failedHalts, name: "nothing failed: passes", input: input([n("w-1", outdated)]), want: { answer: "pass" } },
  {
    rule: newWorkersAtOnce,
    name: "new workers are created at once",
    input: input([n("w-4", missing), n("w-5", missing), n("cp-4", missing)]),
    want: { answer: "pass", create: ["w-4", "w-5"] },
  },
  {
    rule: workersWithinBudget,
    name: "outdated workers: maxUnavailable at a time",
    input: input([n("w-1", outdated), n("w-2", outdated), n("w-3", outdated)], { maxUnavailable: 2 }),
    want: { answer: "pass", update: ["w-1", "w-2"], reasons: ["at most 2 worker(s) unavailable at once"] },
  },
  {
    rule: workersWithinBudget,
    name: "an outdated worker that is down costs nothing, and counts against the budget",
    input: input([n("w-1", { ...outdated, available: false }), n("w-2", outdated)]),
    want: { answer: "pass", update: ["w-1"], reasons: ["at most 1 worker(s) unavailable at once"] },
  },
  {
    rule: workersWithinBudget,
    name: "a worker settling after an outage is not down: it waits",
    input: input([n("w-1", { ...outdated, available: false, settling: true }), n("w-2", outdated)]),
    want: { answer: "pass", reasons: ["at most 1 worker(s) unavailable at once"] },
  },
  {
    rule: workersWithinBudget,
    name: "ControlPlaneFirst: workers wait for the control plane",
    input: input([n("cp-2", outdated), n("w-1", outdated)], { order: "ControlPlaneFirst" }),
    want: { answer: "pass", reasons: ["workers wait for the control plane (ControlPlaneFirst)"] },
  },
  {
    rule: controlPlaneOneAtATime,
    name: "one control-plane node, the bootstrap node last",
    input: input([n("cp-1", outdated), n("cp-2", outdated), n("cp-3", outdated)]),
    want: { answer: "pass", update: ["cp-2"] },
  },
  {
    rule: controlPlaneOneAtATime,
    name: "not while another control-plane node is not available",
    input: input([n("cp-2", converging), n("cp-3", outdated)]),
    want: { answer: "pass", reasons: ["control plane: waiting for cp-2 (Converging) before touching another"] },
  },
  {
    rule: controlPlaneOneAtATime,
    name: "the one control-plane node that is down, outdated: re-rendered",
    input: input([n("cp-2", { ...outdated, available: false }), n("cp-3", outdated)]),
    want: { answer: "pass", update: ["cp-2"] },
  },
  {
    // The audit's gap: with two down, re-rendering the outdated one would restart a member while another is out.
    rule: controlPlaneOneAtATime,
    name: "two of three control-plane nodes down, one outdated: nothing is re-rendered",
    input: input([n("cp-2", { ...outdated, available: false, detail: "NotReady" }), n("cp-3", converging)]),
    want: { answer: "pass", reasons: ["control plane: waiting for cp-2 (NotReady) before touching another"] },
  },
  {
    rule: controlPlaneOneAtATime,
    name: "…whichever of the two is the outdated one",
    input: input([n("cp-2", converging), n("cp-3", { ...outdated, available: false })]),
    want: { answer: "pass", reasons: ["control plane: waiting for cp-2 (Converging) before touching another"] },
  },
  {
    rule: controlPlaneOneAtATime,
    name: "not while a control-plane node is being removed",
    input: input([n("cp-2", outdated)], { departing: [leaving("cp-9", { deleting: true })] }),
    want: { answer: "pass", reasons: ["control plane: waiting for cp-9 to be removed before touching another"] },
  },
  {
    rule: controlPlaneOneAtATime,
    name: "a departing member that is down leaves before another member changes",
    input: input([n("cp-2", outdated)], { departing: [leaving("cp-9", { down: true })] }),
    want: { answer: "pass", reasons: ["control plane: cp-9 is down and leaves before another member changes"] },
  },
  {
    rule: controlPlaneOneAtATime,
    name: "…but its replacement joins first (3 → 4 → 3)",
    input: input([n("cp-4", missing)], { departing: [leaving("cp-9", { down: true })] }),
    want: { answer: "pass", create: ["cp-4"] },
  },
  {
    rule: controlPlaneOneAtATime,
    name: "WorkersFirst: waits for the workers",
    input: input([n("cp-2", outdated), n("w-1", outdated)]),
    want: { answer: "pass", reasons: ["control plane waits for the workers (WorkersFirst)"] },
  },
  {
    rule: releasedBeforeRemovals,
    name: "removals wait for the release of what left before",
    input: input([], { departing: [leaving("w-9")], releasing: ["w-8"] }),
    want: { answer: "pass", reasons: ["removals wait until w-8 left (NIO is still removing it)"] },
  },
  {
    rule: releasedBeforeRemovals,
    name: "…nothing to say while every departure is under way",
    input: input([], { departing: [leaving("w-9", { deleting: true })], releasing: ["w-8"] }),
    want: { answer: "pass" },
  },
  {
    rule: oneWorkerLeavesAtATime,
    name: "one worker leaves, by name",
    input: input([], { departing: [leaving("w-9"), leaving("w-8")] }),
    want: { answer: "pass", remove: ["w-8"] },
  },
  {
    rule: oneWorkerLeavesAtATime,
    name: "…once the one before has left",
    input: input([], { departing: [leaving("w-9"), leaving("w-8", { deleting: true })] }),
    want: { answer: "pass" },
  },
  {
    rule: oneWorkerLeavesAtATime,
    name: "…and been released",
    input: input([], { departing: [leaving("w-9")], releasing: ["w-7"] }),
    want: { answer: "pass" },
  },
  {
    rule: controlPlaneLeavesKeepingQuorum,
    name: "a control-plane node leaves while the rest are available",
    input: input([], { departing: [leaving("cp-5"), leaving("cp-4")] }),
    want: { answer: "pass", remove: ["cp-4"] },
  },
  {
    rule: controlPlaneLeavesKeepingQuorum,
    name: "…not while one of the rest is not available",
    input: input([n("cp-2", converging)], { departing: [leaving("cp-4")] }),
    want: {
      answer: "pass",
      reasons: ["control-plane removal waits until every remaining control-plane node is available"],
    },
  },
  {
    rule: controlPlaneLeavesKeepingQuorum,
    name: "…nor while a control-plane node is changed in this pass",
    input: input([], { departing: [leaving("cp-4")] }),
    before: { update: ["cp-2"] },
    want: {
      answer: "pass",
      update: ["cp-2"],
      reasons: ["control-plane removal waits until every remaining control-plane node is available"],
    },
  },
  {
    rule: controlPlaneLeavesKeepingQuorum,
    name: "the bootstrap node stays while it is the API endpoint",
    input: {
      ...input([], { departing: [leaving("cp-1")], endpointIsBootstrap: true }),
      nodes: input([]).nodes.filter((x) => x.machine !== "cp-1"),
    },
    want: {
      answer: "pass",
      held: "cp-1",
      reasons: ["bootstrap node cp-1 is the API endpoint: set spec.controlPlaneEndpoint before removing it"],
    },
  },
  {
    rule: outageHold,
    name: "workload API away: only suspects change, toward a newer spec; nothing leaves",
    input: input([n("w-1", { ...outdated, suspect: true }), n("w-2", outdated)], { hold: HOLD }),
    before: { update: ["w-1", "w-2"], remove: ["w-9"], reasons: ["at most 1 worker(s) unavailable at once"] },
    want: {
      answer: "pass",
      update: ["w-1"],
      reasons: [`rollout waits: ${HOLD}; fixing forward w-1 (changed just before the outage)`],
    },
  },
  {
    rule: outageHold,
    name: "…no control-plane suspect while another changed for the outage is not seen working",
    input: input([n("cp-2", { ...outdated, suspect: true }), n("cp-3", { available: false, changedInOutage: true })], {
      hold: HOLD,
    }),
    before: { update: ["cp-2"] },
    want: { answer: "pass", reasons: [`rollout waits: ${HOLD}`] },
  },
  {
    rule: outageHold,
    name: "…nothing to narrow while paused",
    input: input([n("w-1", outdated)], { hold: HOLD, paused: true }),
    before: { reasons: ["paused: no child object is changed"] },
    want: { answer: "pass", reasons: ["paused: no child object is changed"] },
  },
  {
    rule: outageHold,
    name: "the workload API answers: passes",
    input: input([n("w-1", outdated)]),
    before: { update: ["w-1"] },
    want: { answer: "pass", update: ["w-1"] },
  },
  ...VERSION_ROWS,
  ...BACKUP_ROWS,
];

Deno.test("each rule of the planner, on its own", async (t) => {
  for (const row of rows) {
    await t.step(`${row.rule.name}: ${row.name}`, () => {
      assert.deepEqual(ruleOutcome(row), { create: [], update: [], remove: [], reasons: [], ...row.want });
    });
  }
});

Deno.test("every rule and limit has a row in the table", () => {
  const tested = new Set(rows.map((r) => r.rule));
  assert.deepEqual([...RULES, ...LIMITS].filter((r) => !tested.has(r)).map((r) => r.name), []);
});
