/**
 * Phase: the commit every node is pinned to. While the first resolution is
 * pending or failing, nodes keep the commit they already carry (nothing
 * rolls); a new cluster waits. With no resolver, `ref` goes to NIO as written.
 *
 * @module
 */
import type { ConditionInput } from "../../../core/conditions.ts";
import type { ClusterScope } from "../scope.ts";

/** Records the pinned commit (or why there is none) and the `RevisionResolved` condition in `s.out`. */
export function pinRevision(s: ClusterScope, gitRepo: string): void {
  const tracker = s.deps.revisions;
  if (!tracker) return;
  const { spec, namespace: ns } = s;
  const ref = spec.ref ?? "the default branch";
  const rev = tracker.lookup(`${ns}/${s.name}`, {
    url: gitRepo,
    ref: spec.ref,
    credentialsSecret: spec.credentialsRef ? { namespace: ns, name: spec.credentialsRef.name } : undefined,
  });
  if (rev.commit && !rev.error) {
    s.out.revision = rev.commit;
    s.out.extra.push({
      type: "RevisionResolved",
      status: "True",
      reason: "Resolved",
      message: `${ref} is commit ${rev.commit}`,
    });
    return;
  }
  const carried = new Set(s.ours.map((c) => c.spec.ref).filter((r): r is string => !!r && /^[0-9a-f]{40}$/.test(r)));
  const held = rev.commit ?? (carried.size === 1 ? [...carried][0] : undefined);
  const condition: ConditionInput = rev.error
    ? {
      type: "RevisionResolved",
      status: "False",
      reason: "ResolveFailed",
      message: `${rev.error}${held ? `; nodes stay on ${held}` : ""}`,
    }
    : { type: "RevisionResolved", status: "Unknown", reason: "Resolving", message: `resolving ${ref} of ${gitRepo}` };
  s.out.extra.push(condition);
  if (held) s.out.revision = held;
  else s.out.blocked = { reason: rev.error ? "RefResolutionFailed" : "ResolvingRef", message: condition.message };
}
