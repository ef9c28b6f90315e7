/**
 * Conditions as NICO writes them: built by {@link condition} from the
 * registry (crds/conditions/mod.ts), then the metav1.Condition bookkeeping
 * (lastTransitionTime moves only when status flips).
 *
 * @module
 */
import type { Condition } from "../../crds/kubernetescluster.ts";
import type { ConditionInput, ConditionType, ReasonOf, Status } from "../../crds/conditions/mod.ts";
import { timestamp } from "../../lib/kube/meta.ts";

export type { ConditionInput, ConditionType, ReasonOf } from "../../crds/conditions/mod.ts";

/**
 * A condition of `type` with `status` and `reason`: the reason must be one the registry lists for that type and
 * status, or the call does not compile.
 *
 * @example
 * ```ts
 * import { condition } from "./conditions.ts";
 * condition("Ready", "False", "WaitingForWorkers", "1/2 worker machines ready").reason; // "WaitingForWorkers"
 * // condition("Ready", "False", "NoSuchReason", "…") is a type error, and so is condition("Ready", "True", "WaitingForWorkers", "…").
 * ```
 */
export function condition<T extends ConditionType, S extends Status>(
  type: T,
  status: S,
  reason: ReasonOf<T, S>,
  message: string,
): ConditionInput {
  return { type, status, reason, message } as ConditionInput;
}

export { timestamp } from "../../lib/kube/meta.ts";

/**
 * The conditions after this pass: each new condition keeps its previous
 * `lastTransitionTime` unless its status changed, and carries the generation
 * the pass evaluated (none when no pass has evaluated one yet).
 *
 * @example
 * ```ts
 * import { mergeConditions } from "./conditions.ts";
 * const before = [{ type: "Ready", status: "False" as const, reason: "WaitingForWorkers", message: "", observedGeneration: 1, lastTransitionTime: "2026-01-01T00:00:00Z" }];
 * const after = mergeConditions(before, [{ type: "Ready", status: "False", reason: "WaitingForWorkers", message: "still" }], 2, new Date());
 * after[0]!.lastTransitionTime; // "2026-01-01T00:00:00Z": the status did not flip
 * ```
 */
export function mergeConditions(
  previous: Condition[] | undefined,
  next: ConditionInput[],
  generation: number | undefined,
  now: Date,
): Condition[] {
  return next.map((c) => {
    const prev = previous?.find((p) => p.type === c.type);
    return {
      ...c,
      ...(generation === undefined ? {} : { observedGeneration: generation }),
      lastTransitionTime: prev && prev.status === c.status ? prev.lastTransitionTime : timestamp(now),
    };
  });
}

export { listNames } from "../../lib/text.ts";
