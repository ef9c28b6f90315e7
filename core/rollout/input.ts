/**
 * The planner's one input: {@link plannerInput} builds the {@link RolloutInput}
 * from the facts of a cluster, for the reconciler
 * (controllers/cluster/phases/configurations.ts) and `nico plan`
 * (cli/observe.ts) alike, so both plan from the same mapping. Every fact is
 * required (an explicit `undefined` where it is absent): a rule that needs a
 * new input adds a field here, and the compiler then names both builders.
 * Pure.
 *
 * @module
 */
import { planNodeOf } from "./plan.ts";
import type {
  BackupGate,
  DepartingNode,
  ProvisioningMode,
  RolloutInput,
  RolloutOrder,
  RolloutVersions,
} from "./types.ts";

/** A node's readiness report as far as the planner reads it (core/nodes/readiness.ts NodeReport has these). */
export type PlanReport = Parameters<typeof planNodeOf>[0];

/** The facts the planner's input is made of. */
export interface PlannerFacts {
  /** `spec.rollout` with its defaults filled (crds/defaults.ts). */
  rollout: { order: RolloutOrder; maxUnavailable: number; provisioning: ProvisioningMode };
  /** `spec.controlPlaneEndpoint` is set (else the bootstrap node is the API endpoint). */
  endpointSet: boolean;
  /** Each member's readiness report. */
  reports: readonly PlanReport[];
  /** Members whose pending change changes the Kubernetes version they are asked for. */
  changing: ReadonlySet<string>;
  departing: DepartingNode[];
  bootstrap: string;
  /** The one pause gate's answer (core/rollout/pause.ts isPaused). */
  paused: boolean;
  /** A kubeconfig was issued (`status.kubeconfigSecret`): the bootstrap node has been up. */
  kubeconfigIssued: boolean;
  /** Why the workload cluster cannot be observed now; `undefined`: it can, or nothing is known of it. */
  hold: string | undefined;
  /** Departed nodes not released yet. */
  releasing: string[];
  /** What the skew guard judges; `undefined`: no node reports a version. */
  versions: RolloutVersions | undefined;
  /** What the backup rule judges (core/rollout/backuphold.ts); `undefined`: backups are not configured. */
  backup: BackupGate | undefined;
}

/**
 * The planner's input from the facts.
 *
 * @example
 * ```ts
 * import { plannerInput } from "./input.ts";
 * const i = plannerInput({
 *   rollout: { order: "WorkersFirst", maxUnavailable: 1, provisioning: "Parallel" },
 *   endpointSet: false,
 *   reports: [{ machine: "cp-1", plane: "controlPlane", state: "Pending", upToDate: false, detail: "new" }],
 *   changing: new Set(),
 *   departing: [],
 *   bootstrap: "cp-1",
 *   paused: false,
 *   kubeconfigIssued: false,
 *   hold: undefined,
 *   releasing: [],
 *   versions: undefined,
 *   backup: undefined,
 * });
 * [i.firstBringUp, i.endpointIsBootstrap, i.nodes[0]?.exists]; // [true, true, false]
 * ```
 */
export function plannerInput(f: PlannerFacts): RolloutInput {
  return {
    nodes: f.reports.map(planNodeOf).map((n) => (f.changing.has(n.machine) ? { ...n, versionChange: true } : n)),
    departing: f.departing,
    bootstrap: f.bootstrap,
    order: f.rollout.order,
    maxUnavailable: f.rollout.maxUnavailable,
    paused: f.paused,
    endpointIsBootstrap: !f.endpointSet,
    provisioning: f.rollout.provisioning,
    // No kubeconfig issued yet: the bootstrap node has never been up, so no running node can be disturbed.
    firstBringUp: !f.kubeconfigIssued,
    hold: f.hold,
    releasing: f.releasing,
    versions: f.versions,
    backup: f.backup,
  };
}
