/**
 * When a new status is written: at once for what readers wait on, later for
 * progress. A bring-up or a rollout changes counts and messages at every node
 * step; written each time, that is a dozen writes per cluster (and as many
 * watch events for every reader). Readers wait on the phase,
 * `observedGeneration` (unless `Reconciling` stays True, which reads "in
 * progress" either way), the conditions the registry marks `watched` turning
 * True or ceasing to be (`Ready`, `Reconciling`, `Stalled`, `Paused`,
 * `Remediating`), and a condition taking a reason whose urgency is `now` (a
 * problem in `Ready`, a new reason of `Stalled`, a refused remediation): those
 * go out in the pass that finds them; the rest is coalesced and written at
 * most {@link STATUS_DELAY_MS} after it was first seen, or with the next
 * urgent change, whichever comes first. The registry is crds/conditions/mod.ts.
 *
 * @module
 */
import type { KubernetesClusterStatus } from "../../crds/kubernetescluster.ts";
import { reasonSpec, WATCHED } from "../../crds/conditions/mod.ts";

/** The longest a progress-only change waits before it is written. */
export const STATUS_DELAY_MS = 10_000;

export type StatusWrite =
  | { kind: "none" }
  | { kind: "now"; why: string }
  | { kind: "later"; inMs: number };

/**
 * Whether `next` is written now, later, or not at all.
 *
 * `pendingSince` is when a deferred difference was first seen (undefined: none is pending); `delayMs` bounds
 * how long it waits.
 *
 * @example
 * ```ts
 * import { statusWrite } from "./write.ts";
 * const ready = (status: "True" | "False", reason: string) => ({ type: "Ready", status, reason, message: "", lastTransitionTime: "" });
 * const prev = { phase: "Provisioning" as const, conditions: [ready("False", "WaitingForWorkers")] };
 * statusWrite(prev, { ...prev, dataPlane: { ready: 1 } as never }, undefined, 0, 10_000); // { kind: "later", inMs: 10000 }
 * statusWrite(prev, { phase: "Ready", conditions: [ready("True", "ClusterReady")] }, undefined, 0, 10_000).kind; // "now"
 * ```
 */
export function statusWrite(
  previous: KubernetesClusterStatus | undefined,
  next: KubernetesClusterStatus,
  pendingSince: number | undefined,
  nowMs: number,
  delayMs = STATUS_DELAY_MS,
): StatusWrite {
  if (sameStatus(previous ?? {}, next)) return { kind: "none" };
  const why = urgency(previous, next);
  if (why) return { kind: "now", why };
  const since = pendingSince ?? nowMs;
  const left = since + delayMs - nowMs;
  return left <= 0 ? { kind: "now", why: "progress held back long enough" } : { kind: "later", inMs: left };
}

/** Why the change cannot wait, or undefined when it is progress only. */
function urgency(previous: KubernetesClusterStatus | undefined, next: KubernetesClusterStatus): string | undefined {
  if (!previous?.phase) return "first status";
  if (previous.phase !== next.phase) return "phase";
  // Which shard reconciles the cluster: a reader following a move wants to see it at once.
  if (previous.shard !== next.shard) return "shard";
  // A new observedGeneration matters to readers unless both say Reconciling=True: kstatus and the GitOps checks
  // read "in progress" either way (a new cluster's first pass, resolving its ref, then its first plan).
  const reconciling = (s: KubernetesClusterStatus) => condition(s, "Reconciling")?.status === "True";
  if (previous.observedGeneration !== next.observedGeneration && !(reconciling(previous) && reconciling(next))) {
    return "observedGeneration";
  }
  for (const type of WATCHED) {
    // Absent, False and Unknown all read "not so": only turning True or ceasing to be is a flip.
    if ((condition(previous, type)?.status === "True") !== (condition(next, type)?.status === "True")) return type;
  }
  for (const c of next.conditions ?? []) {
    // A reason the registry does not know (one an older NICO wrote) is written at once too.
    const urgent = (reasonSpec(c.type, c.status, c.reason)?.urgency ?? "now") === "now";
    if (urgent && condition(previous, c.type)?.reason !== c.reason) return `${c.type} ${c.reason}`;
  }
  return undefined;
}

function condition(s: KubernetesClusterStatus, type: string) {
  return s.conditions?.find((c) => c.type === type);
}

/** Equal as JSON (fields set to undefined count as absent). */
export function sameStatus(a: KubernetesClusterStatus, b: KubernetesClusterStatus): boolean {
  return JSON.stringify(canonical(a)) === JSON.stringify(canonical(b));
}

function canonical(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(canonical);
  if (v === null || typeof v !== "object") return v;
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(v).sort()) {
    const x = (v as Record<string, unknown>)[k];
    if (x !== undefined) out[k] = canonical(x);
  }
  return out;
}

/**
 * The JSON merge patch (RFC 7396) that turns `previous` into `next`: every field `next` lacks, at any depth of
 * nested objects, is set to null (a merge patch leaves a field it does not name as it was); lists are replaced
 * whole, as a merge patch does.
 *
 * @example
 * ```ts
 * import { statusPatch } from "./write.ts";
 * const previous = { phase: "Updating" as const, rollout: { upToDate: 1, total: 2, draining: [] }, revision: "abc" };
 * const patch = statusPatch(previous, { phase: "Ready", rollout: { upToDate: 2, total: 2 } });
 * patch.rollout; // { upToDate: 2, total: 2, draining: null }
 * patch.revision; // null
 * ```
 */
export function statusPatch(previous: KubernetesClusterStatus, next: KubernetesClusterStatus): Record<string, unknown> {
  return mergePatch(previous, next) as Record<string, unknown>;
}

function mergePatch(previous: unknown, next: unknown): unknown {
  const isObject = (v: unknown): v is Record<string, unknown> =>
    v !== null && typeof v === "object" && !Array.isArray(v);
  if (!isObject(previous) || !isObject(next)) return next;
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(previous)) if (next[k] === undefined && previous[k] !== undefined) out[k] = null;
  for (const [k, v] of Object.entries(next)) if (v !== undefined) out[k] = mergePatch(previous[k], v);
  return out;
}
