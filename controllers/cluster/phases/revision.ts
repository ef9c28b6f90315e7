/**
 * Phase: the (repository, commit) pair every node is pinned to. While the
 * current pair's resolution is pending or failing, nodes keep the pair they
 * already carry, repository and commit together (nothing rolls, and a new
 * repository is never paired with the old one's commit); a new cluster
 * waits. With no resolver, `ref` goes to NIO as written.
 *
 * @module
 */
import { isCommit } from "../../../lib/git/url.ts";
import type { ConditionInput } from "../../../core/conditions.ts";
import { redactUrl } from "../../../lib/git/url.ts";
import type { ClusterScope } from "../scope.ts";

/** Records the pinned commit (or why there is none) and the `RevisionResolved` condition in `s.out`. */
export function pinRevision(s: ClusterScope, gitRepo: string): void {
  // Looked up once, when the scope was built: claims and rendering decide on the same answer.
  const rev = s.revision;
  if (!rev) return;
  const ref = s.spec.ref ?? "the default branch";
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
  // A commit that resolved for this very key before keeps its pair; otherwise the one pair the nodes carry.
  const carried = new Map(
    s.ours.filter((c) => isCommit(c.spec.ref)).map((c) => [`${c.spec.gitRepo} ${c.spec.ref}`, c.spec]),
  );
  const only = carried.size === 1 ? [...carried.values()][0] : undefined;
  const held = rev.commit ? { gitRepo, revision: rev.commit } : only && { gitRepo: only.gitRepo, revision: only.ref! };
  const where = held
    ? `; nodes stay on ${held.revision}${held.gitRepo !== gitRepo ? ` of ${redactUrl(held.gitRepo)}` : ""}`
    : "";
  const condition: ConditionInput = rev.error
    ? { type: "RevisionResolved", status: "False", reason: "ResolveFailed", message: `${rev.error}${where}` }
    : {
      type: "RevisionResolved",
      status: "Unknown",
      reason: "Resolving",
      message: `resolving ${ref} of ${redactUrl(gitRepo)}${where}`,
    };
  s.out.extra.push(condition);
  if (!rev.commit) {
    s.out.unresolved = { reason: rev.error ? "RefResolutionFailed" : "ResolvingRef", message: condition.message };
  }
  if (held) {
    s.out.revision = held.revision;
    if (held.gitRepo !== gitRepo) s.out.pinnedRepo = held.gitRepo;
  } else {
    s.out.blocked = { reason: rev.error ? "RefResolutionFailed" : "ResolvingRef", message: condition.message };
  }
}
