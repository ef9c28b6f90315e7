/**
 * Kubernetes object metadata and the facts about it every layer shares:
 * owner references and who controls an object, the two time formats, the
 * label selector shape and the Secret shape. Nothing here knows NICO's
 * resources.
 *
 * @module
 */

/** Object metadata fields NICO reads; the rest passes through untouched. */
export interface ObjectMeta {
  name: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  ownerReferences?: OwnerReference[];
}

/** metav1.OwnerReference. */
export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

/** metav1.LabelSelector. */
export interface LabelSelector {
  matchLabels?: Record<string, string> | undefined;
  matchExpressions?:
    | { key: string; operator: "In" | "NotIn" | "Exists" | "DoesNotExist"; values?: string[] | undefined }[]
    | undefined;
}

/** A core/v1 Secret, as far as NICO reads it; `data` values are base64. */
export interface Secret {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  type?: string;
  data?: Record<string, string>;
}

/**
 * The owner reference that makes `owner` the controller of an object:
 * garbage collection follows it, and deletion waits for the object.
 *
 * @example
 * ```ts
 * import { controllerReference } from "./meta.ts";
 * controllerReference({ apiVersion: "v1", kind: "ConfigMap", name: "a", uid: "u1" }).controller; // true
 * ```
 */
export function controllerReference(
  owner: { apiVersion: string; kind: string; name: string; uid: string },
): OwnerReference {
  return { ...owner, controller: true, blockOwnerDeletion: true };
}

/**
 * Whether the object with uid `uid` is the controller of `obj` (its
 * controller reference, not a label, decides).
 *
 * @example
 * ```ts
 * import { isControlledBy } from "./meta.ts";
 * const obj = { metadata: { name: "x", ownerReferences: [{ apiVersion: "v1", kind: "K", name: "o", uid: "u1", controller: true }] } };
 * isControlledBy(obj, "u1"); // true
 * isControlledBy(obj, "u2"); // false
 * ```
 */
export function isControlledBy(obj: { metadata: ObjectMeta }, uid: string): boolean {
  return (obj.metadata.ownerReferences ?? []).some((o) => o.controller === true && o.uid === uid);
}

/**
 * metav1.Time: RFC 3339 with second precision, as conditions carry it.
 *
 * @example
 * ```ts
 * import { timestamp } from "./meta.ts";
 * timestamp(new Date("2026-01-01T12:00:00.123Z")); // "2026-01-01T12:00:00Z"
 * ```
 */
export function timestamp(d: Date): string {
  return d.toISOString().replace(/\.\d+Z$/, "Z");
}

/**
 * metav1.MicroTime: RFC 3339 with microseconds, as Events and Leases carry it.
 *
 * @example
 * ```ts
 * import { microTime } from "./meta.ts";
 * microTime(new Date("2026-01-01T12:00:00.123Z")); // "2026-01-01T12:00:00.123000Z"
 * ```
 */
export function microTime(d: Date | number): string {
  return new Date(d).toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
}
