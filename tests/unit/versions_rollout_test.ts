/**
 * The chain and the planner together (core/rollout/upgrade.ts, core/rollout/version_rules.ts): a version
 * change goes to the control plane first whatever the order, one minor at a time, then the workers.
 */
import assert from "node:assert/strict";
import { planRollout } from "../../core/rollout/plan.ts";
import type { ChainNode } from "../../core/versions/chain.ts";
import { type UpgradeRollout, upgradeSteps } from "../../core/rollout/upgrade.ts";
import { formatVersion } from "../../core/versions/version.ts";
import { input, n, outdated } from "../rollout_rules_kit.ts";
import { QUIET } from "../rollout_input_kit.ts";

const at = (minor: number): ChainNode["reported"] => ({ minor, patch: 2 });
const node = (machine: string, minor: number): ChainNode => ({
  machine,
  plane: machine.startsWith("cp") ? "controlPlane" : "dataPlane",
  rendered: { minor },
  reported: at(minor),
});
const ROLLOUT: UpgradeRollout = {
  ...QUIET,
  departing: [],
  bootstrap: "cp-1",
  order: "WorkersFirst",
  maxUnavailable: 1,
  paused: false,
};
const lines = (steps: ReturnType<typeof upgradeSteps>) =>
  steps.map((s) =>
    `${s.plane === "controlPlane" ? "control plane" : "workers"} ${formatVersion(s.version)}: ` +
    s.nodes.join(" ")
  );

Deno.test("a 3 + 3 cluster from 1.30 to 1.33 under WorkersFirst: each minor on the control plane, then the workers", () => {
  const nodes = ["cp-1", "cp-2", "cp-3", "w-1", "w-2", "w-3"].map((m) => node(m, 30));
  assert.deepEqual(lines(upgradeSteps({ minor: 33 }, nodes, ROLLOUT)), [
    "control plane 1.31: cp-2 cp-3 cp-1",
    "control plane 1.32: cp-2 cp-3 cp-1",
    "control plane 1.33: cp-2 cp-3 cp-1",
    "workers 1.33: w-1 w-2 w-3",
  ]);
});

Deno.test("from 1.30 to 1.35: the workers catch up at 1.33 before the control plane leaves their window", () => {
  const nodes = [node("cp-1", 30), node("w-1", 30)];
  assert.deepEqual(lines(upgradeSteps({ minor: 35 }, nodes, ROLLOUT)), [
    "control plane 1.31: cp-1",
    "control plane 1.32: cp-1",
    "control plane 1.33: cp-1",
    "workers 1.33: w-1",
    "control plane 1.34: cp-1",
    "control plane 1.35: cp-1",
    "workers 1.35: w-1",
  ]);
});

Deno.test("no target, or every node there already: no step", () => {
  const nodes = [node("cp-1", 31), node("w-1", 31)];
  assert.deepEqual(upgradeSteps(undefined, nodes, ROLLOUT), []);
  assert.deepEqual(upgradeSteps({ minor: 31 }, nodes, ROLLOUT), []);
});

Deno.test("the planner under WorkersFirst takes a control-plane version change first, and lists it first", () => {
  const plan = planRollout(
    input([
      n("cp-2", { ...outdated, versionChange: true }),
      n("cp-3", { ...outdated, versionChange: true }),
      n(
        "w-1",
        outdated,
      ),
    ]),
  );
  assert.deepEqual(plan.update, ["cp-2"]);
  assert.deepEqual(plan.pending, ["cp-2", "cp-3", "w-1"]);
  assert.match(plan.waiting ?? "", /the control plane's Kubernetes version changes: it goes first/);
  // The same change without a version: the workers first, as spec.rollout.order says.
  const other = planRollout(input([n("cp-2", outdated), n("w-1", outdated)]));
  assert.deepEqual(other.update, ["w-1"]);
});
