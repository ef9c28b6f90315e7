/**
 * Whether NICO is still working on the cluster, and whether it is stuck:
 * the `Reconciling` and `Stalled` conditions that kstatus (and Flux, and
 * anything else built on `sigs.k8s.io/cli-utils`) reads, and spec progress:
 * which nodes run the desired configuration. Pure.
 *
 * The rules: `Stalled=True` when NICO cannot go on without the user (a
 * problem the user must fix, a failed node, a halted rollout, a ref that does
 * not resolve, a `spec.version` lower than the control plane runs); otherwise `Reconciling=True` while anything is in progress
 * (provisioning, a rollout, a ref being resolved, Machines awaited, a paused
 * change, a remediation in flight); never both. A health problem with
 * nothing to roll out (a Node NotReady, the workload API away) is neither:
 * `Ready=False` says it; nor is a remediation NICO refuses (too many
 * unhealthy, quorum): `Remediating=False` says why and what to do, and a
 * node down past the node timeout is `Failed` (Stalled) as without it.
 *
 * @module
 */
import { condition, type ConditionInput, listNames, type ReasonOf } from "./conditions.ts";
import { stalls } from "../../crds/conditions/mod.ts";
import type { Phase } from "../../crds/kubernetescluster.ts";
import type { NodeReport } from "../nodes/readiness.ts";
import type { RolloutPlan } from "../rollout/plan.ts";
import type { Blocked, Unresolved } from "./input.ts";

/**
 * The node runs the configuration NICO wants now: its configuration carries the desired spec and NIO applied
 * it. Whether its Node is Ready does not matter here (that is health, not progress).
 *
 * @example
 * ```ts
 * import { runsDesired } from "./progress.ts";
 * const n = { machine: "w-1", plane: "dataPlane" as const, state: "Joining" as const, reason: "NodeMissing", detail: "applied; waiting for Node w-1", upToDate: true, applied: true };
 * runsDesired(n); // true
 * runsDesired({ ...n, state: "Applying", applied: false }); // false
 * ```
 */
export function runsDesired(n: NodeReport): boolean {
  return n.upToDate && (n.applied ?? n.state === "Ready");
}

/**
 * Nodes whose configuration carries the desired spec that NIO has not applied yet (failed ones aside).
 *
 * @example
 * ```ts
 * import { inFlight } from "./progress.ts";
 * const n = { machine: "w-1", plane: "dataPlane" as const, state: "Applying" as const, reason: "Applying", detail: "Converging", upToDate: true };
 * inFlight([n, { ...n, machine: "w-2", state: "Ready" }]); // ["w-1"]
 * ```
 */
export function inFlight(nodes: NodeReport[]): string[] {
  return nodes.filter((n) => n.upToDate && !runsDesired(n) && n.state !== "Failed" && n.state !== "Pending")
    .map((n) => n.machine).sort();
}

/** What {@link progressConditions} reads: what `computeStatus` already worked out. */
export interface ProgressInput {
  phase: Phase;
  ready: ConditionInput;
  machines: ConditionInput;
  nodes: NodeReport[];
  plan?: RolloutPlan | undefined;
  /** The `RollingOut` condition, when the pass planned a rollout. */
  rolling?: ConditionInput | undefined;
  paused: boolean;
  /** Why the pass stopped before it could render nodes: a reason that stalls (crds/conditions) makes it Stalled. */
  blocked?: Blocked | undefined;
  unresolved?: Unresolved | undefined;
  /** The `Remediating` condition, when remediation is on: True makes the cluster Reconciling. */
  remediating?: ConditionInput | undefined;
  /** Why `spec.version` is not rolled out: it asks for a lower minor than the control plane runs. */
  downgrade?: string | undefined;
}

/**
 * Specification work left: nodes not running the desired configuration, or departing nodes still here.
 *
 * @example
 * ```ts
 * import { specWorkLeft } from "./progress.ts";
 * const n = { machine: "w-1", plane: "dataPlane" as const, state: "Ready" as const, reason: "Applied", detail: "applied", upToDate: false };
 * specWorkLeft([n], undefined); // true
 * specWorkLeft([{ ...n, upToDate: true }], undefined); // false
 * ```
 */
export function specWorkLeft(nodes: NodeReport[], plan: RolloutPlan | undefined): boolean {
  return nodes.some((n) => n.state !== "Failed" && !runsDesired(n)) || (plan?.pending.length ?? 0) > 0 ||
    (plan?.removing.length ?? 0) > 0;
}

/**
 * `Reconciling` and `Stalled`, in that order.
 *
 * @example
 * ```ts
 * import { progressConditions } from "./progress.ts";
 * const [reconciling, stalled] = progressConditions({
 *   phase: "Provisioning",
 *   ready: { type: "Ready", status: "False", reason: "ResolvingRef", message: "resolving main" },
 *   machines: { type: "MachinesAvailable", status: "True", reason: "MachinesSelected", message: "" },
 *   nodes: [],
 *   paused: false,
 *   blocked: { reason: "ResolvingRef", message: "resolving main" },
 * });
 * `${reconciling!.status} ${reconciling!.reason}`; // "True ResolvingRef"
 * stalled!.status; // "False"
 * ```
 */
export function progressConditions(i: ProgressInput): ConditionInput[] {
  const stalled = stalledCondition(i);
  if (stalled.status === "True") {
    return [condition("Reconciling", "False", "Stalled", "NICO cannot go on: see Stalled"), stalled];
  }
  return [reconcilingCondition(i), stalled];
}

function stalledCondition(i: ProgressInput): ConditionInput {
  const type = "Stalled";
  const b = i.blocked;
  // Only the user can lift a block that stalls; the others lift themselves (a ref resolving, Machines arriving).
  if (b && stalls(b.reason)) return condition(type, "True", b.reason, b.message);
  if (i.unresolved?.reason === "RefResolutionFailed") {
    return condition(type, "True", "RefResolutionFailed", i.unresolved.message);
  }
  const failed = i.nodes.filter((n) => n.state === "Failed");
  const halted = i.plan?.halted;
  const haltedAt = halted
    ? `the rollout is halted at ${halted.machine}: nothing else is touched until it recovers or the spec changes`
    : "";
  if (failed.length) {
    const names = listNames(failed.map((n) => `${n.machine} (${n.detail})`));
    return condition(type, "True", "NodeFailed", `failed: ${names}${haltedAt ? `; ${haltedAt}` : ""}`);
  }
  if (halted?.reason === "VersionSkew") {
    return condition(type, "True", "VersionSkew", `${halted.detail}; ${haltedAt}`);
  }
  if (halted) return condition(type, "True", "RolloutHalted", `${halted.detail}; ${haltedAt}`);
  if (i.downgrade) return condition(type, "True", "VersionDowngrade", i.downgrade);
  return condition(type, "False", "NotStalled", "nothing stands in NICO's way");
}

/** `Reconciling`, once {@link stalledCondition} found nothing that stalls (a block that stalls never gets here). */
function reconcilingCondition(i: ProgressInput): ConditionInput {
  const yes = (reason: ReasonOf<"Reconciling", "True">, message: string) =>
    condition("Reconciling", "True", reason, message);
  const b = i.blocked;
  if (i.phase === "Deleting") return yes("Deleting", i.ready.message);
  if (b && !stalls(b.reason)) return yes(b.reason, b.message);
  // RefResolutionFailed is Stalled: only a ref still resolving gets here.
  if (i.unresolved?.reason === "ResolvingRef") return yes(i.unresolved.reason, i.unresolved.message);
  const work = specWorkLeft(i.nodes, i.plan);
  if (work && i.paused) {
    const left = (i.plan?.pending.length ?? 0) + (i.plan?.removing.length ?? 0);
    const count = left ? `; ${left} node(s) to change` : "";
    return yes("Paused", `paused: the change waits until spec.paused and the paused annotation are cleared${count}`);
  }
  if (i.phase === "Provisioning") return yes("Provisioning", i.ready.message);
  // A Machine taken out of service that has not left yet: NICO is working, though no spec changed.
  if (i.remediating?.status === "True") return yes("Remediating", i.remediating.message);
  if (work && i.rolling?.status === "True") return yes("RollingOut", i.rolling.message);
  if (work || i.phase === "Updating") return yes("RollingOut", i.ready.message);
  if (i.machines.status !== "True") return yes("WaitingForMachines", i.machines.message);
  return condition("Reconciling", "False", "Settled", "nothing in progress");
}
