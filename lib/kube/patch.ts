/**
 * JSON Patch (RFC 6902) operations on object metadata, and the JSON Pointer
 * (RFC 6901) escaping their paths need: one definition, so a label key such
 * as `nico.homystack.com/cluster` is escaped the same way everywhere. Used
 * with `KubeClient.jsonPatch`, whose `test` operations make a write
 * conditional (on a label, the finalizer list, a resourceVersion) and atomic
 * on the API server. Nothing here knows NICO's resources.
 *
 * @module
 */

/** One JSON Patch operation. */
export interface JsonPatchOp {
  op: "add" | "replace" | "remove" | "test";
  path: string;
  value?: unknown;
}

/**
 * One JSON Pointer segment (RFC 6901 §3): `~` is written `~0` and `/` is written `~1`.
 *
 * @example
 * ```ts
 * import { escapePointer } from "./patch.ts";
 * escapePointer("nico.homystack.com/cluster"); // "nico.homystack.com~1cluster"
 * escapePointer("a~b/c"); // "a~0b~1c"
 * ```
 */
export function escapePointer(segment: string): string {
  return segment.replaceAll("~", "~0").replaceAll("/", "~1");
}

/**
 * The segment an escaped JSON Pointer segment stands for (RFC 6901 §4: `~1` first, then `~0`, so `~01` is `~1`).
 *
 * @example
 * ```ts
 * import { unescapePointer } from "./patch.ts";
 * unescapePointer("nico.homystack.com~1cluster"); // "nico.homystack.com/cluster"
 * unescapePointer("~01"); // "~1"
 * ```
 */
export function unescapePointer(segment: string): string {
  return segment.replaceAll("~1", "/").replaceAll("~0", "~");
}

/**
 * The JSON Pointer of a path of keys.
 *
 * @example
 * ```ts
 * import { pointer } from "./patch.ts";
 * pointer(["metadata", "labels", "a/b"]); // "/metadata/labels/a~1b"
 * pointer([]); // ""
 * ```
 */
export function pointer(keys: readonly string[]): string {
  return keys.map((k) => `/${escapePointer(k)}`).join("");
}

/**
 * The keys a JSON Pointer names, unescaped (the inverse of {@link pointer}).
 *
 * @example
 * ```ts
 * import { pointerKeys } from "./patch.ts";
 * pointerKeys("/metadata/labels/a~1b"); // ["metadata", "labels", "a/b"]
 * pointerKeys(""); // []
 * ```
 */
export function pointerKeys(path: string): string[] {
  if (path === "") return [];
  if (!path.startsWith("/")) {
    throw new Error(`A JSON Pointer starts with "/" or is empty: found ${JSON.stringify(path)}`);
  }
  return path.slice(1).split("/").map(unescapePointer);
}

/** The metadata maps a patch can change one key of. */
type MetadataMap = "labels" | "annotations";

const metadataKey = (map: MetadataMap, key: string) => pointer(["metadata", map, key]);

/**
 * Adds (or overwrites) label `key`. The object must have labels already: JSON Patch does not create the map.
 *
 * @example
 * ```ts
 * import { addLabel } from "./patch.ts";
 * addLabel("nico.homystack.com/cluster", "prod");
 * // { op: "add", path: "/metadata/labels/nico.homystack.com~1cluster", value: "prod" }
 * ```
 */
export function addLabel(key: string, value: string): JsonPatchOp {
  return { op: "add", path: metadataKey("labels", key), value };
}

/**
 * Removes label `key` (the patch fails if it is absent).
 *
 * @example
 * ```ts
 * import { removeLabel } from "./patch.ts";
 * removeLabel("nico.homystack.com/cluster"); // { op: "remove", path: "/metadata/labels/nico.homystack.com~1cluster" }
 * ```
 */
export function removeLabel(key: string): JsonPatchOp {
  return { op: "remove", path: metadataKey("labels", key) };
}

/**
 * Makes the patch apply only while label `key` is `value`.
 *
 * @example
 * ```ts
 * import { testLabel } from "./patch.ts";
 * testLabel("role", "cp"); // { op: "test", path: "/metadata/labels/role", value: "cp" }
 * ```
 */
export function testLabel(key: string, value: string): JsonPatchOp {
  return { op: "test", path: metadataKey("labels", key), value };
}

/**
 * Makes the patch apply only while the object's labels are exactly `labels` (a map that is present).
 *
 * @example
 * ```ts
 * import { testLabels } from "./patch.ts";
 * testLabels({ role: "cp" }); // { op: "test", path: "/metadata/labels", value: { role: "cp" } }
 * ```
 */
export function testLabels(labels: Record<string, string>): JsonPatchOp {
  return { op: "test", path: "/metadata/labels", value: labels };
}

/**
 * Adds (or overwrites) annotation `key`. The object must have annotations already.
 *
 * @example
 * ```ts
 * import { addAnnotation } from "./patch.ts";
 * addAnnotation("example.com/note", "x"); // { op: "add", path: "/metadata/annotations/example.com~1note", value: "x" }
 * ```
 */
export function addAnnotation(key: string, value: string): JsonPatchOp {
  return { op: "add", path: metadataKey("annotations", key), value };
}

/**
 * Removes annotation `key` (the patch fails if it is absent).
 *
 * @example
 * ```ts
 * import { removeAnnotation } from "./patch.ts";
 * removeAnnotation("example.com/note"); // { op: "remove", path: "/metadata/annotations/example.com~1note" }
 * ```
 */
export function removeAnnotation(key: string): JsonPatchOp {
  return { op: "remove", path: metadataKey("annotations", key) };
}

/**
 * Makes the patch apply only while annotation `key` is `value`.
 *
 * @example
 * ```ts
 * import { testAnnotation } from "./patch.ts";
 * testAnnotation("example.com/note", "x"); // { op: "test", path: "/metadata/annotations/example.com~1note", value: "x" }
 * ```
 */
export function testAnnotation(key: string, value: string): JsonPatchOp {
  return { op: "test", path: metadataKey("annotations", key), value };
}

/**
 * Makes the patch apply only to the object at `resourceVersion` (what a stale cache cannot pass).
 *
 * @example
 * ```ts
 * import { testResourceVersion } from "./patch.ts";
 * testResourceVersion("42"); // { op: "test", path: "/metadata/resourceVersion", value: "42" }
 * ```
 */
export function testResourceVersion(resourceVersion: string | undefined): JsonPatchOp {
  return { op: "test", path: "/metadata/resourceVersion", value: resourceVersion };
}

/**
 * The operations that add `finalizer` to an object whose finalizers are `current`: none when it is there
 * already, the whole list when there is none (an `add` to `/-` needs the list), else an append.
 *
 * @example
 * ```ts
 * import { addFinalizer } from "./patch.ts";
 * addFinalizer(undefined, "x/f"); // [{ op: "add", path: "/metadata/finalizers", value: ["x/f"] }]
 * addFinalizer(["a"], "x/f"); // [{ op: "add", path: "/metadata/finalizers/-", value: "x/f" }]
 * addFinalizer(["x/f"], "x/f"); // []
 * ```
 */
export function addFinalizer(current: readonly string[] | undefined, finalizer: string): JsonPatchOp[] {
  if (!current) return [{ op: "add", path: "/metadata/finalizers", value: [finalizer] }];
  if (current.includes(finalizer)) return [];
  return [{ op: "add", path: "/metadata/finalizers/-", value: finalizer }];
}

/**
 * The operations that remove `finalizer` from an object whose finalizers are `current`, applied only while
 * they still are (a `test` of the whole list, then its replacement): another writer's change in between
 * fails the patch instead of being lost.
 *
 * @example
 * ```ts
 * import { removeFinalizer } from "./patch.ts";
 * removeFinalizer(["a", "x/f"], "x/f");
 * // [{ op: "test", path: "/metadata/finalizers", value: ["a", "x/f"] }, { op: "replace", path: "/metadata/finalizers", value: ["a"] }]
 * ```
 */
export function removeFinalizer(current: readonly string[], finalizer: string): JsonPatchOp[] {
  return [
    { op: "test", path: "/metadata/finalizers", value: [...current] },
    { op: "replace", path: "/metadata/finalizers", value: current.filter((f) => f !== finalizer) },
  ];
}
