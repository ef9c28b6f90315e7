/**
 * The update rules reuse the selection validation already made of the new
 * spec instead of selecting again (one `selectMachines` of the new spec per
 * UPDATE, not two).
 */
import assert from "node:assert/strict";
import { selectMachines } from "../../core/machines/selection.ts";
import { updateProblems } from "../../webhooks/update_rules.ts";
import { cluster, machine, ownedConfig } from "../../testing/objects.ts";

Deno.test("updateProblems judges the selection it is given for the new spec", () => {
  const spec = cluster({ controlPlane: { machines: ["cp-1", "cp-2", "cp-3"] } }).spec;
  const machines = ["cp-1", "cp-2", "cp-3"].map((n) => machine(n, { claim: "prod" }));
  const configurations = ["cp-1", "cp-2", "cp-3"].map((n) => ownedConfig("prod", n, "control-plane"));
  const ctx = {
    cluster: { name: "prod", namespace: "default", uid: "uid-prod" },
    oldSpec: spec,
    spec,
    machines,
    configurations,
  };
  assert.deepEqual(updateProblems(ctx), { errors: [], warnings: [] }, "the same spec removes nothing");
  // Handed a selection in which the control plane lost every Machine, the rules judge that one.
  const empty = selectMachines({ cluster: { ...ctx.cluster, spec }, machines: [], configurations: [] });
  const problems = updateProblems({ ...ctx, selection: empty }).errors;
  assert.equal(problems.length, 1);
  assert.match(problems[0]!, /removes every current control-plane Machine \(cp-1, cp-2, cp-3\)/);
});
