/**
 * The requeue of a pass as values: the soonest wish wins, and the node
 * deadlines say when a node in flight calls for a look.
 */
import assert from "node:assert/strict";
import {
  BUSY_REQUEUE_MS,
  IDLE_REQUEUE_MS,
  MAX_RACES,
  nodeDeadlines,
  Races,
  type Requeue,
  soonest,
} from "../../controllers/cluster/requeue.ts";
import type { NodeReport } from "../../core/nodes/readiness.ts";

const now = new Date("2026-01-01T00:00:00Z");
/** Node `a`'s facts: its configuration changed `ms` ago. */
const changedAgo = (ms: number) => new Map([["a", new Date(now.getTime() - ms)]]);
const node = (state: NodeReport["state"], reason = "") => ({ machine: "a", state, reason }) as unknown as NodeReport;

Deno.test("soonest: the earliest wish, none without wishes", () => {
  const a: Requeue = { after: 5_000, why: "drain" };
  const b: Requeue = { after: 1_000, why: "next second" };
  assert.equal(soonest(a, undefined, b), b);
  assert.equal(soonest(b, a), b);
  assert.equal(soonest(undefined), undefined);
});

Deno.test("node deadlines: idle when settled, busy while blocked, the timeout of a node in flight", () => {
  const base = { now, timeoutMs: 60_000, changedAt: changedAgo(10_000) };
  assert.equal(nodeDeadlines({ ...base, nodes: [node("Ready")], blocked: false }).after, IDLE_REQUEUE_MS);
  assert.equal(nodeDeadlines({ ...base, nodes: [], blocked: true }).after, BUSY_REQUEUE_MS);
  // Changed 10 s ago with a 60 s timeout: look again a second after the deadline.
  assert.equal(nodeDeadlines({ ...base, nodes: [node("Applying")], blocked: false }).after, 51_000);
  const late = { ...base, changedAt: changedAgo(120_000) };
  assert.equal(
    nodeDeadlines({ ...late, nodes: [node("Applying")], blocked: false }).after,
    1000,
    "never sooner than 1 s",
  );
});

Deno.test("races: doubling delays while they repeat, a problem after the last, anew once forgotten", () => {
  const races = new Races();
  const delays = Array.from({ length: MAX_RACES - 1 }, () => races.lost("ns/c")?.after);
  assert.deepEqual(delays, [500, 1000, 2000, 4000, 8000]);
  assert.equal(races.lost("ns/c"), undefined, "one race too many is a problem the user sees");
  assert.equal(races.lost("ns/other")?.after, 500, "counted per cluster");
  races.forget("ns/c");
  assert.equal(races.lost("ns/c")?.after, 500);
});
