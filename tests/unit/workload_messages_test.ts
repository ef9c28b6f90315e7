/**
 * What the workload cluster's messages say, pure: a NodeNotReady halt names
 * the deadline that fired, and before a kubeconfig exists the Node
 * conditions say so instead of blaming the workload API.
 */
import assert from "node:assert/strict";
import { joinReports, type WorkloadFacts } from "../../core/nodes/joined.ts";
import type { NodeReport } from "../../core/nodes/readiness.ts";
import { workloadConditions } from "../../core/status/workload.ts";

const NOW = new Date("2026-01-01T12:00:00Z");
const ago = (s: number) => new Date(NOW.getTime() - s * 1000);

Deno.test("a NodeNotReady halt names the deadline that fired, as written", async (t) => {
  const cases = [
    {
      name: "counted from the change",
      changed: 50,
      since: 3600,
      detail: "NodeNotReady: Node w-1 not Ready within 40s of its last change (the node timeout) (KubeletNotReady)",
    },
    {
      name: "counted from the Node's last transition",
      changed: 3600,
      since: 45,
      detail: "NodeNotReady: Node w-1 not Ready for more than 40s (the node timeout) (KubeletNotReady)",
    },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      const workload: WorkloadFacts = {
        api: { state: "Available", message: "ok", since: ago(7200) },
        nodes: new Map([["w-1", {
          name: "w-1",
          ready: "False",
          why: "KubeletNotReady",
          since: ago(c.since),
          cordoned: false,
        }]]),
      };
      const run: NodeReport = {
        machine: "w-1",
        plane: "dataPlane",
        state: "Ready",
        reason: "Applied",
        detail: "applied",
        upToDate: true,
      };
      const [w1] = joinReports({
        nodes: [{ machine: "w-1", run, node: workload.nodes?.get("w-1"), changedAt: ago(c.changed) }],
        workload,
        now: NOW,
        timeoutMs: 40_000,
      });
      assert.deepEqual([w1?.state, w1?.detail], ["Failed", c.detail]);
    });
  }
});

Deno.test("before a kubeconfig exists the Node conditions wait for it, not for the workload API", () => {
  const early = workloadConditions({
    workload: { api: { state: "Unknown", message: "no kubeconfig issued yet", since: NOW }, hasKubeconfig: false },
    nodes: [],
    now: NOW,
  });
  assert.deepEqual(early.map((c) => `${c.type}=${c.status}/${c.reason}`), [
    "WorkloadAPIAvailable=Unknown/NotChecked",
    "NodesHealthy=Unknown/NoKubeconfig",
    "ControlPlaneHealthy=Unknown/NoKubeconfig",
  ]);
  const later = workloadConditions({
    workload: { api: { state: "Unavailable", message: "connection refused", since: NOW }, hasKubeconfig: true },
    nodes: [],
    now: NOW,
  });
  assert.equal(later.find((c) => c.type === "NodesHealthy")?.reason, "WorkloadAPIUnavailable");
});
