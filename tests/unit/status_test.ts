import assert from "node:assert/strict";
import type { NodeReport, NodeState } from "../../core/nodes/readiness.ts";
import { selectMachines } from "../../core/machines/selection.ts";
import { clusterStatus, computeStatus, type Problem, type StatusInput } from "../../core/status/cluster.ts";
import type { KubernetesClusterSpecInput } from "../../crds/kubernetescluster.ts";
import { cluster, machine } from "../../testing/objects.ts";

const NOW = new Date("2026-01-01T12:00:00Z");

function input(
  spec: KubernetesClusterSpecInput,
  machines: string[],
  states: Record<string, NodeState>,
  extra: Partial<StatusInput> = {},
): StatusInput {
  const c = cluster(spec);
  const selection = selectMachines({ cluster: c, machines: machines.map((n) => machine(n)), configurations: [] });
  const nodes: NodeReport[] = [
    ...selection.controlPlane.members.map((m) => ({ machine: m, plane: "controlPlane" as const })),
    ...selection.dataPlane.members.map((m) => ({ machine: m, plane: "dataPlane" as const })),
  ].map((n) => {
    const state = states[n.machine] ?? "Ready";
    return {
      ...n,
      state,
      upToDate: true,
      reason: state,
      detail: state === "Failed" ? "ApplyFailed: boom" : state === "Ready" ? "applied" : "Converging",
    };
  });
  return {
    generation: 3,
    previous: undefined,
    deleting: false,
    selection,
    nodes,
    bootstrap: selection.controlPlane.members[0],
    endpoint: "https://127.0.0.1:6443",
    kubeconfigSecret: "prod-kubeconfig",
    now: NOW,
    ...extra,
  };
}

const HA: KubernetesClusterSpecInput = {
  controlPlane: { machines: ["cp-1", "cp-2", "cp-3"] },
  dataPlane: { machines: ["w-1"] },
};
const ALL = ["cp-1", "cp-2", "cp-3", "w-1"];
const cond = (s: ReturnType<typeof computeStatus>, type: string) => s.conditions!.find((c) => c.type === type)!;

/** One case of a table: what it checks, told by its name. */
interface Case {
  name: string;
  check: () => void;
}

/** computeStatus: the phase, the plane counts and the messages a pass writes. */
const PHASES_COUNTS_MESSAGES: Case[] = [
  {
    name: "all ready",
    check: () => {
      const s = computeStatus(input(HA, ALL, {}));
      assert.equal(s.phase, "Ready");
      assert.deepEqual([s.controlPlane!.summary, s.dataPlane!.summary], ["3/3", "1/1"]);
      assert.equal(cond(s, "ControlPlaneReady").message, "3/3 control plane machines ready");
      assert.equal(cond(s, "Ready").status, "True");
      assert.equal(s.observedGeneration, 3);
      assert.ok(s.conditions!.every((c) => c.observedGeneration === 3));
    },
  },
  {
    name: "waiting names the nodes and what they wait for",
    check: () => {
      const s = computeStatus(input(HA, ALL, { "cp-2": "Applying", "cp-3": "Pending" }));
      assert.equal(s.phase, "Provisioning");
      assert.deepEqual(s.controlPlane!.readyMachines, ["cp-1"]);
      assert.equal(
        cond(s, "ControlPlaneReady").message,
        "1/3 control plane machines ready; waiting for cp-2 (Converging), cp-3 (Converging)",
      );
      assert.equal(cond(s, "Ready").reason, "WaitingForControlPlane");
    },
  },
  {
    name: "a failed node makes the cluster Failed and is named",
    check: () => {
      const s = computeStatus(input(HA, ALL, { "w-1": "Failed" }));
      assert.equal(s.phase, "Failed");
      assert.equal(cond(s, "DataPlaneReady").reason, "NodeFailed");
      assert.match(cond(s, "Ready").message, /w-1 \(ApplyFailed: boom\)/);
    },
  },
  {
    name: "no kubeconfig yet: not Ready, and no kubeconfigSecret in status",
    check: () => {
      const s = computeStatus(input(HA, ALL, {}, { kubeconfigSecret: undefined }));
      assert.equal(s.phase, "Provisioning");
      assert.equal(cond(s, "Ready").reason, "WaitingForKubeconfig");
      assert.equal(s.kubeconfigSecret, undefined);
    },
  },
  {
    name: "underprovisioned selector names the shortfall",
    check: () => {
      const s = computeStatus(input({ controlPlane: { count: 3, machineSelector: {} } }, ["a"], {}));
      const m = cond(s, "MachinesAvailable");
      assert.deepEqual([m.status, m.reason], ["False", "Underprovisioned"]);
      assert.match(m.message, /control plane: 1 of 3 machines available \(2 short/);
    },
  },
  {
    name: "a control plane below its requested size is not Ready, however healthy",
    check: () => {
      const s = computeStatus(input({ controlPlane: { count: 3, machineSelector: {} } }, ["a"], {}));
      const c = cond(s, "ControlPlaneReady");
      assert.deepEqual([c.status, c.reason], ["False", "Underprovisioned"]);
      assert.match(c.message, /1\/3 control plane machines ready: 1 of 3 requested/);
      assert.equal(cond(s, "Ready").status, "False");
      assert.notEqual(s.phase, "Ready");
      assert.deepEqual([s.controlPlane!.summary, s.controlPlane!.requested, s.controlPlane!.total], ["1/3", 3, 1]);
    },
  },
  {
    name: "workers below their requested size follow the same rule",
    check: () => {
      const spec = { controlPlane: { machines: ["cp-1"] }, dataPlane: { count: 2, machineSelector: {} } };
      const s = computeStatus(input(spec, ["cp-1", "w-1"], {}));
      const c = cond(s, "DataPlaneReady");
      assert.deepEqual([c.status, c.reason, s.dataPlane!.summary], ["False", "Underprovisioned", "1/2"]);
      assert.equal(cond(s, "Ready").reason, "WaitingForWorkers");
    },
  },
  {
    name: "nodes not evaluated (blocked): the plane message does not end in 'waiting for '",
    check: () => {
      const i = input(HA, ALL, {});
      const s = computeStatus({ ...i, nodes: [], blocked: { reason: "ResolvingRef", message: "resolving main" } });
      assert.doesNotMatch(cond(s, "ControlPlaneReady").message, /waiting for $/);
      assert.match(cond(s, "ControlPlaneReady").message, /not evaluated/);
    },
  },
  {
    name: "a node recovering from Failed mid-rollout brings the cluster to Updating, not Provisioning",
    check: () => {
      const i = input(HA, ALL, { "w-1": "Applying" });
      const nodes = i.nodes.map((n) => n.machine === "cp-3" ? { ...n, upToDate: false } : n);
      const s = computeStatus({ ...i, nodes, previous: { phase: "Failed" } });
      assert.equal(s.phase, "Updating");
      const first = computeStatus({ ...input(HA, ALL, { "w-1": "Applying" }), previous: { phase: "Failed" } });
      assert.equal(first.phase, "Provisioning", "every node on the first spec: still the first bring-up");
    },
  },
  {
    name: "a member that arrives during the first bring-up keeps the cluster Provisioning",
    check: () => {
      const i = input(HA, ALL, { "w-1": "Applying" });
      const nodes = i.nodes.map((n) => n.machine === "cp-1" ? { ...n, upToDate: false } : n);
      const s = computeStatus({ ...i, nodes, kubeconfigSecret: "c-kubeconfig", previous: { phase: "Provisioning" } });
      assert.equal(
        s.phase,
        "Provisioning",
        "never Ready yet: a cluster.nix change under applied nodes is not a rollout",
      );
    },
  },
  {
    name: "missing explicit machine is named",
    check: () => {
      const s = computeStatus(input({ controlPlane: { machines: ["a", "ghost"] } }, ["a"], {}));
      const m = cond(s, "MachinesAvailable");
      assert.equal(m.reason, "MachinesUnavailable");
      assert.match(m.message, /Machine ghost does not exist/);
    },
  },
  {
    name: "no workers requested is fine",
    check: () => {
      const s = computeStatus(input({ controlPlane: { machines: ["a"] } }, ["a"], {}));
      assert.deepEqual([cond(s, "DataPlaneReady").status, cond(s, "DataPlaneReady").reason], ["True", "NoWorkers"]);
    },
  },
  {
    name: "a bootstrap node held as the API endpoint is not shown as progress",
    check: () => {
      const why = "bootstrap node cp-1 is the API endpoint: set spec.controlPlaneEndpoint before removing it";
      const plan = {
        create: [],
        update: [],
        remove: [],
        pending: [],
        removing: ["cp-1"],
        updating: [],
        held: { machine: "cp-1", why },
        waiting: why,
      };
      const s = computeStatus(
        input(HA, ALL, {}, { rollout: { plan, paused: false, specHash: "h", controlPlaneSize: 3 } }),
      );
      const r = cond(s, "RollingOut");
      assert.deepEqual([r.status, r.reason], ["False", "RemovalHeld"]);
      assert.match(r.message, /^cp-1 stays: bootstrap node cp-1 is the API endpoint/);
    },
  },
  {
    name: "deleting",
    check: () => {
      const s = computeStatus(input(HA, ALL, {}, { deleting: true }));
      assert.equal(s.phase, "Deleting");
      assert.equal(cond(s, "Ready").reason, "Deleting");
    },
  },
];

Deno.test("status: phases, counts and messages", async (t) => {
  for (const c of PHASES_COUNTS_MESSAGES) await t.step(c.name, c.check);
});

Deno.test("lastTransitionTime moves only when a condition's status flips", () => {
  const first = computeStatus(input(HA, ALL, { "cp-2": "Applying" }));
  const later = new Date(NOW.getTime() + 60_000);
  const same = computeStatus(input(HA, ALL, { "cp-3": "Applying" }, { previous: first, now: later }));
  assert.equal(cond(same, "ControlPlaneReady").lastTransitionTime, cond(first, "ControlPlaneReady").lastTransitionTime);
  assert.notEqual(cond(same, "ControlPlaneReady").message, cond(first, "ControlPlaneReady").message);
  const flipped = computeStatus(input(HA, ALL, {}, { previous: first, now: later }));
  assert.equal(cond(flipped, "ControlPlaneReady").lastTransitionTime, "2026-01-01T12:01:00Z");
  assert.equal(cond(flipped, "DataPlaneReady").lastTransitionTime, "2026-01-01T12:00:00Z");
});

// What clusterStatus is given: a Ready cluster before, a problem the user must fix, and an error NICO retries.
const ready = computeStatus(input(HA, ALL, {}));
const foreign: Problem = {
  reason: "ForeignSecret",
  message: "Secret prod-ca exists but …; delete or rename it",
  blocking: true,
};
const error: Problem = {
  reason: "ReconcileError",
  message: "POST …: 500 InternalError: etcd timeout",
  blocking: false,
};

/** clusterStatus: every way a pass ends. */
const EXITS: Case[] = [
  {
    name: "a known problem mid-pass: Failed, Ready names it, the observations stay",
    check: () => {
      const s = clusterStatus({ kind: "pass", problem: foreign, ...input(HA, ALL, {}, { previous: ready }) });
      assert.equal(s.phase, "Failed");
      assert.deepEqual(cond(s, "Ready"), { ...cond(s, "Ready"), status: "False", reason: "ForeignSecret" });
      assert.equal(cond(s, "Ready").message, foreign.message);
      assert.equal(cond(s, "ControlPlaneReady").status, "True");
      assert.equal(s.controlPlane?.summary, "3/3");
    },
  },
  {
    name: "an unexpected error: Ready=False ReconcileError with the text, the phase as observed",
    check: () => {
      const s = clusterStatus({ kind: "pass", problem: error, ...input(HA, ALL, {}, { previous: ready }) });
      assert.equal(cond(s, "Ready").reason, "ReconcileError");
      assert.equal(cond(s, "Ready").message, error.message);
      assert.equal(s.phase, "Ready", "an error with nothing to roll out announces no rollout (Ready=False says it)");
      assert.deepEqual([cond(s, "Reconciling").status, cond(s, "Reconciling").reason], ["True", "ReconcileError"]);
      assert.equal(cond(s, "Stalled").status, "False", "NICO retries: not stalled");
    },
  },
  {
    name: "a pass cut short keeps the rollout and conditions it could not recompute",
    check: () => {
      const previous = {
        ...ready,
        rollout: { specHash: "h", upToDate: 4, total: 4, updating: [], pending: [], removing: [] },
      };
      const s = clusterStatus({ kind: "pass", problem: error, ...input(HA, ALL, {}, { previous }) });
      assert.deepEqual(s.rollout, previous.rollout);
    },
  },
  {
    name: "cut short by a lost race: no problem shown, a Ready cluster does not fall back to Provisioning",
    check: () => {
      const partial = input(HA, ALL, { "cp-2": "Applying" }, { previous: ready, kubeconfigSecret: undefined });
      const s = clusterStatus({ kind: "pass", cutShort: true, ...partial });
      assert.equal(s.phase, "Updating");
      assert.equal(cond(s, "Ready").reason, "WaitingForControlPlane");
      const plain = clusterStatus({ kind: "pass", ...partial });
      assert.equal(plain.phase, "Updating", "a cluster that was Ready is never Provisioning again");
    },
  },
  {
    name: "a cluster that was Ready and then Failed recovers through Updating, never Provisioning",
    check: () => {
      const failed = { ...ready, phase: "Failed" as const };
      const s = clusterStatus({ kind: "pass", ...input(HA, ALL, { "w-1": "Applying" }, { previous: failed }) });
      assert.equal(s.phase, "Updating");
      assert.equal(s.initialization?.provisioned, true);
      const fresh = clusterStatus({ kind: "pass", ...input(HA, ALL, { "w-1": "Applying" }, { previous: undefined }) });
      assert.equal(fresh.phase, "Provisioning", "a new cluster is Provisioning until it is first Ready");
      assert.equal(fresh.initialization, undefined);
    },
  },
  {
    name: "stopped before observing anything: Ready says why, the phase is never empty",
    check: () => {
      const base = { generation: 1, previous: undefined, now: NOW };
      const invalid = clusterStatus({
        kind: "stopped",
        problem: { reason: "InvalidSpec", message: "spec.controlPlane: Required", blocking: true },
        ...base,
      });
      assert.equal(invalid.phase, "Failed");
      assert.equal(cond(invalid, "Ready").reason, "InvalidSpec");
      const failedWrite = clusterStatus({ kind: "stopped", problem: error, ...base });
      assert.equal(failedWrite.phase, "Provisioning");
      const kept = clusterStatus({ kind: "stopped", problem: error, ...base, previous: ready });
      assert.equal(kept.phase, "Ready", "a passing API error does not rewrite the phase");
      assert.equal(cond(kept, "ControlPlaneReady").status, "True", "the other conditions stay as last observed");
    },
  },
  {
    name: "deleting: waiting names the configurations; an error during deletion shows in Ready",
    check: () => {
      const base = { generation: 1, previous: ready, now: NOW };
      const waiting = clusterStatus({ kind: "deleting", remaining: ["prod-cp-1", "prod-w-1"], ...base });
      assert.equal(waiting.phase, "Deleting");
      assert.match(
        cond(waiting, "Ready").message,
        /waiting for NIO to remove 2 configuration\(s\): prod-cp-1, prod-w-1/,
      );
      const failing = clusterStatus({ kind: "deleting", remaining: [], problem: error, ...base });
      assert.equal(failing.phase, "Deleting");
      assert.equal(cond(failing, "Ready").reason, "ReconcileError");
    },
  },
];

Deno.test("clusterStatus: every exit has a phase and says what stopped it", async (t) => {
  for (const c of EXITS) await t.step(c.name, c.check);
});
