/** Honest readiness, pure: applied nodes judged by their Node, the workload conditions, the planner's hold. */
import assert from "node:assert/strict";
import { age, type WorkloadFacts } from "../../core/nodes/joined.ts";
import type { NodeReport } from "../../core/nodes/readiness.ts";
import { workloadConditions } from "../../core/status/workload.ts";
import { ago, applied, facts, join, joinAll, node, NOW } from "../joined_kit.ts";

/** A case of an applied node judged by its Node: the node's report (applied w-1 unless given), the workload cluster. */
interface Case {
  name: string;
  r?: NodeReport;
  w: WorkloadFacts;
  changed?: number;
  state: string;
  reason: string;
  detail?: RegExp;
}

/** Each case as a step: its state, reason and detail, whether it counts as applied, and whether it is a suspect. */
async function judgeEach(t: Deno.TestContext, cases: Case[]) {
  for (const c of cases) {
    await t.step(c.name, () => {
      const out = join(c.r ?? applied("w-1"), c.w, c.changed);
      assert.equal(out.state, c.state);
      assert.equal(out.reason, c.reason);
      assert.equal(out.applied, (c.r ?? applied("w-1")).state === "Ready");
      if (c.detail) assert.match(out.detail, c.detail);
      assert.equal(out.suspect === true, /suspect/.test(c.name) || c.state === "Failed" && /changed/.test(c.name));
    });
  }
}

Deno.test("an applied node is Ready only when its Node is Ready", async (t) => {
  await judgeEach(t, [
    { name: "Node Ready", w: facts([node("w-1")]), state: "Ready", reason: "Joined" },
    {
      name: "Node missing, within the timeout",
      w: facts([]),
      state: "Joining",
      reason: "NodeMissing",
      detail: /waiting for Node w-1/,
    },
    {
      name: "Node missing past the timeout",
      w: facts([]),
      changed: 700,
      state: "Failed",
      reason: "NodeNotReady",
      detail: /no Node named w-1 registered within 10m .*Machine's name/,
    },
    {
      name: "Node NotReady, within the timeout",
      w: facts([node("w-1", { ready: "False", why: "KubeletNotReady", since: ago(30) })]),
      state: "Joining",
      reason: "NodeNotReady",
      detail: /Node w-1 not Ready \(KubeletNotReady\) for <1m/,
    },
    {
      name: "Node NotReady past the timeout, counted from its last transition when later than the change",
      w: facts([node("w-1", { ready: "False", since: ago(660) })]),
      changed: 3600,
      state: "Failed",
      reason: "NodeNotReady",
      detail: /not Ready for more than 10m \(the node timeout\)$/,
    },
    {
      name: "a recent change restarts the clock of a long NotReady Node",
      w: facts([node("w-1", { ready: "Unknown", since: ago(3600) })]),
      changed: 60,
      state: "Joining",
      reason: "NodeNotReady",
    },
    {
      name: "cordoned by NICO for the rollout: still available to the planner",
      r: applied("w-1", "dataPlane", false),
      w: facts([node("w-1", { cordoned: true, drainStarted: ago(120) })]),
      state: "Ready",
      reason: "Joined",
      detail: /cordoned by NICO for the rollout for 2m/,
    },
    {
      name: "not applied: unchanged",
      r: { ...applied("w-1"), state: "Applying", reason: "Applying", detail: "Converging" },
      w: facts([node("w-1")]),
      state: "Applying",
      reason: "Applying",
    },
    {
      name: "connections off: applied counts as Ready",
      w: { ...facts(undefined, "Unknown"), disabled: true },
      state: "Ready",
      reason: "Applied",
    },
  ]);
});

Deno.test("while the workload API cannot be read, an applied node waits and only its own change is blamed", async (t) => {
  await judgeEach(t, [
    {
      name: "API unavailable: waits, never fails for it",
      w: facts([node("w-1")], "Unavailable"),
      changed: 7200,
      state: "Joining",
      reason: "WorkloadAPIUnavailable",
      detail: /cannot be checked .*was Ready when last seen/,
    },
    {
      name: "API gone since shortly after this node changed, past the timeout: the change is blamed",
      w: { ...facts([node("w-1")], "Unavailable"), api: { state: "Unavailable", message: "refused", since: ago(650) } },
      changed: 700,
      state: "Failed",
      reason: "NodeNotReady",
      detail: /workload API stopped answering after w-1 changed and has not come back within 10m/,
    },
    {
      name: "API gone after this node's change was seen working (applied before, posted Ready since): never blamed",
      r: { ...applied("w-1"), appliedAt: ago(690) },
      w: {
        ...facts([node("w-1", { postedAt: ago(680) })], "Unavailable"),
        api: { state: "Unavailable", message: "refused", since: ago(650) },
      },
      changed: 700,
      state: "Joining",
      reason: "WorkloadAPIUnavailable",
      detail: /was Ready when last seen$/,
    },
    {
      name: "API gone after this node's change, not yet seen working: the suspect, waiting within the timeout",
      r: { ...applied("w-1"), appliedAt: ago(40) },
      w: {
        ...facts([node("w-1", { ready: "False" })], "Unavailable"),
        api: { state: "Unavailable", message: "refused", since: ago(30) },
      },
      changed: 60,
      state: "Joining",
      reason: "WorkloadAPIUnavailable",
      detail: /went away after its change and before it was seen working/,
    },
    {
      name: "API state unknown (NICO just started): nobody is blamed",
      w: { ...facts(undefined, "Unknown"), api: { state: "Unknown", message: "not checked yet", since: ago(650) } },
      changed: 700,
      state: "Joining",
      reason: "WorkloadAPIUnavailable",
    },
    {
      name: "Nodes not listed yet",
      w: facts(undefined),
      state: "Joining",
      reason: "WorkloadAPIUnavailable",
    },
  ]);
});

Deno.test("ages in messages are coarse, so status is not rewritten every second", () => {
  assert.deepEqual([age(0), age(59_000), age(60_000), age(119 * 60_000), age(3 * 3_600_000), age(72 * 3_600_000)], [
    "<1m",
    "<1m",
    "1m",
    "119m",
    "3h",
    "3d",
  ]);
});

Deno.test("workload conditions name what is wrong", () => {
  const reports = joinAll(
    [applied("cp-1", "controlPlane"), applied("w-1"), applied("w-2"), applied("w-3")],
    facts([
      node("cp-1"),
      node("w-1", { ready: "False", why: "KubeletNotReady", since: ago(180) }),
      node("w-3", { cordoned: true }),
    ]),
    60,
  );
  const conds = workloadConditions({
    workload: facts([
      node("cp-1"),
      node("w-1", { ready: "False", why: "KubeletNotReady", since: ago(180) }),
      node("w-3", { cordoned: true }),
    ]),
    server: "https://127.0.0.9:6443",
    nodes: reports,
    now: NOW,
  });
  const by = Object.fromEntries(conds.map((c) => [c.type, c]));
  assert.equal(by.WorkloadAPIAvailable!.status, "True");
  assert.match(by.WorkloadAPIAvailable!.message, /127\.0\.0\.9:6443/);
  assert.equal(by.NodesHealthy!.status, "False");
  assert.equal(by.NodesHealthy!.reason, "NodesNotReady");
  assert.equal(
    by.NodesHealthy!.message,
    "NotReady: w-1 (False: KubeletNotReady for 3m); missing: w-2 (no Node of that name); cordoned: w-3 (by someone else)",
  );
  assert.equal(by.ControlPlaneHealthy!.status, "True");

  const down = workloadConditions({ workload: facts([node("cp-1")], "Unavailable"), nodes: reports, now: NOW });
  assert.deepEqual(down.map((c) => [c.type, c.status]), [
    ["WorkloadAPIAvailable", "False"],
    ["NodesHealthy", "Unknown"],
    ["ControlPlaneHealthy", "Unknown"],
  ]);
  assert.match(down[0]!.message, /connection refused; unavailable for 1m/);
  assert.deepEqual(workloadConditions({ workload: { ...facts(undefined), disabled: true }, nodes: [], now: NOW }), []);
});

Deno.test("where Nodes name the configuration they run, a node is Ready only once its Node names its own", async (t) => {
  const want = "aaaaaaaaaaaaaaaa";
  const join2 = (w: WorkloadFacts, changedSecondsAgo = 60) =>
    joinAll([applied("w-1"), applied("w-2")], w, changedSecondsAgo, want);
  await t.step("the Node still names the old one: Joining, and why", () => {
    const [w1] = join2(
      facts([node("w-1", { configuration: "bbbbbbbbbbbbbbbb" }), node("w-2", { configuration: want })]),
    );
    assert.deepEqual([w1!.state, w1!.reason], ["Joining", "ConfigurationNotReported"]);
    assert.match(w1!.detail, /still names configuration bbbbbbbbbbbbbbbb; waiting for it to name aaaa/);
  });
  await t.step("it names the new one: Ready", () => {
    const [w1] = join2(facts([node("w-1", { configuration: want }), node("w-2", { configuration: want })]));
    assert.deepEqual([w1!.state, w1!.reason], ["Ready", "Joined"]);
    assert.match(w1!.detail, /runs configuration aaaa/);
  });
  await t.step("never named within the node timeout: Failed", () => {
    const [w1] = join2(facts([node("w-1"), node("w-2", { configuration: want })]), 700);
    assert.deepEqual([w1!.state, w1!.reason], ["Failed", "ConfigurationNotReported"]);
  });
  await t.step("no Node names any: NIO's run result is all there is", () => {
    const [w1] = join2(facts([node("w-1"), node("w-2")]));
    assert.deepEqual([w1!.state, w1!.reason], ["Ready", "Joined"]);
  });
});
