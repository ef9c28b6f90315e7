/**
 * The rollout planner: which node configurations to create, update or
 * delete in this pass so that no change ever takes the cluster down.
 *
 * The planner asks its rules (core/rollout/rules.ts) in order; the first that
 * decides ends the choosing, and the limits then narrow what was chosen:
 * - `paused`: touch nothing;
 * - `versionChangesControlPlaneFirst`: while a control-plane node's pending
 *   change changes its Kubernetes version, the pass is `ControlPlaneFirst`
 *   whatever `rollout.order` says (core/rollout/version_rules.ts);
 * - `parallelFirstBringUp`: Parallel provisioning, during the first bring-up
 *   only: every missing node is created at once (the flake's joins retry
 *   until the bootstrap server answers); once all exist, the rules below apply;
 * - `bootstrapFirst`: the bootstrap node comes first and alone; nothing else
 *   moves until it is up;
 * - `failedHalts`: a failed node halts the rollout: nothing else is touched
 *   until it recovers or the spec changes (then only failed nodes are
 *   re-rendered);
 * - `newWorkersAtOnce`: new workers are created as soon as the bootstrap node
 *   is up;
 * - `workersWithinBudget`: workers are updated at most `maxUnavailable` at a
 *   time (unavailable workers count against it), after the control plane
 *   under `ControlPlaneFirst`;
 * - `controlPlaneOneAtATime`: control-plane nodes are created and updated
 *   strictly one at a time, and only while every other control-plane node is
 *   available, so at least floor(n/2)+1 stay up; a departing control-plane
 *   node that is down (a remediated one) is removed before any other one is
 *   updated (its replacement may be created first: 3 → 4 → 3); after the
 *   workers under `WorkersFirst`;
 * - `releasedBeforeRemovals`, `oneWorkerLeavesAtATime`,
 *   `controlPlaneLeavesKeepingQuorum`: departures, one per plane at a time,
 *   each once the one before has left entirely and been released; a
 *   control-plane node only while the rest keep quorum, and never the
 *   bootstrap node while it is the API endpoint;
 * - the limit `outageHold`: while the workload cluster cannot be observed
 *   (`hold`), nothing is updated or removed (every node would look down and
 *   "cost nothing"), except a suspect of the outage, toward a newer spec
 *   (fix forward);
 * - the limit `versionSkewGuard`: a step that would break Kubernetes' version
 *   skew policy is not taken, and a break that exists halts the rollout
 *   (`VersionSkew`), but for control-plane steps that fix it forward;
 * - the limit `backupBeforeControlPlane`: where etcd backups are configured,
 *   a control-plane step waits for a snapshot younger than it, and halts
 *   when none can be taken (unless `BestEffort`; core/rollout/backuphold.ts).
 *
 * Pure; golden-tested by simulating many rounds (tests/unit/rollout_test.ts),
 * each rule on its own by a table (tests/unit/rollout_rules_test.ts). The
 * shapes are core/rollout/types.ts.
 *
 * @module
 */
import { LIMITS, rolloutPass, RULES } from "./rules.ts";
import type { PlanNode, RolloutInput, RolloutPlan } from "./types.ts";

export type {
  BackupGate,
  BackupHold,
  DepartingNode,
  DrainHold,
  PlanNode,
  ProvisioningMode,
  RolloutInput,
  RolloutOrder,
  RolloutPlan,
} from "./types.ts";

/**
 * The planner's view of a node from its readiness report: one mapping for the
 * reconciler and `nico plan`.
 *
 * @example
 * ```ts
 * import { planNodeOf } from "./plan.ts";
 * planNodeOf({ machine: "w-1", plane: "dataPlane", state: "Ready", upToDate: false, detail: "applied" });
 * // { machine: "w-1", plane: "dataPlane", exists: true, upToDate: false, available: true, failed: false, detail: "applied" }
 * ```
 */
export function planNodeOf(
  n: Omit<PlanNode, "exists" | "available" | "failed" | "detail"> & { state: string; detail: string },
): PlanNode {
  return {
    machine: n.machine,
    plane: n.plane,
    exists: n.state !== "Pending",
    upToDate: n.upToDate,
    available: n.state === "Ready",
    failed: n.state === "Failed",
    detail: n.detail,
    ...(n.suspect ? { suspect: true } : {}),
    ...(n.settling ? { settling: true } : {}),
    ...(n.changedInOutage ? { changedInOutage: true } : {}),
  };
}

/**
 * Plans one pass: the rules in order until one decides, then every limit.
 *
 * @example
 * ```ts
 * import { planRollout } from "./plan.ts";
 * const node = (machine: string) => ({ machine, plane: "controlPlane" as const, exists: false, upToDate: false, available: false, failed: false });
 * const plan = planRollout({
 *   nodes: [node("cp-1"), node("cp-2")],
 *   departing: [],
 *   bootstrap: "cp-1",
 *   order: "WorkersFirst",
 *   maxUnavailable: 1,
 *   paused: false,
 *   endpointIsBootstrap: true,
 *   provisioning: "BootstrapFirst",
 *   firstBringUp: true,
 *   hold: undefined,
 *   releasing: [],
 *   versions: undefined,
 *   backup: undefined,
 * });
 * plan.create; // ["cp-1"]: the bootstrap node first, the others once it is up
 * ```
 */
export function planRollout(i: RolloutInput): RolloutPlan {
  const { pass, draft } = rolloutPass(i);
  for (const rule of RULES) if (rule(pass, draft) === "decided") break;
  for (const limit of LIMITS) if (limit(pass, draft) === "decided") break;
  if (draft.reasons.length) draft.plan.waiting = draft.reasons.join("; ");
  return draft.plan;
}
