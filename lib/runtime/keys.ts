/** Work-queue keys: `namespace/name`, or `name` for cluster-scoped objects. */
import type { KubeObject } from "../kube/client.ts";

/** The key of an object: `namespace/name`, or `name` when it has no namespace. */
export function objectKey(obj: KubeObject): string {
  return keyOf(obj.metadata.namespace, obj.metadata.name);
}

/** The key of a namespace and name. */
export function keyOf(namespace: string | undefined, name: string): string {
  return namespace ? `${namespace}/${name}` : name;
}

/** Splits a key built by {@link keyOf}. */
export function splitKey(key: string): { namespace?: string; name: string } {
  const slash = key.indexOf("/");
  return slash < 0 ? { name: key } : { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}
