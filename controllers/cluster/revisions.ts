/**
 * Which clusters use which Git revision key, on top of the
 * {@link RevisionResolver}: a resolved commit that changes requeues exactly
 * the clusters that track it, and keys no cluster uses are forgotten.
 *
 * @module
 */
import { type Revision, type RevisionKey, revisionKey, type RevisionResolver } from "../../lib/git/resolver.ts";

export class RevisionTracker {
  readonly #resolver: RevisionResolver;
  readonly #users = new Map<string, Set<string>>();
  readonly #keyOf = new Map<string, { id: string; key: RevisionKey }>();

  constructor(resolver: RevisionResolver) {
    this.#resolver = resolver;
  }

  /** The clusters (namespace/name) that track `key`. */
  usersOf(key: RevisionKey): string[] {
    return [...(this.#users.get(revisionKey(key)) ?? [])];
  }

  /** The clusters (namespace/name) that track a revision, sorted. */
  clusters(): string[] {
    return [...this.#keyOf.keys()].sort();
  }

  /** Records that `cluster` tracks `key` now, and answers what is known of it, without waiting. */
  lookup(cluster: string, key: RevisionKey): Revision {
    const id = revisionKey(key);
    const previous = this.#keyOf.get(cluster);
    if (previous?.id !== id) {
      if (previous) this.#drop(cluster, previous);
      this.#keyOf.set(cluster, { id, key });
      let set = this.#users.get(id);
      if (!set) this.#users.set(id, set = new Set());
      set.add(cluster);
    }
    return this.#resolver.lookup(key);
  }

  /** `cluster` no longer tracks anything (deleted, or no longer pinned). */
  release(cluster: string): void {
    const previous = this.#keyOf.get(cluster);
    if (previous) this.#drop(cluster, previous);
    this.#keyOf.delete(cluster);
  }

  #drop(cluster: string, previous: { id: string; key: RevisionKey }): void {
    const set = this.#users.get(previous.id);
    set?.delete(cluster);
    if (set && set.size === 0) {
      this.#users.delete(previous.id);
      this.#resolver.forget(previous.key);
    }
  }
}
