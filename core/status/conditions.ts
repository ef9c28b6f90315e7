/** metav1.Condition bookkeeping: lastTransitionTime moves only when status flips. */
import type { Condition } from "../../crds/kubernetescluster.ts";
import { timestamp } from "../../lib/kube/meta.ts";

export type ConditionInput = Omit<Condition, "lastTransitionTime" | "observedGeneration">;

export { timestamp } from "../../lib/kube/meta.ts";

/**
 * The conditions after this pass: each new condition keeps its previous
 * `lastTransitionTime` unless its status changed, and carries the generation
 * the pass evaluated (none when no pass has evaluated one yet).
 *
 * @example
 * ```ts
 * import { mergeConditions } from "./conditions.ts";
 * const before = [{ type: "Ready", status: "False" as const, reason: "Waiting", message: "", observedGeneration: 1, lastTransitionTime: "2026-01-01T00:00:00Z" }];
 * const after = mergeConditions(before, [{ type: "Ready", status: "False", reason: "Waiting", message: "still" }], 2, new Date());
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

/**
 * `a, b, c and 4 more`.
 *
 * @example
 * ```ts
 * import { listNames } from "./conditions.ts";
 * listNames(["a", "b", "c"], 2); // "a, b and 1 more"
 * ```
 */
export function listNames(names: string[], max = 5): string {
  if (names.length <= max) return names.join(", ");
  return `${names.slice(0, max).join(", ")} and ${names.length - max} more`;
}
