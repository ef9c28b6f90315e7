/**
 * Whether a node is ready, per the three rules of the NIO contract, for both
 * NIO generations. Pure; table-tested.
 *
 * @module
 */
import { nextCronTick, parseCron } from "../../lib/cron.ts";
import { formatDuration } from "../../lib/duration.ts";
import { specDrift } from "../render/drift.ts";
import { SPEC_CHANGED_ANNOTATION } from "../contract/labels.ts";
import {
  findCondition,
  type Machine,
  NIO_DEFAULT_SCHEDULE,
  type NioGeneration,
  type NixosConfiguration,
  type NixosConfigurationSpec,
} from "../contract/nio.ts";
import { type Run, runSoonGraceMs, runVerdict } from "./runs.ts";
import { type ClusterRef, isOwnedBy, type Plane } from "../machines/selection.ts";

/**
 * `Joining`: NIO applied the configuration but the workload cluster does not
 * (yet) show the node Ready: its Node is missing or NotReady, NICO cordoned it
 * for a drain, or the workload API cannot be reached (see core/nodes/joined.ts).
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
  /** When NIO finished applying its current configuration, if known. */
  appliedAt?: Date | undefined;
  /**
   * The workload API went away after this node's current change and before that change was seen working: the
   * change may be why. Only such a node may still be changed (toward a newer spec) while the API is away.
   */
  suspect?: boolean;
  /**
   * It ran its change before the workload API came back from an outage, moments ago, and its Node has not shown
   * it working since: not counted available, yet not down either (nothing is changed out of order for it).
   */
  settling?: boolean;
  /** NICO changed it while the workload API was away, so it has not been seen working since. */
  changedInOutage?: boolean;
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
  /** Which NIO applies it. */
  nio: NioGeneration;
  /** NIO v1: the runs of its day-two workload (see core/nodes/runs.ts). */
  runs?: readonly Run[] | undefined;
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
 * The older NIO reports the configuration applied for its current spec: `Applied=True` (reason
 * `Success`) no older than NICO's last change of the spec.
 *
 * @example
 * ```ts
 * import { appliedForSpec } from "./readiness.ts";
 * const spec = { machineRef: { name: "w-1" }, gitRepo: "https://127.0.0.1/nixos.git", flake: "#w-1", onRemoveFlake: "#minimal", additionalFiles: [] };
 * const metadata = { name: "c.w-1", annotations: { "nico.homystack.com/spec-changed-at": "2026-01-01T00:00:00.500Z" } };
 * const applied = (at: string) => ({ conditions: [{ type: "Applied", status: "True", reason: "Success" }], lastAppliedTime: at });
 * appliedForSpec({ metadata, spec, status: applied("2026-01-01T00:00:01Z") }); // true
 * appliedForSpec({ metadata, spec, status: applied("2025-12-31T23:59:59Z") }); // false
 * ```
 */
export function appliedForSpec(cfg: NixosConfiguration): boolean {
  const s = cfg.status;
  const applied = findCondition(s?.conditions, "Applied");
  if (applied?.status !== "True" || applied.reason !== "Success") return false;
  const appliedAt = s?.lastAppliedTime ?? applied.lastTransitionTime;
  const changed = specChangedAt(cfg);
  if (!appliedAt || !changed) return false;
  // Kubernetes timestamps have second precision: an apply within the same second counts.
  return new Date(appliedAt).getTime() >= Math.floor(changed.getTime() / 1000) * 1000;
}

/**
 * A node's state. `Ready` means available: NIO applied the configuration it
 * has now (older NIO: its `Applied` condition and the Machine's write-back;
 * NIO v1: a run of it completed). Whether that is the spec NICO wants now is
 * `upToDate`; a node running the previous spec is Ready but not up to date.
 *
 * @example
 * ```ts
 * import { nodeReport } from "./readiness.ts";
 * const spec = { machineRef: { name: "w-1" }, gitRepo: "https://127.0.0.1/nixos.git", flake: "#w-1", onRemoveFlake: "#minimal", additionalFiles: [] };
 * const config = {
 *   metadata: { name: "c.w-1", generation: 1, creationTimestamp: "2026-01-01T00:00:00Z", labels: { "nico.homystack.com/cluster": "c" } },
 *   spec,
 *   status: { phase: "Ready", observedGeneration: 1 },
 * };
 * const run = { job: "c.w-1-day2-r-1-manual", firedBy: "NixCronJob" as const, createdAt: new Date("2026-01-01T00:00:01Z"), active: 0, failedAttempts: 0, complete: true, gaveUp: false };
 * const cluster = { name: "c", namespace: "ns" };
 * const input = { machine: "w-1", plane: "dataPlane" as const, cluster, desired: spec, config, machineObj: undefined, now: new Date("2026-01-01T00:01:00Z"), timeoutMs: 600_000, nio: "v1" as const };
 * nodeReport({ ...input, runs: [run] }).state; // "Ready"
 * nodeReport({ ...input, runs: [] }).state; // "Applying": v1's phase Ready proves nothing
 * ```
 */
export function nodeReport(i: NodeInput): NodeReport {
  const cfg = i.config;
  const owned = cfg !== undefined && isOwnedBy(cfg, i.cluster);
  const base = { machine: i.machine, plane: i.plane, upToDate: carriesDesired(i) };
  if (!cfg || !owned) {
    return { ...base, state: "Pending", reason: "ConfigurationPending", detail: "NixosConfiguration not created yet" };
  }
  if (cfg.metadata.deletionTimestamp) {
    return { ...base, state: "Removing", reason: "Removing", detail: `NIO is applying ${cfg.spec.onRemoveFlake}` };
  }
  const s = cfg.status;
  // Before Stalled: NIO v1 sets Stalled=True on Blocked too, and an unreachable Machine is no failed apply.
  if (s?.phase === "Blocked") {
    const ready = findCondition(s.conditions, "Ready");
    const why = ready?.reason ?? "Blocked";
    const msg = ready?.message ? `: ${ready.message}` : "";
    return { ...base, state: "Blocked", reason: why, detail: `Blocked by NIO (${why}${msg}); the rollout waits` };
  }
  return i.nio === "v1" ? v1Report(i, cfg, base) : olderReport(i, cfg, base);
}

type Base = Pick<NodeReport, "machine" | "plane" | "upToDate">;

/** Whether the configuration, owned by the cluster, carries the desired spec: by content, not by NICO's annotation (a hand-edited child is not up to date). */
function carriesDesired(i: Pick<NodeInput, "cluster" | "config" | "desired">): boolean {
  const cfg = i.config;
  return cfg !== undefined && isOwnedBy(cfg, i.cluster) && i.desired !== undefined &&
    specDrift(cfg.spec, i.desired).length === 0;
}

/**
 * A report made without the desired spec (as the pass's runs step makes it), judged against it: only `upToDate`
 * depends on the desired spec, the rest on the configuration, the Machine and the runs.
 *
 * @example
 * ```ts
 * import { judgedAgainst } from "./readiness.ts";
 * const spec = { machineRef: { name: "w-1" }, gitRepo: "https://127.0.0.1/nixos.git", flake: "#w-1", onRemoveFlake: "#minimal", additionalFiles: [] };
 * const config = { metadata: { name: "c.w-1", labels: { "nico.homystack.com/cluster": "c" } }, spec };
 * const r = { machine: "w-1", plane: "dataPlane" as const, upToDate: false, state: "Ready" as const, reason: "Applied", detail: "applied" };
 * judgedAgainst(r, { cluster: { name: "c", namespace: "ns" }, config, desired: spec }).upToDate; // true
 * judgedAgainst(r, { cluster: { name: "c", namespace: "ns" }, config, desired: undefined }).upToDate; // false
 * ```
 */
export function judgedAgainst(r: NodeReport, i: Pick<NodeInput, "cluster" | "config" | "desired">): NodeReport {
  return { ...r, upToDate: carriesDesired(i) };
}

/** The older NIO: `Applied` newer than NICO's last change, then the Machine's write-back. */
function olderReport(i: NodeInput, cfg: NixosConfiguration, base: Base): NodeReport {
  const stalled = findCondition(cfg.status?.conditions, "Stalled");
  if (cfg.status?.phase === "Degraded" || stalled?.status === "True") {
    const why = stalled?.reason ?? "Degraded";
    const msg = stalled?.message ?? cfg.status?.message;
    return { ...base, state: "Failed", reason: why, detail: msg ? `${why}: ${msg}` : why };
  }
  if (appliedForSpec(cfg)) {
    const m = i.machineObj?.status;
    if (m?.hasConfiguration && m.appliedConfiguration === cfg.metadata.name) {
      const at = cfg.status?.lastAppliedTime;
      return {
        ...base,
        state: "Ready",
        reason: "Applied",
        detail: "applied",
        appliedAt: at ? new Date(at) : undefined,
      };
    }
    return {
      ...base,
      state: "Applying",
      reason: "WaitingForMachine",
      detail: `applied; waiting for Machine ${i.machine} to report it`,
    };
  }
  return timedOut(i, cfg, base, specChangedAt(cfg)) ??
    { ...base, state: "Applying", reason: "Applying", detail: "waiting for NIO to apply it" };
}

/** NIO v1: the node's run Jobs since NICO's last change; v1's own phase only for what runs cannot say. */
function v1Report(i: NodeInput, cfg: NixosConfiguration, base: Base): NodeReport {
  const s = cfg.status;
  const changed = specChangedAt(cfg);
  const stalled = findCondition(s?.conditions, "Stalled");
  const nioSays = stalled?.message ?? findCondition(s?.conditions, "Ready")?.message;
  if (s?.phase === "Degraded" && (installFailed(cfg) || /stalled/i.test(nioSays ?? ""))) {
    return { ...base, state: "Failed", reason: "NioDegraded", detail: `NIO: ${nioSays ?? "Degraded"}` };
  }
  if (!changed) return { ...base, state: "Applying", reason: "Applying", detail: "waiting for NIO" };
  const v = runVerdict(i.runs ?? [], changed);
  switch (v.state) {
    case "applied":
      return { ...base, state: "Ready", reason: "Applied", detail: `applied (run ${v.job})`, appliedAt: v.at };
    case "failed":
      return { ...base, state: "Failed", reason: "RunFailed", detail: v.detail };
    case "running":
      return timedOut(i, cfg, base, changed) ?? { ...base, state: "Applying", reason: "Running", detail: v.detail };
  }
  // Nothing ran since the change. A new commit starts a run at once; otherwise NICO brings the schedule forward
  // after a grace (core/nodes/runs.ts), so until then no due time is promised. After it, the first scheduled run
  // is the earliest one can.
  const fresh = i.now.getTime() - changed.getTime() < runSoonGraceMs(cfg.metadata.generation);
  const due = fresh ? undefined : nextRun(cfg, i.now);
  const when = due ? `, due ${clock(due)}` : "";
  return timedOut(i, cfg, base, nextRun(cfg, changed) ?? changed) ??
    {
      ...base,
      state: "Applying",
      reason: "WaitingForRun",
      detail: fresh
        ? `waiting for NIO to start a run of ${i.machine}`
        : `waiting for NIO's next run of ${i.machine}${when}`,
    };
}

/** A full install NIO gave up on (it retries it a few times first). */
function installFailed(cfg: NixosConfiguration): boolean {
  return cfg.spec.fullInstall === true &&
    (cfg.status as { fullDiskInstallCompleted?: boolean }).fullDiskInstallCompleted !== true;
}

/** Failed when nothing was applied within the node timeout of `from`. */
function timedOut(i: NodeInput, cfg: NixosConfiguration, base: Base, from: Date | undefined): NodeReport | undefined {
  if (!from || i.now.getTime() - from.getTime() <= i.timeoutMs) return undefined;
  const what = cfg.status?.phase && cfg.status.phase !== "Ready" ? ` (NIO: ${cfg.status.phase})` : "";
  return {
    ...base,
    state: "Failed",
    reason: "ApplyTimeout",
    detail: `not applied within ${formatDuration(i.timeoutMs)} of the last change${what}`,
  };
}

/** When NIO v1 next runs this configuration on schedule (a bad schedule: never). */
export function nextRun(cfg: NixosConfiguration, after: Date): Date | undefined {
  try {
    return nextCronTick(parseCron(cfg.spec.dayTwoSchedule ?? NIO_DEFAULT_SCHEDULE), after);
  } catch {
    return undefined;
  }
}

/** `14:30 UTC`: minutes are all a scheduled run has. */
function clock(d: Date): string {
  return `${d.toISOString().slice(11, 16)} UTC`;
}

/**
 * Whether NICO must wait for the next second before it writes a new spec to
 * this node. Kubernetes stamps times in whole seconds, so a change written in
 * the same second as the node's last apply (older NIO: `lastAppliedTime`) or
 * last run (NIO v1: a run Job's creation), or as its previous change, could
 * not be told apart from it afterwards: an apply of the old spec would pass
 * for one of the new.
 *
 * @example
 * ```ts
 * import { sameSecondAsLast } from "./readiness.ts";
 * const cfg = { metadata: { name: "c.w-1" }, spec: { machineRef: { name: "w-1" } }, status: { lastAppliedTime: "2026-01-01T00:00:10Z" } };
 * sameSecondAsLast(cfg as never, [], new Date("2026-01-01T00:00:10.400Z")); // true
 * sameSecondAsLast(cfg as never, [], new Date("2026-01-01T00:00:11.000Z")); // false
 * ```
 */
export function sameSecondAsLast(cfg: NixosConfiguration, runs: readonly Run[], now: Date): boolean {
  const second = Math.floor(now.getTime() / 1000);
  const same = (d: Date | string | undefined) => d !== undefined && Math.floor(new Date(d).getTime() / 1000) === second;
  return same(cfg.status?.lastAppliedTime) || same(specChangedAt(cfg)) || runs.some((r) => same(r.createdAt));
}
