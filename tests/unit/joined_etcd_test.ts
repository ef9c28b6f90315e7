/**
 * A control-plane node whose Node is Ready is Joined only once etcd's own look, taken after its change, finds its
 * member a healthy voter (core/nodes/joined.ts), where NICO sees etcd: the next control-plane step never starts
 * while the member of the one before is still restarting or catching up.
 */
import assert from "node:assert/strict";
import type { NodeFacts } from "../../core/nodes/facts.ts";
import { joinReports } from "../../core/nodes/joined.ts";
import { ago, applied, facts, node, NOW, TIMEOUT } from "../joined_kit.ts";

/** cp-1 applied `appliedSecondsAgo`, changed `changedSecondsAgo`, judged with what etcd said of it. */
function judge(etcd: NodeFacts["etcd"], changedSecondsAgo = 60, appliedSecondsAgo = 30) {
  const run = { ...applied("cp-1", "controlPlane"), appliedAt: ago(appliedSecondsAgo) };
  // Its kubelet posted a second after the apply (core/nodes/posted.ts).
  const posted = node("cp-1", { postedAt: ago(appliedSecondsAgo - 1) });
  const [r] = joinReports({
    nodes: [{ machine: "cp-1", run, changedAt: ago(changedSecondsAgo), node: posted, etcd }],
    workload: facts([node("cp-1")]),
    now: NOW,
    timeoutMs: TIMEOUT,
  });
  return `${r!.state} ${r!.reason}: ${r!.detail}`;
}

const healthy = { healthy: true, isLearner: false };

Deno.test("etcd's look decides when a control-plane node is joined", async (t) => {
  const cases: [string, NodeFacts["etcd"], string, number?][] = [
    ["NICO does not see etcd: the Node decides, as before", undefined, "Ready Joined: applied; Node Ready"],
    [
      "a look after its apply finds a healthy voter",
      { seenAt: ago(5), member: healthy },
      "Ready Joined: applied; Node Ready",
    ],
    [
      "the last look began before it applied",
      { seenAt: ago(40), member: healthy },
      "Joining EtcdMemberNotReady: applied; Node Ready; waiting for a look at etcd taken after its change",
    ],
    [
      "no member on its address",
      { seenAt: ago(5) },
      "Joining EtcdMemberNotReady: applied; Node Ready; no etcd member is on its address",
    ],
    [
      "a learner",
      { seenAt: ago(5), member: { healthy: true, isLearner: true } },
      "Joining EtcdMemberNotReady: applied; Node Ready; its etcd member is still a learner",
    ],
    [
      "a member that does not answer",
      { seenAt: ago(5), member: { healthy: false, isLearner: false } },
      "Joining EtcdMemberNotReady: applied; Node Ready; its etcd member does not answer as a healthy member",
    ],
    [
      "still not healthy at the node timeout: Failed, naming why",
      { seenAt: ago(5), member: { healthy: false, isLearner: false } },
      "Failed EtcdMemberNotReady: EtcdMemberNotReady: Node cp-1 is Ready but its etcd member does not answer as a " +
      "healthy member 10m after it applied (the node timeout)",
      TIMEOUT / 1000 + 60,
    ],
  ];
  for (const [name, etcd, want, changed] of cases) {
    await t.step(name, () => assert.equal(judge(etcd, changed ?? 60, changed ? changed - 10 : 30), want));
  }
});
