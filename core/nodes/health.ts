/**
 * Whether a member node is unhealthy enough to remediate, and since when:
 * its Node NotReady too long (when its current configuration cannot be
 * blamed), its Node never registered after a new configuration was applied,
 * or its Machine unreachable by NIO too long. Pure; table-tested. What NICO
 * then does about it is core/rollout/remediation.ts.
 *
 * @module
 */
import { formatDuration } from "../../lib/duration.ts";
import { age } from "./joined.ts";
import type { Machine } from "../contract/nio.ts";
import type { NodeReport } from "./readiness.ts";
import type { NodeView } from "./workload.ts";

/** Why a member is unhealthy. */
export type UnhealthyReason = "NodeNotReady" | "NodeStartupTimeout" | "MachineUnreachable";

/** The health checks of a plane, in milliseconds; an absent (or zero) one is off. */
export interface HealthChecks {
  notReadyMs?: number | undefined;
  startupMs?: number | undefined;
  unreachableMs?: number | undefined;
}

/** What is known of one member node: its facts record (core/nodes/facts.ts), with what health adds to it. */
export interface MemberFacts {
  machine: string;
  /** Its report after the workload cluster was consulted (core/nodes/joined.ts). */
  report: NodeReport;
  /** The workload API answers and its Nodes are listed: a Node's absence or state means something. */
  nodesKnown: boolean;
  /**
   * When the workload API last came back from an outage. The Node checks count from then at the earliest: while
   * it could not be read nothing was seen, and Nodes take a moment to show themselves again after it returns.
   */
  apiBackAt?: Date | undefined;
  /** Its Node, when registered. */
  node?: NodeView | undefined;
  machineObj?: Machine | undefined;
  /** When its configuration was created (it joined the cluster). */
  createdAt?: Date | undefined;
  /** When NICO last changed its configuration. */
  changedAt?: Date | undefined;
  /** The configuration id its spec carries (a Node naming it runs it: the flake contract). */
  expected?: string | undefined;
}

export interface Unhealthy {
  machine: string;
  reason: UnhealthyReason;
  message: string;
  /** Since when the check counts (the deadline is this plus the check's timeout). */
  since: Date;
}

/** A member's verdict: unhealthy, or when it would be if nothing changes (to look again then). */
export interface Verdict {
  unhealthy?: Unhealthy | undefined;
  dueAt?: Date | undefined;
}

/**
 * Whether the node's current configuration cannot be what made its Node NotReady: the Node went NotReady
 * before NICO's last change of it (a change to a node already down, such as a fix), after NIO finished
 * applying that change (it came up with it, then went down), or the Node names the configuration its spec
 * carries (the node said it runs it). A Node that went NotReady while its change was applied and never came
 * back is the rollout's to judge (it halts there): a spare would get the same change.
 */
function notBlamedOnChange(f: MemberFacts, node: NodeView): boolean {
  if (f.expected !== undefined && node.configuration === f.expected) return true;
  const since = node.since;
  if (!since) return false;
  if (f.changedAt && since < f.changedAt) return true;
  return f.report.appliedAt !== undefined && since > f.report.appliedAt;
}

/**
 * Judges one member.
 *
 * @example
 * ```ts
 * import { judgeMember } from "./health.ts";
 * const now = new Date("2026-01-01T01:00:00Z");
 * const report = { machine: "w-1", plane: "dataPlane" as const, state: "Joining" as const, reason: "NodeNotReady", detail: "", upToDate: true, applied: true, appliedAt: new Date("2026-01-01T00:00:00Z") };
 * const node = { name: "w-1", ready: "False" as const, since: new Date("2026-01-01T00:50:00Z"), why: "KubeletNotReady", cordoned: false };
 * judgeMember({ machine: "w-1", report, nodesKnown: true, node, changedAt: new Date("2026-01-01T00:00:00Z") }, { notReadyMs: 300_000 }, now).unhealthy?.reason; // "NodeNotReady"
 * ```
 */
export function judgeMember(f: MemberFacts, checks: HealthChecks, now: Date): Verdict {
  const verdicts = [unreachable(f, checks, now), notReady(f, checks, now), neverRegistered(f, checks, now)];
  const unhealthy = verdicts.map((v) => v.unhealthy).filter((u) => u !== undefined)
    .sort((a, b) => a.since.getTime() - b.since.getTime())[0];
  if (unhealthy) return { unhealthy };
  const due = verdicts.map((v) => v.dueAt?.getTime()).filter((t) => t !== undefined).sort((a, b) => a - b)[0];
  return due === undefined ? {} : { dueAt: new Date(due) };
}

/** `since`, or when the workload API came back if that is later. */
function seenFrom(f: MemberFacts, since: Date): Date {
  return f.apiBackAt && f.apiBackAt > since ? f.apiBackAt : since;
}

/** `since` plus `ms`: unhealthy once passed, else due then. */
function deadline(since: Date, ms: number, now: Date, make: () => Omit<Unhealthy, "since">): Verdict {
  const due = since.getTime() + ms;
  return now.getTime() >= due ? { unhealthy: { ...make(), since } } : { dueAt: new Date(due) };
}

function unreachable(f: MemberFacts, c: HealthChecks, now: Date): Verdict {
  if (!c.unreachableMs) return {};
  const cond = f.machineObj?.status?.conditions?.find((x) => x.type === "Discoverable");
  if (cond?.status !== "False" || !cond.lastTransitionTime) return {};
  const since = new Date(cond.lastTransitionTime);
  const why = [cond.reason, cond.message].filter(Boolean).join(": ");
  return deadline(since, c.unreachableMs, now, () => ({
    machine: f.machine,
    reason: "MachineUnreachable",
    message: `NIO has not reached Machine ${f.machine} for ${age(now.getTime() - since.getTime())} ` +
      `(machineUnreachableTimeout ${formatDuration(c.unreachableMs!)}${why ? `; ${why}` : ""})`,
  }));
}

function notReady(f: MemberFacts, c: HealthChecks, now: Date): Verdict {
  const node = f.node;
  if (!c.notReadyMs || !f.nodesKnown || !node || node.ready === "True" || !node.since) return {};
  if (!notBlamedOnChange(f, node)) return {};
  const since = seenFrom(f, f.changedAt && f.changedAt > node.since ? f.changedAt : node.since);
  const why = node.why ? ` (${node.why})` : "";
  return deadline(since, c.notReadyMs, now, () => ({
    machine: f.machine,
    reason: "NodeNotReady",
    message: `Node ${f.machine} ${node.ready === "Unknown" ? "Unknown" : "NotReady"} for ` +
      `${age(now.getTime() - node.since!.getTime())}${why} (nodeNotReadyTimeout ${formatDuration(c.notReadyMs!)})`,
  }));
}

function neverRegistered(f: MemberFacts, c: HealthChecks, now: Date): Verdict {
  if (!c.startupMs || !f.nodesKnown || f.node || !f.createdAt || !f.report.applied) return {};
  const since = seenFrom(f, f.createdAt);
  return deadline(since, c.startupMs, now, () => ({
    machine: f.machine,
    reason: "NodeStartupTimeout",
    message: `NIO applied ${f.machine} but no Node of that name registered within ` +
      `${formatDuration(c.startupMs!)} of its configuration's creation (nodeStartupTimeout)`,
  }));
}
