/**
 * Kubernetes object metadata and the facts about it every layer shares:
 * owner references and who controls an object, the two time formats, the
 * label selector shape and the Secret shape. Object types come from
 * `kubernetes-types` (types only, pinned); the label selector keeps its own
 * shape because NICO's schema narrows `operator` to the four Kubernetes
 * accepts. Nothing here knows NICO's resources.
 *
 * @module
 */

import type { Node as K8sNode, Secret as K8sSecret } from "kubernetes-types/core/v1.d.ts";
import type { ObjectMeta as K8sObjectMeta, OwnerReference as K8sOwnerReference } from "kubernetes-types/meta/v1.d.ts";

/**
 * Object metadata, from `kubernetes-types` (types only) except that `name` is
 * required: every object NICO reads or writes has one (no generateName).
 * Server-set fields (uid, resourceVersion, generation, timestamps) are read-only.
 */
export type ObjectMeta = Omit<K8sObjectMeta, "name"> & { name: string };

/** metav1.OwnerReference, from `kubernetes-types`. */
export type OwnerReference = K8sOwnerReference;

/** metav1.LabelSelector. */
export interface LabelSelector {
  matchLabels?: Record<string, string> | undefined;
  matchExpressions?:
    | { key: string; operator: "In" | "NotIn" | "Exists" | "DoesNotExist"; values?: string[] | undefined }[]
    | undefined;
}

/** A core/v1 Secret (fields from `kubernetes-types`), with required metadata; `data` values are base64. */
export type Secret =
  & { apiVersion?: string; kind?: string; metadata: ObjectMeta }
  & Pick<
    K8sSecret,
    "type" | "data" | "stringData" | "immutable"
  >;

/** A core/v1 Node (spec and status from `kubernetes-types`), with required metadata. */
export type Node = { apiVersion?: string; kind?: string; metadata: ObjectMeta } & Pick<K8sNode, "spec" | "status">;

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
