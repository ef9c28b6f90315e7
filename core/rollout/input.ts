/**
 * The planner's one input: {@link plannerInput} builds the {@link RolloutInput}
 * from the facts of a cluster, for the reconciler
 * (controllers/cluster/phases/configurations.ts) and `nico plan`
 * (cli/observe.ts) alike, so both plan from the same mapping. Every fact is
 * required (an explicit `undefined` where it is absent): a rule that needs a
 * new input adds a field to RolloutInput (core/rollout/types.ts), which makes
 * it a required fact here, and the compiler then names both builders. So a
 * new input takes four files: types.ts, the rule, and the two builders.
 * Pure.
 *
 * @module
 */
import { planNodeOf } from "./plan.ts";
import type { ProvisioningMode, RolloutInput, RolloutOrder } from "./types.ts";

/** A node's readiness report as far as the planner reads it (core/nodes/readiness.ts NodeReport has these). */
export type PlanReport = Parameters<typeof planNodeOf>[0];

/** The inputs the facts give as they are: every field of {@link RolloutInput} but those mapped below. */
type PassedThrough = Omit<
  RolloutInput,
  "nodes" | "order" | "maxUnavailable" | "provisioning" | "endpointIsBootstrap" | "firstBringUp"
>;

/**
 * The facts the planner's input is made of: what is mapped (the spec's rollout settings, the endpoint, the
 * reports, the kubeconfig), and every other field of {@link RolloutInput} as it is (the departing nodes, the
 * bootstrap node, the pause, the outage hold, the nodes still releasing, the versions). A new field of
 * RolloutInput is thus a new required fact here, and the compiler names both builders.
 */
export interface PlannerFacts extends PassedThrough {
  /** `spec.rollout` with its defaults filled (crds/defaults.ts). */
  rollout: { order: RolloutOrder; maxUnavailable: number; provisioning: ProvisioningMode };
  /** `spec.controlPlaneEndpoint` is set (else the bootstrap node is the API endpoint). */
  endpointSet: boolean;
  /** Each member's readiness report. */
  reports: readonly PlanReport[];
  /** Members whose pending change changes the Kubernetes version they are asked for. */
  changing: ReadonlySet<string>;
  /** A kubeconfig was issued (`status.kubeconfigSecret`): the bootstrap node has been up. */
  kubeconfigIssued: boolean;
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
  const { rollout, endpointSet, reports, changing, kubeconfigIssued, ...through } = f;
  return {
    ...through,
    nodes: reports.map(planNodeOf).map((n) => (changing.has(n.machine) ? { ...n, versionChange: true } : n)),
    order: rollout.order,
    maxUnavailable: rollout.maxUnavailable,
    endpointIsBootstrap: !endpointSet,
    provisioning: rollout.provisioning,
    // No kubeconfig issued yet: the bootstrap node has never been up, so no running node can be disturbed.
    firstBringUp: !kubeconfigIssued,
  };
}
