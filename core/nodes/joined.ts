/**
 * Honest readiness: a node NIO applied is Ready only when the workload
 * cluster agrees, i.e. its Node (named like the Machine) is Ready (a Node
 * NICO cordoned for the rollout counts: it is the one being updated). Pure;
 * table-tested. See docs/readiness.md.
 *
 * @module
 */
import type { NodeReport } from "./readiness.ts";
import type { NodeView } from "./workload.ts";

/** What NICO knows about the workload cluster in this pass. */
export interface WorkloadFacts {
  /** Workload connections are turned off: applied counts as Ready (the previous meaning). */
  disabled?: boolean;
  api: {
    state: "Available" | "Unavailable" | "Unknown";
    message: string;
    since: Date;
    /**
     * The last time the API was away and came back (its first answer is no return): when it went, when it came
     * back, and the Nodes as last seen before it went (`undefined`: not listed by then).
     */
    outage?: { from: Date; to: Date; nodes?: Map<string, NodeView> | undefined } | undefined;
  };
  /** Nodes as last seen; `undefined` before the first list. */
  nodes?: Map<string, NodeView> | undefined;
}

export interface JoinInput {
  reports: NodeReport[];
  workload: WorkloadFacts;
  /** When NICO last changed the node's configuration (the node timeout counts from there). */
  changedAt: (machine: string) => Date | undefined;
  now: Date;
  timeoutMs: number;
  /** The configuration id each node's current spec carries (its `cluster.nix` `configuration`). */
  expected?: (machine: string) => string | undefined;
}

/**
 * A coarse age for messages: `<1m`, `3m`, `2h`, `4d`. Coarse on purpose: a
 * message that changed every second would rewrite the status every pass.
 *
 * @example
 * ```ts
 * import { age } from "./joined.ts";
 * age(30_000); // "<1m"
 * age(90 * 60_000); // "90m"
 * age(3 * 3_600_000); // "3h"
 * age(72 * 3_600_000); // "3d"
 * ```
 */
export function age(ms: number): string {
  const m = Math.floor(Math.max(0, ms) / 60_000);
  if (m < 1) return "<1m";
  if (m < 120) return `${m}m`;
  if (m < 48 * 60) return `${Math.floor(m / 60)}h`;
  return `${Math.floor(m / 1440)}d`;
}

/**
 * Each report as the workload cluster makes it: applied nodes become Ready, Joining or Failed (NodeNotReady).
 *
 * @example
 * ```ts
 * import { joinReports } from "./joined.ts";
 * const now = new Date("2026-01-01T00:10:00Z");
 * const [w1] = joinReports({
 *   reports: [{ machine: "w-1", plane: "dataPlane", state: "Ready", reason: "Applied", detail: "applied", upToDate: true }],
 *   workload: { api: { state: "Available", message: "ready", since: now }, nodes: new Map() },
 *   changedAt: () => new Date("2026-01-01T00:09:00Z"),
 *   now,
 *   timeoutMs: 600_000,
 * });
 * w1?.state; // "Joining"
 * w1?.detail; // "applied; waiting for Node w-1"
 * ```
 */
export function joinReports(i: JoinInput): NodeReport[] {
  // Where Nodes name the configuration they run (the flake contract), a node is Ready only once its Node names the
  // one its spec carries; where none does, NIO's run result is all there is.
  const reports = [...(i.workload.nodes?.values() ?? [])].some((n) => n.configuration !== undefined);
  return i.reports.map((r) => {
    const j = joinOne(r, i, reports);
    // A node NICO changed while the API was away (a fix forward) has not been seen working since.
    const changed = i.changedAt(r.machine);
    const { api } = i.workload;
    const redone = api.state === "Unavailable" && changed !== undefined && changed > api.since && j.state !== "Ready";
    return redone ? { ...j, changedInOutage: true } : j;
  });
}

function joinOne(r: NodeReport, i: JoinInput, reports = false): NodeReport {
  if (r.state !== "Ready") {
    // A node still applying when the API went away may be why (a switch that restarts the API server).
    const changed = i.changedAt(r.machine);
    const { api } = i.workload;
    const suspect = r.state === "Applying" && !i.workload.disabled && api.state === "Unavailable" &&
      changed !== undefined && api.since >= changed && api.since.getTime() - changed.getTime() < i.timeoutMs;
    return { ...r, applied: false, ...(suspect ? { suspect } : {}) };
  }
  const applied = { ...r, applied: true };
  if (i.workload.disabled) return applied;
  const { api, nodes } = i.workload;
  const node = nodes?.get(r.machine);
  const changed = i.changedAt(r.machine);
  const overdue = (since: Date | undefined) => since !== undefined && i.now.getTime() - since.getTime() > i.timeoutMs;
  if (api.state !== "Available" && nodes) {
    // A verdict reached while the API answered stands while it is away: a node that had already failed as last
    // seen (judged at the moment the outage began) stays Failed, so an outage never lifts a halt.
    const before = joinOne(r, {
      ...i,
      now: api.since,
      workload: { ...i.workload, api: { state: "Available", message: api.message, since: new Date(0) } },
    }, reports);
    if (before.state === "Failed") {
      return { ...before, detail: `${before.detail}; the workload API has not answered since (${api.message})` };
    }
  }
  if (api.state !== "Available" || !nodes) {
    // While the API is away, a node is judged only by its current change: one seen working before the outage
    // (applied before it began, its Node Ready when last seen) is never blamed for it. A change the outage began
    // after, and that was not seen working, is the suspect: it may still be changed toward a newer spec (fix
    // forward), and it is Failed once the outage outlasts the node timeout, which halts the rollout.
    const confirmed = r.appliedAt !== undefined && r.appliedAt < api.since && node?.ready === "True";
    const suspect = api.state === "Unavailable" && !confirmed && changed !== undefined && api.since >= changed &&
      api.since.getTime() - changed.getTime() < i.timeoutMs;
    if (suspect && overdue(changed)) {
      return {
        ...applied,
        state: "Failed",
        reason: "NodeNotReady",
        suspect,
        detail: `NodeNotReady: the workload API stopped answering after ${r.machine} changed and has not come back ` +
          `within ${seconds(i.timeoutMs)} (${api.message})`,
      };
    }
    const seen = node?.ready === "True" ? "; its Node was Ready when last seen" : "";
    const why = suspect ? `; the API went away after its change${seen ? "" : " and before it was seen working"}` : "";
    return {
      ...applied,
      state: "Joining",
      reason: "WorkloadAPIUnavailable",
      ...(suspect ? { suspect } : {}),
      detail: `applied; the workload API cannot be checked (${api.message})${seen}${why}`,
    };
  }
  // The time the workload API could not be read is not held against a node: after an outage its deadline runs
  // from when the API came back (Nodes register and report again), and a node that ran its change before then is
  // only settling until it shows itself or that deadline passes. A verdict reached before the outage stands.
  const returned = api.outage && !failedBefore(r, i, reports) ? api.outage.to : undefined;
  const back = (d: Date | undefined) => latest(d, returned);
  const settling = returned && r.appliedAt !== undefined && r.appliedAt < returned && !overdue(returned)
    ? { settling: true as const }
    : {};
  if (!node) {
    if (overdue(back(changed))) {
      return {
        ...applied,
        state: "Failed",
        reason: "NodeNotReady",
        detail: `NodeNotReady: no Node named ${r.machine} registered within ${
          seconds(i.timeoutMs)
        } of the apply (the flake must register the Node under the Machine's name)`,
      };
    }
    return {
      ...applied,
      ...settling,
      state: "Joining",
      reason: "NodeMissing",
      detail: `applied; waiting for Node ${r.machine}`,
    };
  }
  if (node.ready !== "True") {
    const since = back(latest(changed, node.since));
    const why = node.why ? ` (${node.why})` : "";
    if (overdue(since)) {
      // Name the deadline that fired: counted from the change, or from the Node's last transition.
      const deadline = seconds(i.timeoutMs);
      const after = since === changed
        ? `within ${deadline} of its last change`
        : since === returned
        ? `within ${deadline} of the workload API's return`
        : `for more than ${deadline}`;
      return {
        ...applied,
        state: "Failed",
        reason: "NodeNotReady",
        detail: `NodeNotReady: Node ${r.machine} not Ready ${after} (the node timeout)${why}`,
      };
    }
    return {
      ...applied,
      ...settling,
      state: "Joining",
      reason: "NodeNotReady",
      detail: `applied; Node ${r.machine} not Ready${why}${
        node.since ? ` for ${age(i.now.getTime() - node.since.getTime())}` : ""
      }`,
    };
  }
  const want = reports ? i.expected?.(r.machine) : undefined;
  if (want && node.configuration !== want) {
    const says = node.configuration ? `still names configuration ${node.configuration}` : "names no configuration";
    if (overdue(back(latest(changed, r.appliedAt)))) {
      return {
        ...applied,
        state: "Failed",
        reason: "ConfigurationNotReported",
        detail: `ConfigurationNotReported: Node ${r.machine} ${says} ${seconds(i.timeoutMs)} after it applied ${want}`,
      };
    }
    return {
      ...applied,
      ...settling,
      state: "Joining",
      reason: "ConfigurationNotReported",
      detail: `applied; Node ${r.machine} is Ready but ${says}; waiting for it to name ${want}`,
    };
  }
  if (node.drainStarted) {
    // Still available: it is the node the rollout is working on (drained now, uncordoned once Ready again).
    const since = age(i.now.getTime() - node.drainStarted.getTime());
    return {
      ...applied,
      reason: "Joined",
      detail: `applied; Node Ready; cordoned by NICO for the rollout for ${since}`,
    };
  }
  const runs = want ? `; runs configuration ${want}` : "";
  return { ...applied, reason: "Joined", detail: `applied; Node Ready${runs}` };
}

/** Whether the node was Failed as last seen before the outage: judged then, with the Nodes as they were. */
function failedBefore(r: NodeReport, i: JoinInput, reports: boolean): boolean {
  const outage = i.workload.api.outage;
  if (!outage?.nodes) return false;
  const api = { state: "Available" as const, message: i.workload.api.message, since: new Date(0) };
  const workload = { ...i.workload, api, nodes: outage.nodes };
  return joinOne(r, { ...i, now: outage.from, workload }, reports).state === "Failed";
}

/** A deadline as written in specs: `90s`, `10m`, `2h`. */
function seconds(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s % 3600 === 0) return `${s / 3600}h`;
  if (s % 60 === 0) return `${s / 60}m`;
  return `${s}s`;
}

function latest(a: Date | undefined, b: Date | undefined): Date | undefined {
  if (!a) return b;
  if (!b) return a;
  return a > b ? a : b;
}
