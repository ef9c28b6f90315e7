/**
 * NIO v1 fires a configuration's first run by itself: NICO waits longer before it brings the schedule forward for a
 * configuration that still has its first spec (core/nodes/runs.ts `runSoonGraceMs`), and looks again when it may.
 */
import assert from "node:assert/strict";
import { nodeDeadlines } from "../../controllers/cluster/requeue.ts";
import type { NodeReport } from "../../core/nodes/readiness.ts";
import {
  FIRST_RUN_GRACE_MS,
  RUN_SOON_GRACE_MS,
  RUN_SOON_SCHEDULE,
  runSoonGraceMs,
  scheduleFor,
} from "../../core/nodes/runs.ts";

const now = new Date("2026-01-01T00:10:00Z");
const ago = (ms: number) => new Date(now.getTime() - ms);

Deno.test("runSoonGraceMs: a first spec (generation 1) waits for NIO's own first run, a changed one 5 s", () => {
  assert.equal(runSoonGraceMs(1), FIRST_RUN_GRACE_MS);
  for (const g of [2, 3, 40]) assert.equal(runSoonGraceMs(g), RUN_SOON_GRACE_MS, `generation ${g}`);
  // An object read without a generation (older servers or a hand-made fixture) keeps the short grace.
  assert.equal(runSoonGraceMs(undefined), RUN_SOON_GRACE_MS);
  assert.ok(FIRST_RUN_GRACE_MS > RUN_SOON_GRACE_MS);
});

Deno.test("scheduleFor: a waiting node's schedule moves forward once its own grace is over, not before", () => {
  const waiting = { resting: "0 3 * * *", state: "Applying", reason: "WaitingForRun", now };
  const cases: [number, number | undefined, string | undefined][] = [
    // [changed ms ago, grace, schedule]
    [10_000, undefined, RUN_SOON_SCHEDULE],
    [10_000, RUN_SOON_GRACE_MS, RUN_SOON_SCHEDULE],
    [10_000, FIRST_RUN_GRACE_MS, "0 3 * * *"],
    [59_000, FIRST_RUN_GRACE_MS, "0 3 * * *"],
    [60_000, FIRST_RUN_GRACE_MS, RUN_SOON_SCHEDULE],
    [4_000, RUN_SOON_GRACE_MS, "0 3 * * *"],
  ];
  for (const [ms, graceMs, want] of cases) {
    assert.equal(scheduleFor({ ...waiting, changedAt: ago(ms), graceMs }), want, `${ms} ms ago, grace ${graceMs}`);
  }
});

Deno.test("node deadlines: a node waiting for its first run is looked at when its longer grace ends", () => {
  const waiting = { machine: "a", state: "Applying", reason: "WaitingForRun" } as unknown as NodeReport;
  const base = { now, timeoutMs: 600_000, changedAt: new Map([["a", ago(2_000)]]), nodes: [waiting], blocked: false };
  assert.equal(nodeDeadlines(base).after, RUN_SOON_GRACE_MS - 2_000 + 50);
  const first = nodeDeadlines({ ...base, runGraceMs: new Map([["a", FIRST_RUN_GRACE_MS]]) });
  assert.equal(first.after, FIRST_RUN_GRACE_MS - 2_000 + 50);
  assert.match(first.why, /may ask for a run/);
});
