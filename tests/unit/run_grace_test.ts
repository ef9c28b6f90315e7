/**
 * NIO v1 fires a configuration's first run by itself: NICO waits longer before it brings the schedule forward for a
 * configuration that still has its first spec (core/nodes/runs.ts `runSoonGraceMs`), and looks again when it may.
 * A change NIO v1 never runs by itself (the same commit: `cluster.nix` alone) is written with the schedule forward
 * and waits for nothing (`firesRun`, `scheduleOnChange`).
 */
import assert from "node:assert/strict";
import { nodeDeadlines } from "../../controllers/cluster/requeue.ts";
import type { NodeReport } from "../../core/nodes/readiness.ts";
import {
  firesRun,
  FIRST_RUN_GRACE_MS,
  RUN_SOON_GRACE_MS,
  RUN_SOON_SCHEDULE,
  runSoonGraceMs,
  scheduleFor,
  scheduleOnChange,
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

const COMMIT_A = "0123456789abcdef0123456789abcdef01234567";
const COMMIT_B = "fedcba9876543210fedcba9876543210fedcba98";
const REPO = "https://git.example.test/flake.git";

Deno.test("firesRun: NIO v1 runs by itself a new configuration and a new commit, nothing else", () => {
  const spec = { gitRepo: REPO, ref: COMMIT_A, dayTwoSchedule: "0 3 * * *" };
  const cases: [string, typeof spec | undefined, Partial<typeof spec>, boolean][] = [
    ["a new configuration", undefined, spec, true],
    ["a new pinned commit", spec, { ...spec, ref: COMMIT_B }, true],
    ["another repository", spec, { ...spec, gitRepo: "https://git.example.test/other.git" }, true],
    ["a branch for a commit", spec, { ...spec, ref: "main" }, true],
    ["cluster.nix alone (same commit)", spec, spec, false],
    ["a schedule alone", spec, { ...spec, dayTwoSchedule: "*/5 * * * *" }, false],
  ];
  for (const [what, before, after, want] of cases) assert.equal(firesRun(before, after), want, what);
  // NIO's CRD defaults ref to main: an absent ref and "main" are the same commit.
  assert.equal(firesRun({ gitRepo: REPO }, { gitRepo: REPO, ref: "main" }), false);
});

Deno.test("scheduleOnChange: the same commit is written with the schedule forward; a new one keeps the user's", () => {
  const before = { gitRepo: REPO, ref: COMMIT_A, dayTwoSchedule: "0 3 * * *" };
  assert.equal(
    scheduleOnChange(before, { gitRepo: REPO, ref: COMMIT_A, dayTwoSchedule: "0 3 * * *" }),
    RUN_SOON_SCHEDULE,
  );
  assert.equal(scheduleOnChange(before, { gitRepo: REPO, ref: COMMIT_B, dayTwoSchedule: "0 3 * * *" }), "0 3 * * *");
  assert.equal(scheduleOnChange(before, { gitRepo: REPO, ref: COMMIT_B }), undefined, "NIO's default schedule");
});

Deno.test("a schedule already forward waits for no grace and stays forward while the node waits for a run", () => {
  assert.equal(runSoonGraceMs(4, RUN_SOON_SCHEDULE), 0);
  assert.equal(runSoonGraceMs(1, RUN_SOON_SCHEDULE), 0);
  assert.equal(runSoonGraceMs(4, "0 3 * * *"), RUN_SOON_GRACE_MS);
  const waiting = { resting: "0 3 * * *", state: "Applying", reason: "WaitingForRun", now };
  // Written a moment ago with the schedule forward: the next pass keeps it so (no write back to the resting one).
  assert.equal(
    scheduleFor({ ...waiting, changedAt: ago(100), graceMs: runSoonGraceMs(4, RUN_SOON_SCHEDULE) }),
    RUN_SOON_SCHEDULE,
  );
  // Once its run started, the user's schedule comes back.
  assert.equal(scheduleFor({ ...waiting, reason: "Running", changedAt: ago(100), graceMs: 0 }), "0 3 * * *");
  // No deadline to look again for: nothing is left to ask NIO for.
  const node = { machine: "a", state: "Applying", reason: "WaitingForRun" } as unknown as NodeReport;
  const base = { now, timeoutMs: 600_000, changedAt: new Map([["a", ago(100)]]), nodes: [node], blocked: false };
  const d = nodeDeadlines({ ...base, runGraceMs: new Map([["a", 0]]) });
  assert.doesNotMatch(d.why, /may ask for a run/);
});
