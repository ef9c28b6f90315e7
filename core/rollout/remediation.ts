/**
 * Remediation: what NICO does about a plane's unhealthy members (judged by
 * core/nodes/health.ts). At most one is taken out of service per plane and pass,
 * the one unhealthy the longest, and only within the limits: not above
 * `maxUnhealthy`, not a replacement that failed again beyond `maxRetries`,
 * and on the control plane one at a time, only with a spare, and never when
 * the healthy members left would not keep etcd quorum. Taking a member out
 * is marking its Machine (core/machines/marks.ts); selection and the rollout planner
 * do the rest. Pure; table-tested.
 *
 * @module
 */
import { durationMs } from "../../crds/kubernetescluster.ts";
import type { RemediationSpec } from "../../crds/remediation.ts";
import { listNames } from "../../lib/text.ts";
import type { HealthChecks, Unhealthy } from "../nodes/health.ts";
import type { NodeFacts } from "../nodes/facts.ts";
import type { Plane } from "../contract/labels.ts";
import { mayRemove, type MemberView, quorumFacts } from "../etcd/members.ts";
import { counted } from "../etcd/membership.ts";

/** A plane's remediation settings, durations in milliseconds (a zero check is off). */
export interface RemediationSettings extends HealthChecks {
  maxUnhealthy: number | string;
  maxRetries: number;
  retryPeriodMs: number;
  /** Where they come from, for messages: `remediation`, or the deprecated `replaceUnhealthyAfter`. */
  field: "remediation" | "replaceUnhealthyAfter";
}

/**
 * The settings of a plane's spec: its `remediation`, else the deprecated `replaceUnhealthyAfter` (the
 * unreachable check alone, the other limits at their defaults), else none (off).
 *
 * @example
 * ```ts
 * import { remediationSettings } from "./remediation.ts";
 * remediationSettings({ replaceUnhealthyAfter: "10m" })?.unreachableMs; // 600000
 * remediationSettings({}); // undefined
 * ```
 */
export function remediationSettings(
  plane: { remediation?: RemediationSpec | undefined; replaceUnhealthyAfter?: string | undefined },
): RemediationSettings | undefined {
  const r = plane.remediation;
  if (r) {
    return {
      notReadyMs: durationMs(r.nodeNotReadyTimeout),
      startupMs: durationMs(r.nodeStartupTimeout),
      unreachableMs: durationMs(r.machineUnreachableTimeout),
      maxUnhealthy: r.maxUnhealthy,
      maxRetries: r.maxRetries,
      retryPeriodMs: durationMs(r.retryPeriod),
      field: "remediation",
    };
  }
  if (!plane.replaceUnhealthyAfter) return undefined;
  return {
    unreachableMs: durationMs(plane.replaceUnhealthyAfter),
    maxUnhealthy: "100%",
    maxRetries: 3,
    retryPeriodMs: 3_600_000,
    field: "replaceUnhealthyAfter",
  };
}

/**
 * How many unhealthy members `maxUnhealthy` allows in a plane of `members`: a count as is, a percentage rounded
 * up (so a plane of one member may always be remediated).
 *
 * @example
 * ```ts
 * import { unhealthyAllowed } from "./remediation.ts";
 * unhealthyAllowed("40%", 5); // 2
 * unhealthyAllowed("40%", 1); // 1
 * unhealthyAllowed(3, 10); // 3
 * ```
 */
export function unhealthyAllowed(max: number | string, members: number): number {
  if (typeof max === "number") return max;
  const pct = /^(\d+)%$/.exec(max);
  return pct ? Math.ceil((Number(pct[1]) * members) / 100) : Number(max);
}

/**
 * The members a control plane of `n` must keep healthy for etcd quorum: a majority.
 *
 * @example
 * ```ts
 * import { quorum } from "./remediation.ts";
 * [1, 2, 3, 4, 5].map(quorum); // [1, 2, 2, 3, 3]
 * ```
 */
export function quorum(n: number): number {
  return Math.floor(n / 2) + 1;
}

/** What deciding about one plane reads. */
export interface PlaneFacts {
  plane: Plane;
  settings: RemediationSettings;
  mode: "explicit" | "selector";
  members: string[];
  /** Members whose node is Ready now (their Node too). */
  ready: string[];
  unhealthy: Unhealthy[];
  /** Machines this cluster took out of this plane that have not left yet. */
  inFlight: string[];
  /** When this cluster's marks on Machines of this plane were made. */
  marks: Date[];
  /**
   * What deciding reads of each member's facts record (core/nodes/facts.ts), by machine: when its configuration
   * was created, and the Machine that would take its place if it left (looked for only for the unhealthy ones).
   */
  facts: ReadonlyMap<string, Pick<NodeFacts, "createdAt" | "replacement">>;
  bootstrap?: string | undefined;
  /** No spec.controlPlaneEndpoint: the bootstrap node's address is the API endpoint. */
  endpointIsBootstrap: boolean;
  /** The workload API answers and its Nodes are listed. */
  nodesKnown: boolean;
  /**
   * etcd's members as NICO sees them (control plane, when the flake follows the etcd contract), and the member on
   * each node's address, by machine: quorum is then counted from etcd's own health, not from Nodes. `quorumLost`
   * (why) when members answer without a leader and so list none: no remediation then.
   */
  etcd?: { members: readonly MemberView[]; memberOf: ReadonlyMap<string, string>; quorumLost?: string } | undefined;
  /** The cluster has been Ready once. */
  provisioned: boolean;
  paused: boolean;
  /** The selector, for messages (`role=worker`). */
  selector: string;
  now: Date;
}

/** Why NICO remediates none of a plane's unhealthy members. */
export type Refusal =
  | "Provisioning"
  | "Paused"
  | "TooManyUnhealthy"
  | "WorkloadAPIUnavailable"
  | "OneAtATime"
  | "QuorumWouldBeLost"
  | "RetryLimit"
  | "BootstrapIsEndpoint"
  | "ExplicitMachines"
  | "NoSpare";

export type PlaneDecision =
  | { plane: Plane; kind: "healthy" }
  | { plane: Plane; kind: "take"; target: Unhealthy; spare?: string | undefined; unhealthy: Unhealthy[] }
  | { plane: Plane; kind: "refuse"; reason: Refusal; message: string; unhealthy: Unhealthy[] };

const WORDS: Record<Plane, string> = { controlPlane: "control-plane", dataPlane: "worker" };

/** `w-1 (NodeNotReady: …)` for each. */
export function describeUnhealthy(list: Unhealthy[]): string {
  return listNames(list.map((u) => `${u.machine} (${u.reason}: ${u.message})`), 3);
}

/**
 * Decides about one plane.
 *
 * @example
 * ```ts
 * import { decideRemediation } from "./remediation.ts";
 * const since = new Date("2026-01-01T00:00:00Z");
 * const d = decideRemediation({
 *   plane: "controlPlane", mode: "selector", selector: "role=cp",
 *   settings: { notReadyMs: 300_000, maxUnhealthy: "40%", maxRetries: 3, retryPeriodMs: 3_600_000, field: "remediation" },
 *   members: ["cp-1", "cp-2", "cp-3"], ready: ["cp-1"], inFlight: [], marks: [],
 *   unhealthy: [
 *     { machine: "cp-2", reason: "NodeNotReady", message: "Node cp-2 NotReady for 6m", since },
 *     { machine: "cp-3", reason: "NodeNotReady", message: "Node cp-3 NotReady for 6m", since },
 *   ],
 *   facts: new Map([["cp-2", { createdAt: since, replacement: "cp-4" }], ["cp-3", { createdAt: since, replacement: "cp-4" }]]),
 *   endpointIsBootstrap: false,
 *   nodesKnown: true, provisioned: true, paused: false, now: new Date("2026-01-01T00:06:00Z"),
 * });
 * d.kind === "refuse" && d.reason; // "QuorumWouldBeLost"
 * ```
 */
export function decideRemediation(f: PlaneFacts): PlaneDecision {
  const { plane, unhealthy } = f;
  if (!unhealthy.length) return { plane, kind: "healthy" };
  const refuse = (reason: Refusal, message: string): PlaneDecision => ({
    plane,
    kind: "refuse",
    reason,
    message,
    unhealthy,
  });
  const words = WORDS[plane];
  const field = `spec.${plane}.${f.settings.field}`;
  const sick = describeUnhealthy(unhealthy);
  if (!f.provisioned) {
    return refuse(
      "Provisioning",
      `${sick}: NICO remediates nothing during the cluster's first bring-up; mark a Machine out of service by hand ` +
        `(annotation nico.homystack.com/remediated) to have it replaced`,
    );
  }
  if (f.paused) {
    return refuse("Paused", `${sick}: paused; NICO takes nothing out of service until the pause is lifted`);
  }
  const allowed = unhealthyAllowed(f.settings.maxUnhealthy, f.members.length);
  if (unhealthy.length > allowed) {
    return refuse(
      "TooManyUnhealthy",
      `${unhealthy.length} of ${f.members.length} ${words} nodes are unhealthy, more than maxUnhealthy allows ` +
        `(${allowed}: ${f.settings.maxUnhealthy}): NICO replaces none (a rack, a switch or the network may be down): ` +
        `${sick}; bring them back, raise ${field}.maxUnhealthy, or mark a Machine out of service by hand`,
    );
  }
  if (plane === "controlPlane") {
    const refused = controlPlaneRefusal(f, sick, refuse);
    if (refused) return refused;
  }
  const target = [...unhealthy].sort((a, b) =>
    a.since.getTime() - b.since.getTime() || byName(a.machine, b.machine)
  )[0]!;
  if (plane === "controlPlane" && target.machine === f.bootstrap && f.endpointIsBootstrap) {
    return refuse(
      "BootstrapIsEndpoint",
      `${sick}: ${target.machine} is the bootstrap node and the API endpoint (no spec.controlPlaneEndpoint), so ` +
        `a replacement would leave the kubeconfig pointing at a dead address: set spec.controlPlaneEndpoint to an ` +
        `address every control-plane node serves (a load balancer or a virtual IP)`,
    );
  }
  const quorumLost = plane === "controlPlane" ? etcdRefusal(f, target, sick) : undefined;
  if (quorumLost) return refuse("QuorumWouldBeLost", quorumLost);
  const retries = retryRefusal(f, target, field);
  if (retries) return refuse("RetryLimit", retries);
  const spare = f.facts.get(target.machine)?.replacement;
  if (!spare && f.mode === "explicit") {
    return refuse(
      "ExplicitMachines",
      `${sick}: spec.${plane}.machines lists the Machines and no spare is free, and NICO does not change an ` +
        `explicit list: replace ${target.machine} in spec.${plane}.machines, or add spec.${plane}.spares`,
    );
  }
  if (!spare && plane === "controlPlane") {
    return refuse(
      "NoSpare",
      `${sick}: no free Machine matches ${f.selector || "the selector"} to replace it, and a control-plane member ` +
        `is never removed without a replacement (etcd still counts it until its Node goes, and the members left ` +
        `would be restarted for the new member list): add a Machine matching ${f.selector || "the selector"}, or ` +
        `repair ${target.machine}`,
    );
  }
  return { plane, kind: "take", target, spare, unhealthy };
}

const byName = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** The control plane's own limits: one at a time, the API must answer, quorum, the endpoint. */
function controlPlaneRefusal(
  f: PlaneFacts,
  sick: string,
  refuse: (reason: Refusal, message: string) => PlaneDecision,
): PlaneDecision | undefined {
  if (f.inFlight.length) {
    return refuse(
      "OneAtATime",
      `${sick}: waits until ${listNames(f.inFlight)} has left; one control-plane member is replaced at a time`,
    );
  }
  if (!f.nodesKnown) {
    return refuse(
      "WorkloadAPIUnavailable",
      `${sick}: the workload API does not answer, so NICO cannot see whether the other control-plane members keep ` +
        `quorum; it replaces no control-plane member until the API answers`,
    );
  }
  const n = f.members.length;
  const bad = new Set(f.unhealthy.map((u) => u.machine));
  const healthy = f.ready.filter((m) => f.members.includes(m) && !bad.has(m)).length;
  const needed = quorum(n);
  // Nodes first (a Node NotReady may sit on a member that still answers); where NICO sees etcd, etcdRefusal also asks it.
  if (healthy < needed) {
    const what = n === 1
      ? `a one-node control plane cannot be remediated: its only member holds the cluster's state (etcd); bring ` +
        `${f.members[0]} back or restore it from a backup`
      : `${healthy} of ${n} control-plane members are healthy and etcd needs ${needed} for quorum: NICO replaces ` +
        `none (a new member cannot join without quorum, and taking one away could lose what is left); bring a ` +
        `member back (power, network), or restore etcd from a backup`;
    return refuse("QuorumWouldBeLost", `${sick}: ${what}`);
  }
  return undefined;
}

/**
 * etcd's own view, where NICO sees it: a replacement joins only while etcd has quorum, and the target's member
 * leaves only if the members left keep a healthy majority (a dead member of three may go; a healthy one while
 * another is dead may not).
 */
function etcdRefusal(f: PlaneFacts, target: Unhealthy, sick: string): string | undefined {
  if (!f.etcd) return undefined;
  if (f.etcd.quorumLost) {
    return `${sick}: ${f.etcd.quorumLost}, so no new member can join; NICO replaces none: bring a member back first`;
  }
  const { members } = f.etcd;
  const id = f.etcd.memberOf.get(target.machine);
  const why = quorumFacts(members).tolerance < 0
    ? "etcd has no healthy majority now, so no new member can join"
    : id !== undefined && !mayRemove(members, id)
    ? `removing its etcd member would leave fewer healthy members than a majority`
    : undefined;
  return why && `${sick}: ${why} (etcd: ${counted(members)}); NICO replaces none: bring a member back first`;
}

/**
 * A replacement that fails too is replaced again only while the plane has had at most `maxRetries`
 * remediations within the period. A member is a replacement when it joined after the earliest of them.
 */
function retryRefusal(f: PlaneFacts, target: Unhealthy, field: string): string | undefined {
  const from = f.now.getTime() - f.settings.retryPeriodMs;
  const recent = f.marks.filter((t) => t.getTime() >= from).sort((a, b) => a.getTime() - b.getTime());
  const joined = f.facts.get(target.machine)?.createdAt;
  const replacement = recent.length > 0 && joined !== undefined && joined >= recent[0]!;
  if (!replacement || recent.length <= f.settings.maxRetries) return undefined;
  const period = Math.round(f.settings.retryPeriodMs / 60_000);
  return `${target.machine} is unhealthy (${target.reason}: ${target.message}) and was itself brought in after a ` +
    `remediation: the ${WORDS[f.plane]} plane has had ${recent.length} remediations within ${period}m ` +
    `(maxRetries ${f.settings.maxRetries}), so NICO stops replacing: the flake or the Machines may be at fault. ` +
    `Check them, then remove the nico.homystack.com/remediated marks of repaired Machines (or wait until the ` +
    `oldest mark is older than ${field}.retryPeriod)`;
}
