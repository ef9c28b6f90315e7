/**
 * The phase is honest: `Failed` exactly while `Stalled` is True (`Deleting`
 * aside), whatever halted the rollout, so the PHASE column never says `Ready`
 * or `Updating` beside a halt. One rule (`honestPhase`), a table of the ways a
 * pass can halt or not, with plans from the real planner.
 */
import assert from "node:assert/strict";
import type { KubernetesClusterStatus, Phase } from "../../crds/kubernetescluster.ts";
import type { NodeReport } from "../../core/nodes/readiness.ts";
import { planNodeOf, planRollout } from "../../core/rollout/plan.ts";
import type { RolloutPlan } from "../../core/rollout/types.ts";
import { selectMachines } from "../../core/machines/selection.ts";
import { clusterStatus, computeStatus, honestPhase, type StatusInput } from "../../core/status/cluster.ts";
import { cluster, machine } from "../../testing/objects.ts";
import { QUIET } from "../rollout_input_kit.ts";

const NOW = new Date("2026-01-01T12:00:00Z");
const ALL = ["v-c", "v-w1", "v-w2"];
const SPEC = { controlPlane: { machines: ["v-c"] }, dataPlane: { machines: ["v-w1", "v-w2"] } };

/** A pass over v-c, v-w1 and v-w2, Ready and up to date unless `nodes` says otherwise; `plan` edits the plan. */
function pass(
  nodes: Record<string, Partial<NodeReport>> = {},
  plan: (p: RolloutPlan) => RolloutPlan = (p) => p,
  extra: Partial<StatusInput> = {},
): StatusInput {
  const selection = selectMachines({
    cluster: cluster(SPEC),
    machines: ALL.map((m) => machine(m)),
    configurations: [],
  });
  const reports: NodeReport[] = ALL.map((m) => ({
    machine: m,
    plane: m === "v-c" ? "controlPlane" as const : "dataPlane" as const,
    state: "Ready" as const,
    reason: "Joined",
    detail: "applied; Node Ready",
    upToDate: true,
    applied: true,
    ...nodes[m],
  }));
  const planned = planRollout({
    nodes: reports.map(planNodeOf),
    ...QUIET,
    departing: [],
    bootstrap: "v-c",
    order: "WorkersFirst",
    maxUnavailable: 1,
    paused: false,
  });
  return {
    generation: 2,
    previous: SETTLED,
    deleting: false,
    selection,
    nodes: reports,
    bootstrap: "v-c",
    endpoint: "https://127.0.0.1:6443",
    kubeconfigSecret: "c-kubeconfig",
    rollout: { plan: plan(planned), paused: false, specHash: "h", controlPlaneSize: 1 },
    now: NOW,
    ...extra,
  };
}

const SETTLED: KubernetesClusterStatus = { phase: "Ready", initialization: { provisioned: true } };
const skew = (machine: string) => (p: RolloutPlan): RolloutPlan => ({
  ...p,
  halted: {
    machine,
    reason: "VersionSkew",
    detail: `${machine}'s kubelet 1.38.0 is newer than v-c's API server 1.37.2`,
  },
});
const stalled = (s: KubernetesClusterStatus) => s.conditions?.find((c) => c.type === "Stalled")?.status === "True";

const ROWS: { name: string; status: () => KubernetesClusterStatus; phase: Phase }[] = [
  { name: "settled", status: () => computeStatus(pass()), phase: "Ready" },
  {
    name: "every node switched, then the skew guard halts (nothing left to roll out)",
    status: () => computeStatus(pass({}, skew("v-w1"))),
    phase: "Failed",
  },
  {
    name: "the skew guard halts at the first worker, work left",
    status: () => computeStatus(pass({ "v-w2": { upToDate: false }, "v-c": { upToDate: false } }, skew("v-w1"))),
    phase: "Failed",
  },
  {
    name: "a drain timed out (RolloutHalted)",
    status: () =>
      computeStatus(pass({ "v-w1": { upToDate: false } }, (p) => ({
        ...p,
        update: [],
        halted: { machine: "v-w1", detail: "drain of v-w1 timed out" },
      }))),
    phase: "Failed",
  },
  {
    name: "a node failed",
    status: () => computeStatus(pass({ "v-w1": { state: "Failed", detail: "ApplyFailed", applied: false } })),
    phase: "Failed",
  },
  {
    name: "spec.version asks for a downgrade",
    status: () => computeStatus(pass({}, undefined, { versions: { status: {}, downgrade: "1.36 < 1.37" } })),
    phase: "Failed",
  },
  {
    name: "a block that stalls (no gitRepo)",
    status: () => computeStatus(pass({}, undefined, { blocked: { reason: "NoGitRepo", message: "no gitRepo" } })),
    phase: "Failed",
  },
  {
    name: "a block that lifts itself (no control-plane Machine yet) is no halt",
    status: () =>
      computeStatus(
        pass({}, undefined, { blocked: { reason: "NoControlPlane", message: "waiting for control-plane Machines" } }),
      ),
    phase: "Ready",
  },
  {
    name: "a rollout under way, nothing halted",
    status: () => computeStatus(pass({ "v-w1": { state: "Applying", applied: false, detail: "Converging" } })),
    phase: "Updating",
  },
  {
    name: "a Node NotReady with nothing to roll out is health, not a halt",
    status: () =>
      computeStatus(pass({ "v-w1": { state: "Joining", reason: "NodeNotReady", detail: "applied; not Ready" } })),
    phase: "Ready",
  },
  {
    name: "the halt lifted, nothing left: back to Ready",
    status: () => computeStatus(pass({}, undefined, { previous: { ...SETTLED, phase: "Failed" } })),
    phase: "Ready",
  },
  {
    name: "a pass cut short by a race keeps the halt it had, and its phase",
    status: () => {
      const halted = computeStatus(pass({}, skew("v-w1")));
      return clusterStatus({
        kind: "pass",
        cutShort: true,
        ...pass({}, undefined, { previous: halted, rollout: undefined }),
      });
    },
    phase: "Failed",
  },
  {
    name: "a stopped pass with a problem the user must fix",
    status: () =>
      clusterStatus({
        kind: "stopped",
        problem: { reason: "InvalidSpec", message: "bad", blocking: true },
        generation: 2,
        previous: SETTLED,
        now: NOW,
      }),
    phase: "Failed",
  },
  {
    name: "deleting while halted",
    status: () => computeStatus(pass({}, skew("v-w1"), { deleting: true })),
    phase: "Deleting",
  },
];

Deno.test("the phase: Failed exactly while Stalled is True (Deleting aside)", async (t) => {
  for (const row of ROWS) {
    await t.step(row.name, () => {
      const s = row.status();
      assert.equal(s.phase, row.phase);
      if (s.phase !== "Deleting") assert.equal(s.phase === "Failed", stalled(s), "the phase agrees with Stalled");
      if (stalled(s)) {
        const ready = s.conditions?.find((c) => c.type === "Ready");
        assert.equal(ready?.status, "False", "a halted cluster is never Ready");
      }
    });
  }
});

Deno.test("honestPhase: the rule by itself", () => {
  const c = (status: string) => [{ type: "Stalled", status }];
  const table: [Phase, string, Phase][] = [
    ["Ready", "True", "Failed"],
    ["Updating", "True", "Failed"],
    ["Provisioning", "True", "Failed"],
    ["Deleting", "True", "Deleting"],
    ["Failed", "False", "Ready"],
    ["Ready", "False", "Ready"],
    ["Updating", "Unknown", "Updating"],
  ];
  for (const [observed, s, want] of table) assert.equal(honestPhase(observed, c(s)), want, `${observed}, Stalled ${s}`);
  assert.equal(honestPhase("Failed", [], "Updating"), "Updating", "the fallback when nothing backs Failed");
});
