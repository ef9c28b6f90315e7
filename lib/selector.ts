/** Kubernetes label selectors: matching and the checks the API server makes. */
import type { LabelSelector } from "./kube/meta.ts";

/**
 * Whether `labels` satisfy `selector`. An absent or empty selector matches
 * everything, as in Kubernetes.
 *
 * @example
 * ```ts
 * matches({ matchLabels: { role: "cp" } }, { role: "cp" }) // true
 * ```
 */
export function matches(selector: LabelSelector | undefined, labels: Record<string, string> | undefined): boolean {
  const l = labels ?? {};
  for (const [k, v] of Object.entries(selector?.matchLabels ?? {})) {
    if (l[k] !== v) return false;
  }
  for (const req of selector?.matchExpressions ?? []) {
    const has = Object.hasOwn(l, req.key);
    const value = l[req.key];
    const values = req.values ?? [];
    switch (req.operator) {
      case "In":
        if (!has || !values.includes(value!)) return false;
        break;
      case "NotIn":
        if (has && values.includes(value!)) return false;
        break;
      case "Exists":
        if (!has) return false;
        break;
      case "DoesNotExist":
        if (has) return false;
        break;
    }
  }
  return true;
}

/** A short human form: `role=cp,zone in (a,b)`; `everything` when empty. */
export function describeSelector(selector: LabelSelector | undefined): string {
  const parts = Object.entries(selector?.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`);
  for (const r of selector?.matchExpressions ?? []) {
    const vals = (r.values ?? []).join(",");
    parts.push(
      r.operator === "In"
        ? `${r.key} in (${vals})`
        : r.operator === "NotIn"
        ? `${r.key} notin (${vals})`
        : r.operator === "Exists"
        ? r.key
        : `!${r.key}`,
    );
  }
  return parts.length ? parts.join(",") : "everything";
}

const NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const PREFIX = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Problems with a label key, empty when valid. */
export function labelKeyProblems(key: string): string[] {
  const slash = key.lastIndexOf("/");
  const prefix = slash >= 0 ? key.slice(0, slash) : undefined;
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  const out: string[] = [];
  if (prefix !== undefined && (prefix.length > 253 || !PREFIX.test(prefix))) {
    out.push(`label key prefix '${prefix}' must be a DNS subdomain`);
  }
  if (!NAME.test(name)) {
    out.push(
      `label key name '${name}' must be 1-63 characters of letters, digits, '-', '_' or '.', starting and ending with a letter or digit`,
    );
  }
  return out;
}

/** Problems with a label value, empty when valid. */
export function labelValueProblems(value: string): string[] {
  return value === "" || NAME.test(value) ? [] : [
    `label value '${value}' must be at most 63 characters of letters, digits, '-', '_' or '.', starting and ending with a letter or digit`,
  ];
}
