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
import { condition, type ConditionInput } from "../../../core/status/conditions.ts";
import type { Blocked } from "../../../core/status/cluster.ts";
import { redactUrl } from "../../../lib/git/url.ts";
import type { ClusterScope } from "../scope.ts";

/** Why nodes cannot be rendered, as the status tells it. */
export type { Blocked } from "../../../core/status/cluster.ts";

/** The revision nodes are pinned to, and what the status says of it. */
export interface Pinned {
  /** The commit nodes are pinned to. */
  revision?: string | undefined;
  /** The repository the nodes are pinned to when it is not the spec's (a new one still resolving). */
  pinnedRepo?: string | undefined;
  /** The `RevisionResolved` condition (none without pinning). */
  condition?: ConditionInput | undefined;
  /** The spec's repository and ref have no commit yet: still resolving, or failing to (nodes may stay on another). */
  unresolved?: { reason: "ResolvingRef" | "RefResolutionFailed"; message: string } | undefined;
  /** No commit to pin nodes to at all: nothing can be rendered. */
  blocked?: Blocked | undefined;
}

/** The pinned commit (or why there is none) and the `RevisionResolved` condition. */
export function pinRevision(s: ClusterScope, gitRepo: string): Pinned {
  // Looked up once, when the scope was built: claims and rendering decide on the same answer.
  const rev = s.revision;
  if (!rev) return {};
  const ref = s.spec.ref ?? "the default branch";
  if (rev.commit && !rev.error) {
    return {
      revision: rev.commit,
      condition: condition("RevisionResolved", "True", "Resolved", `${ref} is commit ${rev.commit}`),
    };
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
  const resolved: ConditionInput = rev.error
    ? condition("RevisionResolved", "False", "ResolveFailed", `${rev.error}${where}`)
    : condition("RevisionResolved", "Unknown", "Resolving", `resolving ${ref} of ${redactUrl(gitRepo)}${where}`);
  const why = rev.error ? "RefResolutionFailed" : "ResolvingRef";
  const pinned: Pinned = { condition: resolved };
  if (!rev.commit) pinned.unresolved = { reason: why, message: resolved.message };
  if (!held) return { ...pinned, blocked: { reason: why, message: resolved.message } };
  return { ...pinned, revision: held.revision, ...(held.gitRepo !== gitRepo ? { pinnedRepo: held.gitRepo } : {}) };
}
