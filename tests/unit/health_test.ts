/** core/nodes/health.ts: when a member is unhealthy enough to remediate, and since when. */
import assert from "node:assert/strict";
import { type HealthChecks, judgeMember, type MemberFacts } from "../../core/nodes/health.ts";
import type { NodeReport } from "../../core/nodes/readiness.ts";
import type { NodeView } from "../../core/nodes/workload.ts";

const T0 = new Date("2026-01-01T00:00:00Z");
const at = (min: number) => new Date(T0.getTime() + min * 60_000);
const CHECKS: HealthChecks = { notReadyMs: 5 * 60_000, startupMs: 20 * 60_000, unreachableMs: 5 * 60_000 };

const report = (o: Partial<NodeReport> = {}): NodeReport => ({
  machine: "w-1",
  plane: "dataPlane",
  state: "Joining",
  reason: "NodeNotReady",
  detail: "",
  upToDate: true,
  applied: true,
  appliedAt: at(1),
  ...o,
});
const node = (ready: NodeView["ready"], since: Date, o: Partial<NodeView> = {}): NodeView => ({
  name: "w-1",
  ready,
  since,
  why: ready === "True" ? undefined : "KubeletNotReady",
  cordoned: false,
  ...o,
});
const unreachableSince = (t: Date) => ({
  metadata: { name: "w-1" },
  status: {
    conditions: [{ type: "Discoverable", status: "False", reason: "SSHFailed", lastTransitionTime: t.toISOString() }],
  },
});

interface Case {
  name: string;
  facts: Partial<MemberFacts>;
  now: Date;
  checks?: HealthChecks;
  /** The reason and since (minutes after T0), or undefined for healthy. */
  want?: [string, number];
  /** When it would become unhealthy (minutes after T0). */
  due?: number;
}

const cases: Case[] = [
  {
    name: "NotReady after it came up with its change: unhealthy once the timeout passed",
    facts: { node: node("False", at(10)), changedAt: at(0) },
    now: at(16),
    want: ["NodeNotReady", 10],
  },
  { name: "…and not before", facts: { node: node("False", at(10)), changedAt: at(0) }, now: at(14), due: 15 },
  {
    name: "Unknown counts like NotReady",
    facts: { node: node("Unknown", at(10)) },
    now: at(16),
    want: ["NodeNotReady", 10],
  },
  { name: "a Ready Node is healthy", facts: { node: node("True", at(10)) }, now: at(60) },
  {
    name: "NotReady since its change was applied and never back: the rollout's, not remediation's",
    facts: { node: node("False", at(0.5)), changedAt: at(0), report: report({ appliedAt: at(1) }) },
    now: at(60),
  },
  {
    name: "a change applied to a node already down (a fix): it gets the timeout from the change",
    facts: { node: node("False", at(0)), changedAt: at(30), report: report({ appliedAt: at(31) }) },
    now: at(34),
    due: 35,
  },
  {
    name: "…then it is unhealthy, counted from the change",
    facts: { node: node("False", at(0)), changedAt: at(30), report: report({ appliedAt: at(31) }) },
    now: at(36),
    want: ["NodeNotReady", 30],
  },
  {
    name: "a Node that names its current configuration was seen working with it",
    facts: {
      node: node("False", at(0.5), { configuration: "abc" }),
      changedAt: at(0),
      expected: "abc",
      report: report({ appliedAt: at(1) }),
    },
    now: at(6),
    want: ["NodeNotReady", 0.5],
  },
  {
    name: "not applied yet (a change NIO has not run): not judged by its Node",
    facts: { node: node("False", at(10)), changedAt: at(0), report: report({ applied: false, appliedAt: undefined }) },
    now: at(60),
  },
  {
    name: "the workload API away: Nodes are not judged",
    facts: { node: node("False", at(10)), nodesKnown: false },
    now: at(60),
  },
  { name: "check off (0)", facts: { node: node("False", at(10)) }, now: at(60), checks: { notReadyMs: 0 } },
  {
    name: "applied, no Node ever registered: startup timeout from the configuration's creation",
    facts: { node: undefined, createdAt: at(0) },
    now: at(21),
    want: ["NodeStartupTimeout", 0],
  },
  { name: "…not before", facts: { node: undefined, createdAt: at(0) }, now: at(19), due: 20 },
  {
    name: "after a workload API outage: NotReady counts from the API's return, not from before",
    facts: { node: node("Unknown", at(10)), apiBackAt: at(30) },
    now: at(33),
    due: 35,
  },
  {
    name: "…and is unhealthy once the timeout passed since the return",
    facts: { node: node("Unknown", at(10)), apiBackAt: at(30) },
    now: at(36),
    want: ["NodeNotReady", 30],
  },
  {
    name: "after a workload API outage: a Node not listed again yet is no startup timeout",
    facts: { node: undefined, createdAt: at(0), apiBackAt: at(40) },
    now: at(41),
    due: 60,
  },
  {
    name: "not applied (NIO failing, maybe the flake): no startup timeout",
    facts: { node: undefined, createdAt: at(0), report: report({ applied: false, state: "Failed" }) },
    now: at(60),
  },
  {
    name: "NIO cannot reach the Machine: unhealthy after the timeout, even with the API away",
    facts: { machineObj: unreachableSince(at(2)), nodesKnown: false },
    now: at(8),
    want: ["MachineUnreachable", 2],
  },
  {
    name: "two checks fire: the older one is the reason",
    facts: { machineObj: unreachableSince(at(12)), node: node("False", at(10)) },
    now: at(20),
    want: ["NodeNotReady", 10],
  },
  {
    name: "no Discoverable condition (the older NIO): not judged by reachability",
    facts: { machineObj: { metadata: { name: "w-1" }, status: { discoverable: false } }, node: node("True", at(0)) },
    now: at(60),
  },
];

Deno.test("judgeMember: each check, its timeout and what it refuses to judge", async (t) => {
  for (const c of cases) {
    await t.step(c.name, () => {
      const facts: MemberFacts = { machine: "w-1", report: report(), nodesKnown: true, ...c.facts };
      const v = judgeMember(facts, c.checks ?? CHECKS, c.now);
      const got = v.unhealthy ? [v.unhealthy.reason, (v.unhealthy.since.getTime() - T0.getTime()) / 60_000] : undefined;
      assert.deepEqual(got, c.want);
      if (c.due !== undefined) assert.equal(v.dueAt?.toISOString(), at(c.due).toISOString());
      if (v.unhealthy) assert.match(v.unhealthy.message, /w-1/);
    });
  }
});
