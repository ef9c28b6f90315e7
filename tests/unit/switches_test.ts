/** The rollout witness reads the simulator's record: one window per run, even when a node has two at once. */
import assert from "node:assert/strict";
import type { SimEvent } from "../../testing/sim-nio.ts";
import { changingSwitches, maxConcurrent, switchWindows } from "../../testing/switches.ts";

const ev = (at: number, kind: SimEvent["kind"], name: string, run?: string, specHash?: string): SimEvent => ({
  at,
  kind,
  namespace: "ns",
  name,
  ...(run ? { run } : {}),
  ...(specHash ? { specHash } : {}),
});

Deno.test("switchWindows: a scheduled run beside a new commit's run on the same node ends each window on its own", () => {
  const windows = switchWindows([
    ev(1, "apply-started", "c.w-2", "manual", "new"),
    ev(2, "apply-started", "c.w-2", "tick", "new"),
    ev(3, "applied", "c.w-2", "tick", "new"),
    ev(5, "applied", "c.w-2", "manual", "new"),
    ev(6, "apply-started", "c.w-3", "manual", "new"),
    ev(7, "applied", "c.w-3", "manual", "new"),
  ]);
  assert.deepEqual(windows.map((w) => [w.config, w.start, w.end]), [["c.w-2", 1, 5], ["c.w-2", 2, 3], ["c.w-3", 6, 7]]);
  // The tick ran what the manual run was running: not a change of its own; w-3 started after w-2 ended.
  const changing = changingSwitches(windows);
  assert.deepEqual(changing.map((w) => w.start), [1, 6]);
  assert.equal(maxConcurrent(changing, () => true), 1);
  // Had w-3 started while w-2's first run still ran, that is two at once.
  const early = switchWindows([
    ev(1, "apply-started", "c.w-2", "manual", "new"),
    ev(2, "apply-started", "c.w-3", "manual", "new"),
    ev(3, "applied", "c.w-2", "manual", "new"),
  ]);
  assert.equal(maxConcurrent(changingSwitches(early), () => true), 2);
});

Deno.test("switchWindows: the configuration's removal closes whatever its node still had open", () => {
  const windows = switchWindows([
    ev(1, "apply-started", "c.w-1", "a", "h"),
    ev(2, "remove-started", "c.w-1", "onremove"),
    ev(3, "removed", "c.w-1"),
  ]);
  assert.deepEqual(windows.map((w) => [w.start, w.end, w.removal ?? false]), [[1, 3, false], [2, 3, true]]);
});
