/**
 * The planner's one input (core/rollout/input.ts): the reconciler and `nico plan` build it with the same function,
 * and the CLI reads the pause and the halt the controller wrote into status.rollout as data.
 */
import assert from "node:assert/strict";
import { type PlannerFacts, plannerInput } from "../../core/rollout/input.ts";
import { planRollout } from "../../core/rollout/plan.ts";
import { rolloutState } from "../../cli/get.ts";
import { clusterView } from "../../cli/observe.ts";
import { planInputOf } from "../../cli/plan.ts";
import type { KubernetesCluster } from "../../crds/kubernetescluster.ts";

const GATE = { policy: "Required" as const, taking: true, since: new Map([["cp-1", 1_000]]), now: 2_000 };
const FACTS: PlannerFacts = {
  rollout: { order: "ControlPlaneFirst", maxUnavailable: 2, provisioning: "Parallel" },
  endpointSet: true,
  reports: [
    { machine: "cp-1", plane: "controlPlane", state: "Ready", upToDate: false, detail: "applied" },
    { machine: "w-1", plane: "dataPlane", state: "Failed", upToDate: true, detail: "ApplyFailed", suspect: true },
    { machine: "w-2", plane: "dataPlane", state: "Pending", upToDate: false, detail: "new" },
  ],
  changing: new Set(["cp-1"]),
  departing: [{ machine: "w-9", plane: "dataPlane", deleting: false }],
  bootstrap: "cp-1",
  paused: true,
  kubeconfigIssued: true,
  hold: "the workload API cannot be read",
  releasing: ["w-8"],
  versions: undefined,
  backup: GATE,
};

Deno.test("plannerInput: every fact reaches the planner's input, mapped once", () => {
  assert.deepEqual(plannerInput(FACTS), {
    nodes: [
      {
        machine: "cp-1",
        plane: "controlPlane",
        exists: true,
        upToDate: false,
        available: true,
        failed: false,
        detail: "applied",
        versionChange: true,
      },
      {
        machine: "w-1",
        plane: "dataPlane",
        exists: true,
        upToDate: true,
        available: false,
        failed: true,
        detail: "ApplyFailed",
        suspect: true,
      },
      {
        machine: "w-2",
        plane: "dataPlane",
        exists: false,
        upToDate: false,
        available: false,
        failed: false,
        detail: "new",
      },
    ],
    departing: [{ machine: "w-9", plane: "dataPlane", deleting: false }],
    bootstrap: "cp-1",
    order: "ControlPlaneFirst",
    maxUnavailable: 2,
    paused: true,
    endpointIsBootstrap: false,
    provisioning: "Parallel",
    firstBringUp: false,
    hold: "the workload API cannot be read",
    releasing: ["w-8"],
    versions: undefined,
    backup: GATE,
  });
  const fresh = plannerInput({ ...FACTS, endpointSet: false, kubeconfigIssued: false });
  assert.deepEqual([fresh.endpointIsBootstrap, fresh.firstBringUp], [true, true]);
});

const T = "2026-01-01T00:00:00Z";
function cluster(rollout: NonNullable<KubernetesCluster["status"]>["rollout"], paused = false): KubernetesCluster {
  return {
    apiVersion: "nico.homystack.com/v1alpha1",
    kind: "KubernetesCluster",
    metadata: { name: "c", namespace: "ns", uid: "u", creationTimestamp: T },
    spec: { paused, rollout: { order: "WorkersFirst", maxUnavailable: 1 } },
    status: {
      bootstrapNode: "cp-1",
      controlPlane: { machines: ["cp-1"] },
      dataPlane: { machines: ["w-1", "w-2"] },
      rollout,
      // A message that names another node: the CLI must not read the halt out of it.
      conditions: [{
        type: "RollingOut",
        status: "False",
        reason: "RolloutStalled",
        message: "halted at somewhere-else (x)",
        lastTransitionTime: T,
      }],
    },
  } as unknown as KubernetesCluster;
}

Deno.test("nico get reads the halt and the pause from status.rollout, not from a message or the spec", () => {
  const halted = { upToDate: 1, total: 3, pending: ["w-2"], halted: { node: "w-1", detail: "ApplyFailed" } };
  assert.deepEqual(rolloutState(cluster(halted)), { text: "halted at w-1, 1 held", paint: "red" });
  const paused = { upToDate: 1, total: 3, pending: ["w-1", "w-2"], paused: true };
  assert.deepEqual(rolloutState(cluster(paused)), { text: "paused, 2 held", paint: "yellow" });
  // spec.paused set, but no pass wrote the pause yet: the CLI says what the controller decided.
  const pending = { upToDate: 1, total: 3, pending: ["w-1", "w-2"] };
  assert.deepEqual(rolloutState(cluster(pending, true)), { text: "1/3, 2 pending", paint: "yellow" });
});

Deno.test("nico plan builds the planner's input as the reconciler does, the pause read from status", () => {
  const now = new Date(T);
  const v = clusterView(cluster({ upToDate: 0, total: 3, pending: ["w-1", "w-2"], paused: true }), [], [], now);
  assert.equal(v.paused, true);
  assert.equal(v.halted, false, "no status.rollout.halted: not halted, whatever a message says");
  const input = planInputOf(v);
  assert.deepEqual(
    { ...input, nodes: input.nodes.map((n) => n.machine) },
    {
      nodes: ["cp-1", "w-1", "w-2"],
      departing: [],
      bootstrap: "cp-1",
      order: "WorkersFirst",
      maxUnavailable: 1,
      paused: true,
      endpointIsBootstrap: true,
      provisioning: "Parallel",
      firstBringUp: true,
      hold: undefined,
      releasing: [],
      versions: undefined,
      backup: undefined,
    },
  );
  assert.deepEqual(planRollout(input).create, [], "paused: nothing is created");
});
