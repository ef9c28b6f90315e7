/** Reconciling an informer's cache with a fresh list. */
import type { KubeObject } from "../kube/client.ts";
import { objectKey } from "./keys.ts";

/** What happened to a cached object. */
export type EventType = "add" | "update" | "delete";

/** One change to a cache: the object, and for updates and deletes the cached one. */
export interface CacheEvent<T> {
  type: EventType;
  obj: T;
  old?: T;
}

/** What {@link diffSnapshot} reads of a cache: a Map, or an informer's Store. */
export interface KeyedCache<T> {
  get(key: string): T | undefined;
  entries(): Iterable<[string, T]>;
}

/**
 * Compares a cache with a fresh list and returns the cache to keep and the
 * events that turn the old cache into it: `add` for new keys, `update` when
 * the resourceVersion changed, `delete` for keys that are gone, and
 * `delete` then `add` when a name now belongs to another object (new uid).
 * Unchanged objects produce no event. Deletes come first, in cache order,
 * then adds and updates in list order.
 */
export function diffSnapshot<T extends KubeObject>(
  cache: KeyedCache<T>,
  items: readonly T[],
): { next: Map<string, T>; events: CacheEvent<T>[] } {
  const next = new Map<string, T>();
  for (const item of items) next.set(objectKey(item), item);
  const deletes: CacheEvent<T>[] = [];
  const changes: CacheEvent<T>[] = [];
  for (const [key, old] of cache.entries()) {
    const now = next.get(key);
    if (!now) deletes.push({ type: "delete", obj: old, old });
  }
  for (const [key, obj] of next) {
    const old = cache.get(key);
    if (!old) {
      changes.push({ type: "add", obj });
    } else if (old.metadata.uid && obj.metadata.uid && old.metadata.uid !== obj.metadata.uid) {
      changes.push({ type: "delete", obj: old, old }, { type: "add", obj });
    } else if (old.metadata.resourceVersion !== obj.metadata.resourceVersion) {
      changes.push({ type: "update", obj, old });
    }
  }
  return { next, events: [...deletes, ...changes] };
}
