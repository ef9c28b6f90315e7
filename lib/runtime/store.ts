/**
 * An informer's cache: objects by key, with an index by namespace and named
 * indexes (an index function answers the values an object is found under),
 * kept on every add, update and delete, so looking up the objects of a
 * namespace, an owner or a label value costs what it answers, not the size
 * of the whole cache (controller-runtime's field indexers do the same).
 *
 * @module
 */
import type { KubeObject } from "../kube/client.ts";
import { keyOf, objectKey } from "./keys.ts";

/** The values an object is indexed under (none: it is not in the index). */
export type IndexFunc<T> = (obj: T) => readonly string[];

/** Objects by key, indexed by namespace and by named index functions. */
export class Store<T extends KubeObject = KubeObject> {
  readonly #items = new Map<string, T>();
  readonly #byNamespace = new Map<string, Map<string, T>>();
  readonly #indexers = new Map<string, IndexFunc<T>>();
  readonly #indexes = new Map<string, Map<string, Map<string, T>>>();

  /**
   * Adds an index `name` by `fn`, built at once from what the store holds;
   * adding a name again replaces its function.
   */
  addIndex(name: string, fn: IndexFunc<T>): void {
    this.#indexers.set(name, fn);
    const index = new Map<string, Map<string, T>>();
    this.#indexes.set(name, index);
    for (const [key, obj] of this.#items) put(index, fn(obj), key, obj);
  }

  /** Whether an index of that name exists. */
  hasIndex(name: string): boolean {
    return this.#indexers.has(name);
  }

  get size(): number {
    return this.#items.size;
  }

  get(key: string): T | undefined {
    return this.#items.get(key);
  }

  /** Keys and objects, in insertion order. */
  entries(): IterableIterator<[string, T]> {
    return this.#items.entries();
  }

  /** Every object, in insertion order. */
  values(): IterableIterator<T> {
    return this.#items.values();
  }

  /** Puts an object (added or replaced by its key); the indexes follow. */
  set(obj: T): void {
    const key = objectKey(obj);
    const old = this.#items.get(key);
    if (old) this.#unindex(key, old);
    this.#items.set(key, obj);
    put(this.#byNamespace, [obj.metadata.namespace ?? ""], key, obj);
    for (const [name, fn] of this.#indexers) put(this.#indexes.get(name)!, fn(obj), key, obj);
  }

  /** Removes the object of `key`, if any; answers it. */
  delete(key: string): T | undefined {
    const old = this.#items.get(key);
    if (!old) return undefined;
    this.#unindex(key, old);
    this.#items.delete(key);
    return old;
  }

  /** Objects of one namespace (`""`: cluster-scoped ones), or every object. */
  list(namespace?: string): T[] {
    if (namespace === undefined) return [...this.#items.values()];
    return [...(this.#byNamespace.get(namespace)?.values() ?? [])];
  }

  /** Objects the index `name` holds under `value`; throws for an index that was never added (a programming error). */
  byIndex(name: string, value: string): T[] {
    const index = this.#indexes.get(name);
    if (!index) throw new Error(`no index ${name}`);
    return [...(index.get(value)?.values() ?? [])];
  }

  /** Distinct values the index `name` holds (for tests and metrics). */
  indexValues(name: string): string[] {
    return [...(this.#indexes.get(name)?.keys() ?? [])];
  }

  #unindex(key: string, old: T): void {
    drop(this.#byNamespace, [old.metadata.namespace ?? ""], key);
    for (const [name, fn] of this.#indexers) drop(this.#indexes.get(name)!, fn(old), key);
  }
}

function put<T>(index: Map<string, Map<string, T>>, values: readonly string[], key: string, obj: T): void {
  for (const v of values) {
    let bucket = index.get(v);
    if (!bucket) index.set(v, bucket = new Map());
    bucket.set(key, obj);
  }
}

function drop<T>(index: Map<string, Map<string, T>>, values: readonly string[], key: string): void {
  for (const v of values) {
    const bucket = index.get(v);
    if (!bucket) continue;
    bucket.delete(key);
    if (bucket.size === 0) index.delete(v);
  }
}

/**
 * An index by one label: the object's namespace and the label's value (`namespace/value`, see
 * {@link keyOf}); objects without the label are not in it.
 *
 * @example
 * ```ts
 * import { byLabelIndex } from "./store.ts";
 * byLabelIndex("app")({ metadata: { name: "a", namespace: "ns", labels: { app: "web" } } }); // ["ns/web"]
 * ```
 */
export function byLabelIndex<T extends KubeObject>(label: string): IndexFunc<T> {
  return (o) => {
    const v = o.metadata.labels?.[label];
    return v === undefined ? [] : [keyOf(o.metadata.namespace, v)];
  };
}

/**
 * An index by controller owner: the uid of the object's controller reference (uids are unique across
 * namespaces); objects without one are not in it.
 */
export function byControllerIndex<T extends KubeObject>(o: T): readonly string[] {
  const ref = o.metadata.ownerReferences?.find((r) => r.controller === true);
  return ref?.uid ? [ref.uid] : [];
}
