/**
 * Whether a node is ready, per the three rules of the NIO contract, for both
 * NIO generations. Pure; table-tested.
 *
 * @module
 */
import { formatDuration } from "../lib/duration.ts";
import { specDrift } from "./drift.ts";
import { SPEC_CHANGED_ANNOTATION } from "./labels.ts";
import { findCondition, type Machine, type NixosConfiguration, type NixosConfigurationSpec } from "./nio.ts";
import { type ClusterRef, isOwnedBy, type Plane } from "./selection.ts";

/**
 * `Joining`: NIO applied the configuration but the workload cluster does not
 * (yet) show the node Ready: its Node is missing or NotReady, NICO cordoned it
 * for a drain, or the workload API cannot be reached (see core/joined.ts).
 */
export type NodeState = "Ready" | "Pending" | "Applying" | "Joining" | "Blocked" | "Failed" | "Removing";

export interface NodeReport {
  machine: string;
  plane: Plane;
  state: NodeState;
  /** CamelCase cause, for conditions. */
  reason: string;
  /** Short human detail, such as `Converging` or `ApplyFailed: nix build failed`. */
  detail: string;
  /** Its configuration carries the spec NICO wants now (it may still be converging). */
  upToDate: boolean;
  /** NIO applied its configuration (set once the workload cluster was consulted; else `state === "Ready"`). */
  applied?: boolean;
}

export interface NodeInput {
  machine: string;
  plane: Plane;
  cluster: ClusterRef;
  /** The spec NICO wants this node to run now. */
  desired: NixosConfigurationSpec | undefined;
  config: NixosConfiguration | undefined;
  machineObj: Machine | undefined;
  now: Date;
  /** A node not applied this long after NICO's last change of its spec is Failed. */
  timeoutMs: number;
}

/**
 * When NICO last changed the spec: its annotation, else the object's creation.
 *
 * @example
 * ```ts
 * import { specChangedAt } from "./readiness.ts";
 * const cfg = { metadata: { name: "c.m", creationTimestamp: "2026-01-01T00:00:00Z" }, spec: { machineRef: { name: "m" } } };
 * specChangedAt(cfg as never)?.toISOString(); // "2026-01-01T00:00:00.000Z"
 * ```
 */
export function specChangedAt(cfg: NixosConfiguration): Date | undefined {
  const t = cfg.metadata.annotations?.[SPEC_CHANGED_ANNOTATION] ?? cfg.metadata.creationTimestamp;
  return t ? new Date(t) : undefined;
}

/**
 * Which NIO generation wrote this status: `newer` has phase/observedGeneration.
 *
 * @example
 * ```ts
 * import { nioGeneration } from "./readiness.ts";
 * const spec = { machineRef: { name: "w-1" }, gitRepo: "https://127.0.0.1/nixos.git", flake: "#w-1", onRemoveFlake: "#minimal", fullInstall: false, additionalFiles: [] };
 * nioGeneration({ metadata: { name: "c.w-1" }, spec, status: { phase: "Ready", observedGeneration: 1 } }); // "newer"
 * nioGeneration({ metadata: { name: "c.w-1" }, spec, status: { conditions: [{ type: "Applied", status: "True" }] } }); // "older"
 * nioGeneration({ metadata: { name: "c.w-1" }, spec }); // "unknown"
 * ```
 */
export function nioGeneration(cfg: NixosConfiguration): "newer" | "older" | "unknown" {
  const s = cfg.status;
  if (!s) return "unknown";
  if (s.phase !== undefined || s.observedGeneration !== undefined) return "newer";
  if (findCondition(s.conditions, "Applied")) return "older";
  return "unknown";
}

/**
 * Rule 2: NIO reports the configuration applied for its current spec.
 *
 * @example
 * ```ts
 * import { appliedForSpec } from "./readiness.ts";
 * const spec = { machineRef: { name: "w-1" }, gitRepo: "https://127.0.0.1/nixos.git", flake: "#w-1", onRemoveFlake: "#minimal", fullInstall: false, additionalFiles: [] };
 * appliedForSpec({ metadata: { name: "c.w-1", generation: 2 }, spec, status: { phase: "Ready", observedGeneration: 2 } }); // true
 * appliedForSpec({ metadata: { name: "c.w-1", generation: 2 }, spec, status: { phase: "Ready", observedGeneration: 1 } }); // false
 * ```
 */
export function appliedForSpec(cfg: NixosConfiguration): boolean {
  const s = cfg.status;
  if (!s) return false;
  if (nioGeneration(cfg) === "newer") {
    // The phase, when NIO writes one, is the word: a Ready condition left over from the last apply
    // must not make a node that is Converging again count as applied.
    const cond = findCondition(s.conditions, "Ready");
    const ready = s.phase !== undefined
      ? s.phase === "Ready"
      : cond?.status === "True" && (cond.observedGeneration ?? s.observedGeneration) === cfg.metadata.generation;
    return ready && s.observedGeneration === cfg.metadata.generation;
  }
  const applied = findCondition(s.conditions, "Applied");
  if (applied?.status !== "True" || applied.reason !== "Success") return false;
  const appliedAt = s.lastAppliedTime ?? applied.lastTransitionTime;
  const changed = specChangedAt(cfg);
  if (!appliedAt || !changed) return false;
  // Kubernetes timestamps have second precision: an apply within the same second counts.
  return new Date(appliedAt).getTime() >= Math.floor(changed.getTime() / 1000) * 1000;
}

/**
 * A node's state. `Ready` means available: NIO applied the configuration it
 * has now and the Machine reports it. Whether that is the spec NICO wants now
 * is `upToDate`; a node running the previous spec is Ready but not up to date.
 *
 * @example
 * ```ts
 * import { nodeReport } from "./readiness.ts";
 * const spec = { machineRef: { name: "w-1" }, gitRepo: "https://127.0.0.1/nixos.git", flake: "#w-1", onRemoveFlake: "#minimal", fullInstall: false, additionalFiles: [] };
 * const config = {
 *   metadata: { name: "c.w-1", generation: 1, labels: { "nico.homystack.com/cluster": "c" } },
 *   spec,
 *   status: { phase: "Ready", observedGeneration: 1 },
 * };
 * const machineObj = { metadata: { name: "w-1" }, status: { hasConfiguration: true, appliedConfiguration: "c.w-1" } };
 * const cluster = { name: "c", namespace: "ns" };
 * const r = nodeReport({ machine: "w-1", plane: "dataPlane", cluster, desired: spec, config, machineObj, now: new Date(), timeoutMs: 600_000 });
 * r.state; // "Ready"
 * r.upToDate; // true
 * ```
 */
export function nodeReport(i: NodeInput): NodeReport {
  const cfg = i.config;
  const owned = cfg !== undefined && isOwnedBy(cfg, i.cluster);
  // By content, not by NICO's annotation: a hand-edited child is not up to date.
  const upToDate = owned && i.desired !== undefined && specDrift(cfg.spec, i.desired).length === 0;
  const base = { machine: i.machine, plane: i.plane, upToDate };
  if (!cfg || !owned) {
    return { ...base, state: "Pending", reason: "ConfigurationPending", detail: "NixosConfiguration not created yet" };
  }
  if (cfg.metadata.deletionTimestamp) {
    return { ...base, state: "Removing", reason: "Removing", detail: "NIO is applying #minimal" };
  }
  const s = cfg.status;
  const stalled = findCondition(s?.conditions, "Stalled");
  if (s?.phase === "Degraded" || stalled?.status === "True") {
    const why = stalled?.reason ?? "Degraded";
    const msg = stalled?.message ?? s?.message;
    return { ...base, state: "Failed", reason: why, detail: msg ? `${why}: ${msg}` : why };
  }
  if (s?.phase === "Blocked") {
    const ready = findCondition(s.conditions, "Ready");
    const why = ready?.reason ?? "Blocked";
    return { ...base, state: "Blocked", reason: why, detail: `Blocked: ${why}` };
  }
  if (appliedForSpec(cfg)) {
    const m = i.machineObj?.status;
    if (m?.hasConfiguration && m.appliedConfiguration === cfg.metadata.name) {
      return { ...base, state: "Ready", reason: "Applied", detail: "applied" };
    }
    return {
      ...base,
      state: "Applying",
      reason: "WaitingForMachine",
      detail: `applied; waiting for Machine ${i.machine} to report it`,
    };
  }
  const changed = specChangedAt(cfg);
  if (changed && i.now.getTime() - changed.getTime() > i.timeoutMs) {
    return {
      ...base,
      state: "Failed",
      reason: "ApplyTimeout",
      detail: `not applied within ${formatDuration(i.timeoutMs)} of the last change`,
    };
  }
  // NIO's phase can still say Ready for the generation before this one: never call a waiting node Ready.
  const detail = !s?.phase
    ? "waiting for NIO"
    : s.phase === "Ready"
    ? `waiting for NIO to apply generation ${cfg.metadata.generation ?? "?"}`
    : s.phase;
  return { ...base, state: "Applying", reason: "Applying", detail };
}
