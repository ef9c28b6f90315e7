/**
 * Kubernetes resources by group, version and plural, and how their URLs are
 * built. Only built-in resources live here; NICO's own and NIO's are defined
 * next to their types (`crds/`, `core/contract/nio.ts`) with {@link resource}.
 */

export interface Resource {
  /** API group; "" for the core group. */
  group: string;
  version: string;
  plural: string;
  kind: string;
  namespaced: boolean;
}

/** A resource by group, version, kind and plural (namespaced unless said otherwise). */
export function resource(group: string, version: string, kind: string, plural: string, namespaced = true): Resource {
  return { group, version, kind, plural, namespaced };
}
const res = resource;

export const SECRETS = res("", "v1", "Secret", "secrets");
export const EVENTS = res("events.k8s.io", "v1", "Event", "events");
export const NAMESPACES = res("", "v1", "Namespace", "namespaces", false);
export const NODES = res("", "v1", "Node", "nodes", false);
export const PODS = res("", "v1", "Pod", "pods");
export const PDBS = res("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets");
export const LEASES = res("coordination.k8s.io", "v1", "Lease", "leases");
export const CRDS = res("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", false);
export const VALIDATING_WEBHOOKS = res(
  "admissionregistration.k8s.io",
  "v1",
  "ValidatingWebhookConfiguration",
  "validatingwebhookconfigurations",
  false,
);
export const MUTATING_WEBHOOKS = res(
  "admissionregistration.k8s.io",
  "v1",
  "MutatingWebhookConfiguration",
  "mutatingwebhookconfigurations",
  false,
);

/** `group/version`, or `version` for the core group. */
export function apiVersionOf(r: Resource): string {
  return r.group === "" ? r.version : `${r.group}/${r.version}`;
}

/**
 * The URL path of a collection or of one object.
 *
 * @example
 * ```ts
 * resourcePath(SECRETS, "default", "a") // "/api/v1/namespaces/default/secrets/a"
 * ```
 */
export function resourcePath(r: Resource, namespace?: string, name?: string, subresource?: string): string {
  const base = r.group === "" ? `/api/${r.version}` : `/apis/${r.group}/${r.version}`;
  const ns = r.namespaced && namespace ? `/namespaces/${encodeURIComponent(namespace)}` : "";
  const obj = name ? `/${encodeURIComponent(name)}` : "";
  const sub = name && subresource ? `/${subresource}` : "";
  return `${base}${ns}/${r.plural}${obj}${sub}`;
}
