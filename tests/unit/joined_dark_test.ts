// While the workload API is away: the dark rule (docs/readiness.md).
import assert from "node:assert/strict";
import type { WorkloadFacts } from "../../core/nodes/joined.ts";
import type { NodeReport } from "../../core/nodes/readiness.ts";
import { type PlanNode, planRollout } from "../../core/rollout/plan.ts";
import type { NodeView } from "../../core/nodes/workload.ts";
import { ago, applied, facts, join, joinAll, node, planNode, TIMEOUT } from "../joined_kit.ts";
import { QUIET } from "../rollout_input_kit.ts";

Deno.test("while the workload cluster cannot be read the planner only creates", () => {
  const input = {
    nodes: [
      { machine: "cp-1", plane: "controlPlane" as const, exists: true, upToDate: true, available: true, failed: false },
      { machine: "w-1", plane: "dataPlane" as const, exists: true, upToDate: false, available: false, failed: false },
      { machine: "w-2", plane: "dataPlane" as const, exists: true, upToDate: false, available: false, failed: false },
      { machine: "w-3", plane: "dataPlane" as const, exists: false, upToDate: false, available: false, failed: false },
    ],
    ...QUIET,
    departing: [{ machine: "w-9", plane: "dataPlane" as const, deleting: false }],
    bootstrap: "cp-1",
    order: "WorkersFirst" as const,
    maxUnavailable: 1,
    paused: false,
  };
  const free = planRollout(input);
  assert.deepEqual(free.update, ["w-1", "w-2"], "without the hold, nodes that look down would all be updated");
  const held = planRollout({ ...input, hold: "the workload API cannot be read" });
  assert.deepEqual(held.create, ["w-3"]);
  assert.deepEqual(held.update, []);
  assert.deepEqual(held.remove, []);
  assert.match(held.waiting!, /rollout waits: the workload API cannot be read/);
  const failedW1 = input.nodes.map((n) => n.machine === "w-1" ? { ...n, failed: true, suspect: true } : n);
  const fix = planRollout({ ...input, nodes: failedW1, hold: "the workload API cannot be read" });
  assert.deepEqual(fix.update, ["w-1"], "the failed suspect may still be fixed forward");
});

Deno.test("a node still applying when the API went away after its change is a suspect; one changed earlier is not", () => {
  const applying: NodeReport = { ...applied("cp-2", "controlPlane"), state: "Applying", reason: "Running", detail: "" };
  const down = {
    ...facts([], "Unavailable"),
    api: { state: "Unavailable" as const, message: "refused", since: ago(30) },
  };
  assert.equal(join(applying, down, 60).suspect, true);
  assert.equal(join(applying, down, 20).suspect, undefined, "changed during the outage: not why it began");
  assert.equal(join(applying, down, 3600).suspect, undefined, "changed long before: not this step");
});

Deno.test("the dark rule: while the API is away only a suspect changes, toward a newer spec, one control-plane node at a time", async (t) => {
  const hold = "the workload API cannot be read";
  const n = planNode;
  const plan = (nodes: PlanNode[]) =>
    planRollout({
      nodes,
      ...QUIET,
      departing: [{ machine: "w-9", plane: "dataPlane", deleting: false }],
      bootstrap: "cp-1",
      order: "WorkersFirst",
      maxUnavailable: 1,
      paused: false,
      hold,
    });
  await t.step("an outdated node that is no suspect is never touched, whatever the planner would do", () => {
    const p = plan([n("cp-1", { upToDate: false }), n("cp-2"), n("cp-3"), n("w-1", { upToDate: false })]);
    assert.deepEqual([p.update, p.remove], [[], []]);
  });
  await t.step("a failed bootstrap node that is no suspect is not re-rendered out of order", () => {
    const p = plan([n("cp-1", { upToDate: false, failed: true }), n("cp-2", { upToDate: false }), n("cp-3")]);
    assert.deepEqual(p.update, []);
  });
  await t.step("the suspect is fixed forward at once, toward the newer spec", () => {
    const p = plan([n("cp-1"), n("cp-2", { upToDate: false, suspect: true }), n("cp-3", { upToDate: false })]);
    assert.deepEqual(p.update, ["cp-2"]);
    assert.match(p.waiting!, /fixing forward cp-2/);
  });
  await t.step("two control-plane suspects: one at a time", () => {
    const p = plan([
      n("cp-1"),
      n("cp-2", { upToDate: false, suspect: true }),
      n("cp-3", { upToDate: false, suspect: true }),
    ]);
    assert.deepEqual(p.update, ["cp-2"]);
    const next = plan([n("cp-1"), n("cp-2", { suspect: true }), n("cp-3", { upToDate: false, suspect: true })]);
    assert.deepEqual(next.update, [], "cp-2 was re-rendered and is not seen working yet");
  });
  await t.step("worker suspects, and no removals", () => {
    const p = plan([n("cp-1"), n("w-1", { upToDate: false, suspect: true }), n("w-2", { upToDate: false })]);
    assert.deepEqual([p.update, p.remove], [["w-1"], []]);
  });
});

Deno.test("an outage never lifts a verdict reached while the API answered: a node already failed stays Failed", () => {
  const down = (nodes: NodeView[]): WorkloadFacts => ({
    api: { state: "Unavailable", message: "refused", since: ago(30) },
    nodes: new Map(nodes.map((n) => [n.name, n])),
  });
  // Changed 20 minutes ago, its Node NotReady since 15: failed (timeout 10 min) before the API went away.
  const notReady = node("w-1", { ready: "False", since: ago(15 * 60), why: "False: KubeletNotReady" });
  const failed = join(applied("w-1"), down([notReady]), 20 * 60);
  assert.equal(failed.state, "Failed");
  assert.equal(failed.reason, "NodeNotReady");
  assert.match(
    failed.detail,
    /Node w-1 not Ready for more than 10m .*; the workload API has not answered since \(refused\)/,
  );
  // The same node seen Ready: not blamed for the outage.
  assert.notEqual(join(applied("w-1"), down([node("w-1")]), 20 * 60).state, "Failed");
  // Not Ready, but its deadline had not passed when the API went away: it waits (Joining), as before.
  const young = node("w-1", { ready: "False", since: ago(5 * 60) });
  assert.equal(join(applied("w-1"), down([young]), 5 * 60).state, "Joining");
  // Never listed: nothing was seen, nothing is concluded.
  assert.equal(join(applied("w-1"), { ...down([]), nodes: undefined }, 20 * 60).state, "Joining");
});

Deno.test("after an outage a node that ran its change before it is settling until the node timeout from the API's return", async (t) => {
  const TIMEOUT_S = TIMEOUT / 1000;
  const readyBefore = new Map([["cp-1", node("cp-1")]]);
  /** The API answering again for `s` seconds after an outage of a minute; the Nodes as seen before it went. */
  const back = (s: number, before: Map<string, NodeView> | undefined = readyBefore): WorkloadFacts["api"] => ({
    state: "Available",
    message: "/readyz answers ok",
    since: ago(s),
    outage: { from: ago(s + 60), to: ago(s), nodes: before },
  });
  const ran = { ...applied("cp-1", "controlPlane", false), appliedAt: ago(300) };
  const changed = 300 + TIMEOUT_S;
  await t.step("its Node not back yet, moments after the API returned: settling, not Failed", () => {
    const r = join(ran, { api: back(2), nodes: new Map() }, changed);
    assert.equal(r.state, "Joining");
    assert.equal(r.reason, "NodeMissing");
    assert.equal(r.settling, true);
  });
  await t.step("its Node NotReady since long before (a transition time from then): settling, not Failed", () => {
    const nodes = new Map([["cp-1", node("cp-1", { ready: "Unknown", since: ago(5000), why: "NodeStatusUnknown" })]]);
    const r = join(ran, { api: back(2), nodes }, changed);
    assert.equal(r.state, "Joining");
    assert.equal(r.settling, true);
  });
  await t.step("the node timeout passed since the API returned: Failed, naming the return", () => {
    const missing = join(ran, { api: back(TIMEOUT_S + 5), nodes: new Map() }, changed);
    assert.equal(missing.state, "Failed");
    assert.equal(missing.settling, undefined);
    const nodes = new Map([["cp-1", node("cp-1", { ready: "False", since: ago(5000) })]]);
    const notReady = join(ran, { api: back(TIMEOUT_S + 5), nodes }, changed);
    assert.equal(notReady.state, "Failed");
    assert.match(notReady.detail, /within 10m of the workload API's return/);
  });
  await t.step("Failed before the outage (its Node missing then too): still Failed, the outage lifts no halt", () => {
    const r = join(ran, { api: back(2, new Map()), nodes: new Map() }, changed + 120);
    assert.equal(r.state, "Failed");
    assert.equal(r.settling, undefined);
  });
  await t.step("no outage, only NICO's first look (a restart): judged as ever", () => {
    const first = { state: "Available" as const, message: "/readyz answers ok", since: ago(2) };
    const r = join(ran, { api: first, nodes: new Map() }, changed);
    assert.equal(r.state, "Failed");
  });
  await t.step("a change run after the API returned is judged as ever (not settling)", () => {
    const fresh = { ...ran, appliedAt: ago(1) };
    const r = join(fresh, { api: back(30), nodes: new Map() }, 5);
    assert.equal(r.reason, "NodeMissing");
    assert.equal(r.settling, undefined);
  });
});

Deno.test("a settling node is waited for, not changed out of order", () => {
  const n = (machine: string, o: Partial<PlanNode> = {}) =>
    planNode(machine, { upToDate: false, available: true, ...o });
  const input = (settling: boolean) => ({
    nodes: [
      n("cp-1"),
      n("cp-2", { upToDate: true }),
      n("cp-3", { available: false, ...(settling ? { settling } : {}) }),
      n("w-1", { available: false, ...(settling ? { settling } : {}) }),
      n("w-2"),
    ],
    ...QUIET,
    departing: [],
    bootstrap: "cp-1",
    order: "WorkersFirst" as const,
    maxUnavailable: 1,
    paused: false,
  });
  const down = planRollout(input(false));
  assert.deepEqual(down.update, ["w-1", "cp-3"], "nodes really down are updated out of order (they cost nothing)");
  const settling = planRollout(input(true));
  assert.deepEqual(settling.update, [], "nothing changes while the node may only not have shown itself yet");
  assert.match(settling.waiting ?? "", /waiting for cp-3/);
});

Deno.test("a node changed while the API is away is in flight: no second control-plane node changes meanwhile", () => {
  const down = { ...facts([node("cp-1"), node("cp-3")], "Unavailable") }; // away since 90 s ago
  const fixed = join({ ...applied("cp-3", "controlPlane"), appliedAt: ago(5) }, down, 10);
  assert.equal(fixed.changedInOutage, true, "changed 10 s ago, during the outage");
  assert.equal(join({ ...applied("cp-1", "controlPlane"), appliedAt: ago(200) }, down, 300).changedInOutage, undefined);
  const n = (machine: string, o: Partial<PlanNode>) => planNode(machine, { upToDate: false, ...o });
  const input = (cp3: Partial<PlanNode>) => ({
    nodes: [n("cp-1", { suspect: true }), n("cp-2", { upToDate: true }), n("cp-3", { upToDate: true, ...cp3 })],
    ...QUIET,
    departing: [],
    bootstrap: "cp-2",
    order: "ControlPlaneFirst" as const,
    maxUnavailable: 1,
    paused: false,
    hold: "the workload API cannot be read",
  });
  assert.deepEqual(planRollout(input({})).update, ["cp-1"], "nothing else in flight: the suspect is fixed forward");
  assert.deepEqual(planRollout(input({ changedInOutage: true })).update, [], "cp-3 was re-rendered in the outage");
});

Deno.test("a Ready Node left over from before the switch does not clear a node the API went away after", () => {
  // NIO applied 40 s ago (changed 45 s ago); the API went away 30 s ago, before the restarted kubelet posted again.
  const down = (n: NodeView): WorkloadFacts => ({
    api: { state: "Unavailable", message: "refused", since: ago(30) },
    nodes: new Map([[n.name, n]]),
  });
  const ran = { ...applied("cp-1", "controlPlane"), appliedAt: ago(40) };
  const stale = join(ran, down(node("cp-1", { postedAt: ago(100) })), 45);
  assert.equal(stale.suspect, true, "its kubelet had posted nothing since the switch: not seen working");
  assert.match(stale.detail, /before it was seen working|the API went away after its change/);
  const posted = join(ran, down(node("cp-1", { postedAt: ago(35) })), 45);
  assert.equal(posted.suspect, undefined, "its kubelet posted after the switch, before the outage: seen working");
  // Where Nodes name what they run, a Ready Node naming the old configuration was not seen working either.
  const named = (configuration: string) =>
    joinAll([ran], down(node("cp-1", { postedAt: ago(35), configuration })), 45, "c.cp-1@new")[0]!;
  assert.equal(named("c.cp-1@old").suspect, true);
  assert.equal(named("c.cp-1@new").suspect, undefined);
});
