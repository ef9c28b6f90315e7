/**
 * The condition registry (crds/conditions/) holds together: what a reason
 * means agrees with its type's polarity, every stalling reason comes with
 * `Stalled`, and the CLI judges NICO's conditions by it and NIO's by status.
 */
import assert from "node:assert/strict";
import {
  type ConditionInput,
  CONDITIONS,
  hasReason,
  reasonSpec,
  registeredReasons,
  stalls,
  typeSpec,
} from "../../crds/conditions/mod.ts";
import { condition } from "../../core/status/conditions.ts";
import { isAbnormal } from "../../cli/observe.ts";

Deno.test("a fine reason is written with its type's normal status (True when positive, False when negative)", () => {
  const wrong = registeredReasons().filter(({ type, spec }) => {
    const normal = CONDITIONS[type].polarity === "positive" ? "True" : "False";
    return spec.meaning === "fine" && spec.status !== normal;
  });
  assert.deepEqual(wrong.map((r) => `${r.type} ${r.reason}`), []);
});

Deno.test("every reason that stalls in Ready is a reason of Stalled=True, and every Stalled=True reason stalls", () => {
  const all = registeredReasons();
  const readyStalls = all.filter((r) => r.type === "Ready" && r.spec.meaning === "stalled").map((r) => r.reason);
  const stalledTrue = all.filter((r) => r.type === "Stalled" && r.spec.status === "True");
  assert.deepEqual(readyStalls.filter((r) => !stalledTrue.some((s) => s.reason === r)), []);
  assert.ok(stalledTrue.every((r) => r.spec.meaning === "stalled"));
  assert.ok(stalls("InvalidSpec") && stalls("RefResolutionFailed") && !stalls("NoControlPlane"));
  assert.ok(!stalls("ReconcileError"), "an error NICO did not foresee is retried, not stalled");
});

Deno.test("the registry is looked up by own keys only, and by the status a reason is written with", () => {
  assert.equal(typeSpec("constructor"), undefined);
  assert.equal(reasonSpec("Ready", "False", "toString"), undefined);
  assert.equal(reasonSpec("Ready", "True", "NodeFailed"), undefined);
  assert.equal(reasonSpec("Ready", "False", "NodeFailed")?.meaning, "stalled");
});

Deno.test("isAbnormal: NICO's conditions by the registry's meaning, NIO's and unknown reasons by their status", async (t) => {
  const cases: [string, string, string | undefined, boolean][] = [
    ["RollingOut", "True", "RollingOut", true],
    ["RollingOut", "False", "RolloutComplete", false],
    ["RollingOut", "False", "RolloutStalled", true],
    ["Remediating", "False", "QuorumWouldBeLost", true],
    ["Remediating", "False", "NoUnhealthyNodes", false],
    ["MachinesReleasing", "True", "WaitingForNIO", true],
    ["Reconciling", "False", "Stalled", false],
    ["NodesHealthy", "Unknown", "NoKubeconfig", true],
    ["DataPlaneReady", "True", "NoWorkers", false],
    // NIO's conditions, and reasons NICO does not write: the status says it.
    ["Degraded", "True", "ApplyFailed", true],
    ["Applied", "True", "Success", false],
    ["Stalled", "True", "ApplyFailed", true],
    ["Ready", "True", "Converged", false],
    ["Reconciling", "False", undefined, false],
  ];
  for (const [type, status, reason, want] of cases) {
    await t.step(`${type}=${status} ${reason ?? "(no reason)"}`, () => {
      assert.equal(isAbnormal({ type, status, reason }), want);
    });
  }
});

Deno.test("a reason the registry does not list, or lists with another status, does not compile", () => {
  // Each line below is a type error `deno task check` insists on (an unused @ts-expect-error fails it).
  // @ts-expect-error: no such reason of Ready
  const unknown = () => condition("Ready", "False", "NoSuchReason", "");
  // @ts-expect-error: WaitingForWorkers is written with status False
  const otherStatus = () => condition("Ready", "True", "WaitingForWorkers", "");
  // @ts-expect-error: no such condition type
  const unknownType = () => condition("Readyy", "True", "ClusterReady", "");
  // @ts-expect-error: a literal condition is checked too
  const literal: ConditionInput = { type: "Stalled", status: "True", reason: "Boom", message: "" };
  // @ts-expect-error: and so is a reader's match
  const misspelt = hasReason({ type: "RollingOut", reason: "x" }, "RollingOut", "RolloutStaled");
  assert.ok([unknown, otherStatus, unknownType, literal, misspelt].length === 5);
  assert.deepEqual(condition("Ready", "False", "WaitingForWorkers", "1/2 worker machines ready"), {
    type: "Ready",
    status: "False",
    reason: "WaitingForWorkers",
    message: "1/2 worker machines ready",
  });
});
