/**
 * The rows of the planner's rule table (tests/unit/rollout_rules_test.ts) for the backup rule
 * (core/rollout/backuphold.ts): control-plane steps wait for a snapshot younger than them. Pure.
 */
import { backupBeforeControlPlane } from "../core/rollout/backuphold.ts";
import type { BackupGate } from "../core/rollout/types.ts";
import { input, leaving, missing, n, outdated, type Row } from "./rollout_rules_kit.ts";

const NOW = 1_000_000;
const gate = (o: Partial<BackupGate> = {}): BackupGate => ({
  policy: "Required",
  taking: false,
  since: new Map([["cp-2", NOW - 60_000]]),
  now: NOW,
  ...o,
});
const STORE_DOWN = { at: NOW - 1_000, message: "s3 PutObject backups/x: the store cannot be reached" };

/** The backup rule's rows. */
export const BACKUP_ROWS: Row[] = [
  {
    rule: backupBeforeControlPlane,
    name: "backups not configured: passes",
    input: input([n("cp-2", outdated)]),
    before: { update: ["cp-2"] },
    want: { answer: "pass", update: ["cp-2"] },
  },
  {
    rule: backupBeforeControlPlane,
    name: "a control-plane update without a snapshot younger than it: held while one is taken",
    input: input([n("cp-2", outdated)], { backup: gate({ lastSuccess: NOW - 120_000, taking: true }) }),
    before: { update: ["cp-2"] },
    want: { answer: "pass", reasons: ["control plane: cp-2 waits for an etcd snapshot (taking one)"] },
  },
  {
    rule: backupBeforeControlPlane,
    name: "…a snapshot younger than the step: it goes",
    input: input([n("cp-2", outdated)], { backup: gate({ lastSuccess: NOW - 30_000 }) }),
    before: { update: ["cp-2"] },
    want: { answer: "pass", update: ["cp-2"] },
  },
  {
    rule: backupBeforeControlPlane,
    name: "…a step first wanted now is held even after a snapshot a minute old",
    input: input([n("cp-3", outdated)], { backup: gate({ lastSuccess: NOW - 30_000 }) }),
    before: { update: ["cp-3"] },
    want: { answer: "pass", reasons: ["control plane: cp-3 waits for an etcd snapshot (asked)"] },
  },
  {
    rule: backupBeforeControlPlane,
    name: "workers are not held",
    input: input([n("w-1", outdated)], { backup: gate() }),
    before: { update: ["w-1"] },
    want: { answer: "pass", update: ["w-1"] },
  },
  {
    rule: backupBeforeControlPlane,
    name: "Required: the snapshot failed after the step was wanted: halted, naming the store's error",
    input: input([n("cp-2", outdated)], { backup: gate({ failure: STORE_DOWN }) }),
    before: { update: ["cp-2"] },
    want: {
      answer: "pass",
      halted: "cp-2",
      reasons: ["control plane: cp-2 waits for an etcd snapshot, and none can be taken"],
    },
  },
  {
    rule: backupBeforeControlPlane,
    name: "…a failure older than the step is not this step's: a snapshot is taken",
    input: input([n("cp-2", outdated)], { backup: gate({ failure: { ...STORE_DOWN, at: NOW - 90_000 } }) }),
    before: { update: ["cp-2"] },
    want: { answer: "pass", reasons: ["control plane: cp-2 waits for an etcd snapshot (asked)"] },
  },
  {
    rule: backupBeforeControlPlane,
    name: "BestEffort: a failed snapshot is skipped and the step goes on",
    input: input([n("cp-2", outdated)], { backup: gate({ policy: "BestEffort", failure: STORE_DOWN }) }),
    before: { update: ["cp-2"] },
    want: { answer: "pass", update: ["cp-2"] },
  },
  {
    rule: backupBeforeControlPlane,
    name: "a control-plane member's removal waits too",
    input: input([], { departing: [leaving("cp-4")], backup: gate() }),
    before: { remove: ["cp-4"] },
    want: { answer: "pass", reasons: ["control plane: cp-4 waits for an etcd snapshot (asked)"] },
  },
  {
    rule: backupBeforeControlPlane,
    name: "a replacement joining a running cluster waits; the first bring-up does not",
    input: input([n("cp-4", missing)], { backup: gate(), firstBringUp: false }),
    before: { create: ["cp-4"] },
    want: { answer: "pass", reasons: ["control plane: cp-4 waits for an etcd snapshot (asked)"] },
  },
  {
    rule: backupBeforeControlPlane,
    name: "…during the first bring-up, creations go",
    input: input([n("cp-4", missing)], { backup: gate(), firstBringUp: true }),
    before: { create: ["cp-4"] },
    want: { answer: "pass", create: ["cp-4"] },
  },
  {
    rule: backupBeforeControlPlane,
    name: "paused: nothing to narrow",
    input: input([n("cp-2", outdated)], { backup: gate(), paused: true }),
    want: { answer: "pass" },
  },
];
