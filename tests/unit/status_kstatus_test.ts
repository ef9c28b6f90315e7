/**
 * The status core against the kstatus conventions and spec progress:
 * `observedGeneration` only from a pass that evaluated that generation,
 * `Reconciling` while anything is in progress, `Stalled` when only the user
 * can help (never both), and `UpToDate`, `RollingOut`, `status.rollout` and
 * the `Updating` phase about nodes carrying the desired spec, not Node
 * health. Plans come from the real planner.
 */
import assert from "node:assert/strict";
import type { KubernetesClusterStatus } from "../../crds/kubernetescluster.ts";
import type { NodeReport, NodeState } from "../../core/nodes/readiness.ts";
import { planNodeOf, planRollout } from "../../core/rollout/plan.ts";
import { selectMachines } from "../../core/machines/selection.ts";
import { clusterStatus, computeStatus, type Problem, type StatusInput } from "../../core/status/cluster.ts";
import { condition } from "../../core/status/conditions.ts";
import { cluster, machine } from "../../testing/objects.ts";
import { QUIET } from "../rollout_input_kit.ts";

const NOW = new Date("2026-01-01T12:00:00Z");
const SPEC = { controlPlane: { machines: ["cp-1"] }, dataPlane: { machines: ["w-1", "w-2", "w-3"] } };
const ALL = ["cp-1", "w-1", "w-2", "w-3"];

type Node = Partial<NodeReport> & { state?: NodeState };

/** A pass over cp-1 and w-1..3 (generation 3), Ready and up to date unless `nodes` says otherwise. */
function pass(nodes: Record<string, Node> = {}, extra: Partial<StatusInput> & { paused?: boolean } = {}): StatusInput {
  const { paused = false, ...rest } = extra;
  const selection = selectMachines({
    cluster: cluster(SPEC),
    machines: ALL.map((m) => machine(m)),
    configurations: [],
  });
  const reports: NodeReport[] = ALL.map((m) => ({
    machine: m,
    plane: m.startsWith("cp") ? "controlPlane" as const : "dataPlane" as const,
    state: "Ready" as const,
    reason: "Joined",
    detail: "applied; Node Ready",
    upToDate: true,
    applied: true,
    ...nodes[m],
  }));
  const plan = planRollout({
    nodes: reports.map(planNodeOf),
    ...QUIET,
    departing: [],
    bootstrap: "cp-1",
    order: "WorkersFirst",
    maxUnavailable: 1,
    paused,
  });
  return {
    generation: 3,
    previous: undefined,
    deleting: false,
    selection,
    nodes: reports,
    bootstrap: "cp-1",
    endpoint: "https://127.0.0.1:6443",
    kubeconfigSecret: "prod-kubeconfig",
    rollout: { plan, paused, specHash: "h", controlPlaneSize: 1 },
    now: NOW,
    ...rest,
  };
}

const cond = (s: KubernetesClusterStatus, type: string) => s.conditions!.find((c) => c.type === type)!;
const pair = (s: KubernetesClusterStatus, type: string) => `${cond(s, type).status}/${cond(s, type).reason}`;

/** Settled at generation 2: the status a Ready cluster carries before its spec changes. */
const SETTLED: KubernetesClusterStatus = computeStatus({ ...pass(), generation: 2 });

Deno.test("a settled cluster: Ready, not Reconciling, not Stalled, observedGeneration its generation", () => {
  assert.equal(SETTLED.phase, "Ready");
  assert.equal(SETTLED.observedGeneration, 2);
  assert.deepEqual(
    [pair(SETTLED, "Ready"), pair(SETTLED, "Reconciling"), pair(SETTLED, "Stalled")],
    ["True/ClusterReady", "False/Settled", "False/NotStalled"],
  );
});

Deno.test("a pass that has not resolved the new ref keeps observedGeneration and says it is resolving", () => {
  const resolving = { reason: "ResolvingRef" as const, message: "resolving main of https://git.example.test/b.git" };
  // Nodes stay on the pair they carry, so they look up to date against what this pass rendered.
  const s = clusterStatus({ kind: "pass", ...pass({}, { previous: SETTLED, unresolved: resolving }) });
  assert.equal(s.observedGeneration, 2, "generation 3 was not evaluated");
  assert.ok(s.conditions!.every((c) => c.observedGeneration === 2), "nor is any condition about generation 3");
  assert.equal(pair(s, "Reconciling"), "True/ResolvingRef");
  assert.equal(pair(s, "UpToDate"), "Unknown/ResolvingRef", "no claim about a configuration not known yet");
  assert.notEqual(cond(s, "RollingOut").reason, "RolloutComplete");

  const fresh = clusterStatus({
    kind: "pass",
    ...pass({}, { nodes: [], blocked: resolving, unresolved: resolving, rollout: undefined }),
  });
  assert.equal(fresh.observedGeneration, undefined, "a new cluster has no evaluated generation yet");
  assert.equal(pair(fresh, "Reconciling"), "True/ResolvingRef");
  assert.equal(pair(fresh, "Stalled"), "False/NotStalled");
});

Deno.test("a ref that does not resolve stalls the cluster: evaluated, Stalled, nodes left on what they run", () => {
  const failed = { reason: "RefResolutionFailed" as const, message: "git ls-remote failed; nodes stay on abc" };
  const s = clusterStatus({ kind: "pass", ...pass({}, { previous: SETTLED, unresolved: failed }) });
  assert.equal(s.observedGeneration, 3);
  assert.deepEqual([pair(s, "Stalled"), pair(s, "Reconciling")], ["True/RefResolutionFailed", "False/Stalled"]);
  assert.equal(cond(s, "Ready").status, "True", "the cluster itself still works");
});

Deno.test("Reconciling while provisioning or rolling out, naming what it waits for", async (t) => {
  await t.step("first bring-up", () => {
    const s = computeStatus(pass({ "w-2": { state: "Applying", applied: false, detail: "Converging" } }, {
      kubeconfigSecret: undefined,
    }));
    assert.equal(s.phase, "Provisioning");
    assert.equal(pair(s, "Reconciling"), "True/Provisioning");
    assert.match(cond(s, "Reconciling").message, /waiting for w-2 \(Converging\)/);
  });
  await t.step("a spec change, before any node moved", () => {
    const behind = { upToDate: false };
    const s = computeStatus(
      pass({ "cp-1": behind, "w-1": behind, "w-2": behind, "w-3": behind }, { previous: SETTLED }),
    );
    assert.equal(s.phase, "Updating");
    assert.equal(pair(s, "Ready"), "False/RollingOut", "whoever waits for Ready waits for the rollout");
    assert.equal(pair(s, "Reconciling"), "True/RollingOut");
    assert.equal(pair(s, "UpToDate"), "False/RolloutPending");
    assert.deepEqual(s.rollout?.pending, ["w-1", "w-2", "w-3", "cp-1"]);
  });
  await t.step("paused with a change waiting", () => {
    const s = computeStatus(pass({ "w-1": { upToDate: false } }, { previous: SETTLED, paused: true }));
    assert.equal(pair(s, "Reconciling"), "True/Paused");
    assert.equal(pair(s, "Stalled"), "False/NotStalled");
    assert.deepEqual([s.phase, pair(s, "Ready")], ["Ready", "True/ClusterReady"], "a held change alarms nobody");
  });
  await t.step("waiting for Machines", () => {
    const spec = { controlPlane: { machines: ["cp-1"] }, dataPlane: { machineSelector: {}, count: 5 } };
    const selection = selectMachines({
      cluster: cluster(spec),
      machines: ALL.map((m) => machine(m)),
      configurations: [],
    });
    const s = computeStatus({ ...pass({}, { previous: SETTLED }), selection });
    assert.equal(pair(s, "Reconciling"), "True/WaitingForMachines");
  });
});

Deno.test("Stalled when only the user can help, and then never Reconciling", async (t) => {
  await t.step("a failed node halts the rollout", () => {
    const s = computeStatus(pass({
      "w-1": { state: "Failed", reason: "ApplyFailed", detail: "ApplyFailed: nix build failed", applied: false },
      "w-2": { upToDate: false },
    }, { previous: SETTLED }));
    assert.equal(s.phase, "Failed");
    assert.deepEqual([pair(s, "Stalled"), pair(s, "Reconciling")], ["True/NodeFailed", "False/Stalled"]);
    assert.match(cond(s, "Stalled").message, /w-1 \(ApplyFailed: nix build failed\).*halted at w-1/);
  });
  await t.step("a drain past its timeout halts the rollout", () => {
    const i = pass({ "w-1": { upToDate: false }, "w-2": { upToDate: false } }, { previous: SETTLED });
    const plan = { ...i.rollout!.plan, halted: { machine: "w-1", detail: "DrainTimeout: draining w-1 took longer" } };
    const s = computeStatus({ ...i, rollout: { ...i.rollout!, plan } });
    assert.equal(pair(s, "Stalled"), "True/RolloutHalted");
    assert.match(cond(s, "Stalled").message, /DrainTimeout/);
  });
  await t.step("a problem the user must fix, mid-pass", () => {
    const identity: Problem = { reason: "IdentityLost", message: "Secret prod-ca is missing", blocking: true };
    const s = clusterStatus({ kind: "pass", problem: identity, ...pass({}, { previous: SETTLED }) });
    assert.equal(s.observedGeneration, 3, "the verdict is about this generation");
    assert.deepEqual([pair(s, "Stalled"), pair(s, "Reconciling")], ["True/IdentityLost", "False/Stalled"]);
  });
  await t.step("an invalid spec, before anything is observed", () => {
    const invalid: Problem = { reason: "InvalidSpec", message: "spec.controlPlane: Required", blocking: true };
    const s = clusterStatus({ kind: "stopped", problem: invalid, generation: 3, previous: SETTLED, now: NOW });
    assert.equal(s.observedGeneration, 3);
    assert.equal(pair(s, "Stalled"), "True/InvalidSpec");
    const error: Problem = { reason: "ReconcileError", message: "500", blocking: false };
    const retry = clusterStatus({ kind: "stopped", problem: error, generation: 3, previous: SETTLED, now: NOW });
    assert.equal(retry.observedGeneration, 2, "an error before evaluating says nothing about generation 3");
    assert.equal(pair(retry, "Reconciling"), "True/ReconcileError");
  });
});

Deno.test("a lost race keeps observedGeneration and the progress conditions as they were", () => {
  const { rollout: _none, ...partial } = pass({}, { previous: SETTLED });
  const s = clusterStatus({ kind: "pass", cutShort: true, ...partial });
  assert.equal(s.observedGeneration, 2);
  assert.deepEqual(cond(s, "Reconciling"), cond(SETTLED, "Reconciling"));
});

Deno.test("Node health is not rollout progress", async (t) => {
  await t.step("a Node NotReady with no spec change: no Updating, no rollout, Ready=False", () => {
    const s = computeStatus(pass({
      "w-3": { state: "Joining", reason: "NodeNotReady", detail: "applied; Node w-3 not Ready (KubeletNotReady)" },
    }, { previous: SETTLED }));
    assert.equal(s.phase, "Ready", "the phase announces no rollout");
    assert.deepEqual([pair(s, "RollingOut"), pair(s, "UpToDate")], ["False/RolloutComplete", "True/UpToDate"]);
    assert.deepEqual([s.rollout?.upToDate, s.rollout?.updating], [4, []]);
    assert.equal(pair(s, "Ready"), "False/WaitingForWorkers");
    assert.equal(pair(s, "Reconciling"), "False/Settled", "nothing to roll out");
  });
  await t.step("the workload API away: no Updating either", () => {
    const away = {
      state: "Joining" as const,
      reason: "WorkloadAPIUnavailable",
      detail: "applied; the workload API...",
    };
    const s = computeStatus(pass({ "cp-1": away, "w-1": away, "w-2": away, "w-3": away }, {
      previous: SETTLED,
      workloadApi: { available: false, message: "connection refused" },
    }));
    assert.equal(s.phase, "Ready");
    assert.equal(pair(s, "Ready"), "False/WorkloadAPIUnavailable");
    assert.equal(pair(s, "RollingOut"), "False/RolloutComplete");
  });
  await t.step("recovering from a failure with nothing to roll out announces no rollout either", () => {
    const s = computeStatus(pass({
      "w-3": { state: "Joining", reason: "NodeNotReady", detail: "applied; Node w-3 not Ready (KubeletNotReady)" },
    }, { previous: { ...SETTLED, phase: "Failed" } }));
    assert.notEqual(s.phase, "Updating");
    assert.equal(pair(s, "Stalled"), "False/NotStalled");
  });
  await t.step("a node running the desired configuration whose Node never registered is up to date", () => {
    const s = computeStatus(pass({
      "w-2": { state: "Joining", reason: "NodeMissing", detail: "applied; waiting for Node w-2" },
    }, { kubeconfigSecret: undefined }));
    assert.equal(s.rollout?.upToDate, 4);
    assert.match(cond(s, "UpToDate").message, /^4\/4 nodes run the desired configuration/);
    assert.equal(s.dataPlane?.ready, 2, "health says it: 2 of 3 workers Ready");
  });
  await t.step("a node converging to the desired spec is what RollingOut and rollout.updating name", () => {
    const s = computeStatus(pass({
      "w-1": { state: "Applying", applied: false, detail: "Converging" },
      "w-2": { upToDate: false },
      "w-3": { state: "Joining", reason: "NodeNotReady", detail: "applied; Node w-3 not Ready" },
    }, { previous: SETTLED }));
    assert.equal(s.phase, "Updating");
    assert.deepEqual(s.rollout?.updating, ["w-1"], "w-3 is unhealthy, not updating");
    assert.match(cond(s, "RollingOut").message, /^updating w-1; 2\/4 up to date/);
  });
});

Deno.test("the single-control-plane advice appears only while the control plane is next", () => {
  const worker = computeStatus(pass({
    "w-1": { state: "Applying", applied: false, detail: "Converging" },
    "cp-1": { upToDate: false },
  }, { previous: SETTLED }));
  assert.doesNotMatch(cond(worker, "RollingOut").message, /interrupts the Kubernetes API/, "only a worker waits");
  const cp = computeStatus(pass({ "cp-1": { state: "Applying", applied: false, detail: "Converging" } }, {
    previous: SETTLED,
  }));
  assert.match(cond(cp, "RollingOut").message, /^updating cp-1.*with 1 control-plane node\(s\) an update/);
});

Deno.test("never Reconciling and Stalled at once, over every mix of node states", () => {
  const states: NodeState[] = ["Ready", "Pending", "Applying", "Joining", "Blocked", "Failed", "Removing"];
  for (const a of states) {
    for (const b of states) {
      for (const upToDate of [true, false]) {
        const s = computeStatus(pass({ "w-1": { state: a, applied: a === "Ready" }, "cp-1": { state: b, upToDate } }, {
          previous: SETTLED,
        }));
        const both = cond(s, "Reconciling").status === "True" && cond(s, "Stalled").status === "True";
        assert.ok(!both, `w-1 ${a}, cp-1 ${b} (upToDate ${upToDate})`);
        assert.ok(
          cond(s, "Reconciling").status === "True" || cond(s, "Stalled").status === "True" ||
            (s.phase === "Ready" && cond(s, "UpToDate").status === "True"),
          `w-1 ${a}, cp-1 ${b}: neither in progress nor stalled, yet not settled (${s.phase})`,
        );
      }
    }
  }
});

Deno.test("a remediation in flight is Reconciling; one NICO refuses is not Stalled", () => {
  const notReady: Node = { state: "Joining", reason: "NodeNotReady", detail: "applied; Node w-3 not Ready" };
  const replacing = condition("Remediating", "True", "Remediating", "w-3 (NodeNotReady) is replaced by w-4 (joining)");
  const inFlight = computeStatus(pass({ "w-3": notReady }, { previous: SETTLED, extra: [replacing] }));
  assert.equal(pair(inFlight, "Reconciling"), "True/Remediating");
  assert.match(cond(inFlight, "Reconciling").message, /replaced by w-4/);
  const tooMany = condition("Remediating", "False", "TooManyUnhealthy", "quorum");
  const refused = computeStatus(pass({ "w-3": notReady }, { previous: SETTLED, extra: [tooMany] }));
  assert.deepEqual([pair(refused, "Reconciling"), pair(refused, "Stalled")], ["False/Settled", "False/NotStalled"]);
});
