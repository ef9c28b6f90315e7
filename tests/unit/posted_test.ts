/**
 * A node's step ends on evidence from after its apply (core/nodes/posted.ts through core/nodes/joined.ts): where
 * the node does not name the configuration it runs, a Ready Node counts only once its kubelet posted a status after
 * NIO's apply ended, within a bounded window; the version check reads that post. Then when NICO looks again.
 */
import assert from "node:assert/strict";
import { joinReports } from "../../core/nodes/joined.ts";
import { KUBELET_POST_WINDOW_MS } from "../../core/nodes/posted.ts";
import type { NodeView } from "../../core/nodes/workload.ts";
import { viewNode } from "../../core/nodes/workload.ts";
import { nodeDeadlines } from "../../controllers/cluster/requeue.ts";
import { ago, applied, facts, node, NOW, TIMEOUT } from "../joined_kit.ts";

/** w-1 applied `appliedSecondsAgo`, its Node as given, asked for 1.37 unless `asked` is false; judged now. */
function judge(n: NodeView, appliedSecondsAgo = 10, o: { expected?: string; timeoutMs?: number } = {}) {
  const run = { ...applied("w-1"), appliedAt: ago(appliedSecondsAgo) };
  const [r] = joinReports({
    nodes: [{ machine: "w-1", run, changedAt: ago(120), node: n, asked: { minor: 37 }, ...o }],
    workload: facts([n]),
    now: NOW,
    timeoutMs: o.timeoutMs ?? TIMEOUT,
  });
  return r!;
}
const line = (r: { state: string; reason: string; detail: string }) => `${r.state} ${r.reason}: ${r.detail}`;

const old = { kubeletVersion: "v1.37.0", postedAt: ago(90) };

/** A case: its name, w-1's Node, how many seconds ago NIO's apply ended, the report. */
const CASES: [string, NodeView, number, string][] = [
  [
    "the old kubelet's Ready and version, nothing posted since the switch: waiting, saying for what",
    node("w-1", old),
    10,
    "Joining KubeletNotPosted: applied; w-1's kubelet has posted nothing since its switch (last at " +
    "2026-01-01T11:58:30Z): its Node is Ready as it was before; waiting up to 1m after the apply",
  ],
  [
    "no time on the Node at all: no evidence either",
    node("w-1", { kubeletVersion: "v1.37.0" }),
    10,
    "Joining KubeletNotPosted: applied; w-1's kubelet has posted nothing since its switch: its Node is Ready as " +
    "it was before; waiting up to 1m after the apply",
  ],
  [
    "posted after the apply: joined",
    node("w-1", { kubeletVersion: "v1.37.0", postedAt: ago(8) }),
    10,
    "Ready Joined: applied; Node Ready",
  ],
  [
    "posted in the second the apply ended (second precision: maybe the old kubelet, just before): waiting",
    node("w-1", { kubeletVersion: "v1.37.0", postedAt: ago(10) }),
    9.3,
    "Joining KubeletNotPosted: applied; w-1's kubelet has posted nothing since its switch (last at " +
    "2026-01-01T11:59:50Z): its Node is Ready as it was before; waiting up to 1m after the apply",
  ],
  [
    "posted in the second after the one the apply ended in: joined",
    node("w-1", { kubeletVersion: "v1.37.0", postedAt: ago(9) }),
    9.3,
    "Ready Joined: applied; Node Ready",
  ],
  [
    "posted after the apply with another version: the version check reads the post",
    node("w-1", { kubeletVersion: "v1.36.4", postedAt: ago(8) }),
    10,
    "Joining VersionNotReported: applied; Node w-1 is Ready but its kubelet reports v1.36.4; waiting for 1.37",
  ],
  [
    "nothing posted within the window: the Node counts as it stands (a switch that left the kubelet running)",
    node("w-1", old),
    KUBELET_POST_WINDOW_MS / 1000 + 1,
    "Ready Joined: applied; Node Ready",
  ],
  [
    "a NotReady Node is judged as before",
    node("w-1", { ready: "False", why: "KubeletNotReady", since: ago(5), postedAt: ago(5) }),
    10,
    "Joining NodeNotReady: applied; Node w-1 not Ready (KubeletNotReady) for <1m",
  ],
];

Deno.test("a Ready Node counts only with a kubelet post from after the apply", async (t) => {
  for (const [name, n, appliedAgo, want] of CASES) {
    await t.step(name, () => assert.equal(line(judge(n, appliedAgo)), want));
  }
  await t.step("where NIO does not say when the apply ended, a post from after NICO's change is needed", () => {
    const n = node("w-1", old);
    const [r] = joinReports({
      nodes: [{ machine: "w-1", run: applied("w-1"), changedAt: ago(10), node: n }],
      workload: facts([n]),
      now: NOW,
      timeoutMs: TIMEOUT,
    });
    assert.equal(r!.reason, "KubeletNotPosted");
  });
  await t.step("the window never outlasts the node timeout", () => {
    assert.equal(judge(node("w-1", old), 31, { timeoutMs: 30_000 }).state, "Ready");
  });
  await t.step("where the node names what it runs, its report is the evidence", () => {
    const named = node("w-1", { ...old, configuration: "abc" });
    const n = { ...named, name: "w-1" };
    const run = { ...applied("w-1"), appliedAt: ago(10) };
    const [r] = joinReports({
      nodes: [{ machine: "w-1", run, changedAt: ago(120), node: n, expected: "abc", asked: { minor: 37 } }],
      workload: facts([n]),
      now: NOW,
      timeoutMs: TIMEOUT,
    });
    assert.equal(line(r!), "Ready Joined: applied; Node Ready; runs configuration abc");
  });
});

Deno.test("a Node's post time: the Ready condition's heartbeat or transition, whichever is later", () => {
  const at = (heartbeat?: string, transition?: string) =>
    viewNode({
      metadata: { name: "w-1" },
      status: {
        conditions: [{
          type: "Ready",
          status: "True",
          ...(heartbeat ? { lastHeartbeatTime: heartbeat } : {}),
          ...(transition ? { lastTransitionTime: transition } : {}),
        }],
      },
    }, "d").postedAt?.toISOString();
  assert.equal(at("2026-01-01T12:00:05Z", "2026-01-01T11:00:00Z"), "2026-01-01T12:00:05.000Z");
  assert.equal(at(undefined, "2026-01-01T11:00:00Z"), "2026-01-01T11:00:00.000Z");
  assert.equal(at(), undefined);
});

Deno.test("NICO looks again when the window of a silent kubelet ends", () => {
  const r = { ...judge(node("w-1", { kubeletVersion: "v1.37.0", postedAt: ago(90) }), 10) };
  const next = nodeDeadlines({ nodes: [r], blocked: false, changedAt: new Map(), now: NOW, timeoutMs: TIMEOUT });
  assert.equal(next.after, KUBELET_POST_WINDOW_MS - 10_000 + 50);
  assert.match(next.why, /w-1's kubelet post window/);
});
