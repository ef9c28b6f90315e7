/**
 * What an informer does to an object before it enters the cache, so a
 * thousand clusters' objects weigh less in V8's heap (measured in a heap
 * snapshot at 300 × 3: docs/benchmark.md):
 *
 * - a field is dropped by building the object that holds it anew, never by
 *   `delete`: V8 turns an object a property was deleted from into a slow
 *   dictionary, about three times the size (every cached object's metadata
 *   was one, after `managedFields` went);
 * - short strings are shared: `JSON.parse` makes a new copy of every value,
 *   so each Job, Machine and configuration held its own `apiVersion`, `kind`,
 *   condition reasons and messages, repository URL and commit.
 *
 * @module
 */
import type { KubeObject } from "../kube/client.ts";

/** Values never worth sharing: unique to their object, or new with every write. */
const UNIQUE = new Set([
  "uid",
  "resourceVersion",
  "creationTimestamp",
  "deletionTimestamp",
  "lastTransitionTime",
  "lastProbeTime",
  "lastUpdateTime",
  "lastHeartbeatTime",
  "lastAppliedTime",
  "startTime",
  "completionTime",
  "time",
]);

/**
 * Maps of values not walked: a Secret's values are unique (tokens, keys) and would only outlive their Secret in the
 * table.
 */
const PRIVATE = new Set(["data", "stringData"]);

/** Strings longer than this are left as they are (certificates, keys, rendered files: rarely shared). */
const MAX_LENGTH = 96;

/**
 * One copy of each short string: {@link share} answers the copy it holds, and keeps at most `max` (it starts
 * afresh when full, so values of objects long gone are not held forever).
 *
 * @example
 * ```ts
 * import { StringTable } from "./compact.ts";
 * const t = new StringTable();
 * const a = JSON.parse('{"kind":"Job"}').kind;
 * t.share(a) === t.share(JSON.parse('{"kind":"Job"}').kind); // true
 * ```
 */
export class StringTable {
  #table = new Map<string, string>();
  constructor(readonly max = 100_000) {}

  get size(): number {
    return this.#table.size;
  }

  share(s: string): string {
    if (s.length > MAX_LENGTH) return s;
    const held = this.#table.get(s);
    if (held !== undefined) return held;
    if (this.#table.size >= this.max) this.#table.clear();
    this.#table.set(s, s);
    return s;
  }
}

/** The table every informer of the process shares (the same `apiVersion` is in many caches). */
export const SHARED_STRINGS: StringTable = new StringTable();

/**
 * Replaces, in place, every short string value of `value` (in objects and arrays, at any depth) by the table's
 * copy, but for the fields in {@link UNIQUE} and the maps in {@link PRIVATE}. Assigning a property that exists keeps V8's fast properties.
 *
 * @example
 * ```ts
 * import { shareStrings, StringTable } from "./compact.ts";
 * const t = new StringTable();
 * const o = { metadata: { uid: "u-1", labels: { a: "x" } }, list: ["x"] };
 * shareStrings(o, t);
 * t.size; // 1 (the uid is not shared)
 * ```
 */
export function shareStrings(value: unknown, table: StringTable = SHARED_STRINGS): void {
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const v = value[i];
      if (typeof v === "string") value[i] = table.share(v);
      else if (v !== null && typeof v === "object") shareStrings(v, table);
    }
    return;
  }
  if (value === null || typeof value !== "object") return;
  const o = value as Record<string, unknown>;
  for (const k in o) {
    const v = o[k];
    if (typeof v === "string") {
      if (!UNIQUE.has(k)) o[k] = table.share(v);
    } else if (v !== null && typeof v === "object" && !PRIVATE.has(k)) shareStrings(v, table);
  }
}

/**
 * `obj` without the fields `drop` names, as a new object (the same object when it has none of them): a field is
 * never deleted (see the module's doc).
 *
 * @example
 * ```ts
 * import { without } from "./compact.ts";
 * without({ a: 1, b: 2, c: 3 }, ["b"]); // { a: 1, c: 3 }
 * ```
 */
export function without<T extends object>(obj: T, drop: readonly string[]): T {
  if (!drop.some((k) => k in obj)) return obj;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(obj)) if (!drop.includes(k)) out[k] = v;
  return out as T;
}

/**
 * What an informer caches for `obj`: without `metadata.managedFields` (nobody reads them from a cache, about a third
 * of an object's memory), then `trim`'s answer (`obj` when it answers nothing), its short strings shared.
 *
 * @example
 * ```ts
 * import { cacheable } from "./compact.ts";
 * cacheable({ metadata: { name: "a", managedFields: [] }, spec: {} }, (o) => ({ metadata: o.metadata }));
 * // { metadata: { name: "a" } }
 * ```
 */
export function cacheable<T extends KubeObject>(obj: T, trim?: (obj: KubeObject) => KubeObject | void): T {
  if (obj.metadata) obj.metadata = without(obj.metadata, ["managedFields"]);
  const out = (trim?.(obj) ?? obj) as T;
  shareStrings(out);
  return out;
}
