/** metav1.Condition bookkeeping: lastTransitionTime moves only when status flips. */
import type { Condition } from "../crds/kubernetescluster.ts";
import { timestamp } from "../lib/kube/meta.ts";

export type ConditionInput = Omit<Condition, "lastTransitionTime" | "observedGeneration">;

export { timestamp } from "../lib/kube/meta.ts";

/**
 * The conditions after this pass: each new condition keeps its previous
 * `lastTransitionTime` unless its status changed.
 */
export function mergeConditions(
  previous: Condition[] | undefined,
  next: ConditionInput[],
  generation: number,
  now: Date,
): Condition[] {
  return next.map((c) => {
    const prev = previous?.find((p) => p.type === c.type);
    return {
      ...c,
      observedGeneration: generation,
      lastTransitionTime: prev && prev.status === c.status ? prev.lastTransitionTime : timestamp(now),
    };
  });
}

/** `a, b, c and 4 more`. */
export function listNames(names: string[], max = 5): string {
  if (names.length <= max) return names.join(", ");
  return `${names.slice(0, max).join(", ")} and ${names.length - max} more`;
}
