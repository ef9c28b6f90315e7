/**
 * The schema's defaults for a spec read from somewhere other than NICO's own
 * validation (the CLI reads clusters as the API server stores them), so no
 * reader types a default a second time.
 *
 * @module
 */
import { KubernetesClusterSpec } from "./kubernetescluster.ts";

/** `spec.rollout` with every default filled in. */
export type RolloutSettings = KubernetesClusterSpec["rollout"];

/**
 * `spec.rollout` as NICO reads it: what it sets, the schema's defaults for the rest (all of them when it is
 * missing or does not pass the schema).
 *
 * @example
 * ```ts
 * import { rolloutSettings } from "./defaults.ts";
 * const r = rolloutSettings({ order: "ControlPlaneFirst" });
 * [r.order, r.maxUnavailable, r.provisioning, r.drain.onTimeout]; // ["ControlPlaneFirst", 1, "Parallel", "Halt"]
 * rolloutSettings(undefined).order; // "WorkersFirst"
 * ```
 */
export function rolloutSettings(rollout: unknown): RolloutSettings {
  const schema = KubernetesClusterSpec.shape.rollout;
  return schema.safeParse(rollout).data ?? schema.parse(undefined);
}
