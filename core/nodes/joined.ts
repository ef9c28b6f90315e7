/**
 * Honest readiness: a node NIO applied is Ready only when the workload cluster agrees, i.e. its Node (named like the
 * Machine) is Ready on evidence from after its switch (a Node NICO cordoned for the rollout counts: it is the one
 * being updated). It reads each node's facts record (core/nodes/facts.ts) and what is known of the workload
 * cluster, nothing else. Pure; table-tested. See docs/readiness.md.
 *
 * @module
 */
import type { NodeFacts } from "./facts.ts";
import type { NodeReport } from "./readiness.ts";
import type { NodeView } from "./workload.ts";
import { versionNotReported } from "./versioned.ts";
import { kubeletSilent, silentSinceSwitch } from "./posted.ts";

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
  /** One facts record per member node (core/nodes/facts.ts): its run report, its configuration's times, its Node. */
  nodes: readonly NodeFacts[];
  workload: WorkloadFacts;
  now: Date;
  timeoutMs: number;
}

/**
 * A coarse age for messages: `<1m`, `3m`, `2h`, `4d`. Coarse on purpose: a message that changed every second
 * would rewrite the status every pass.
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
 * Each node's report as the workload cluster makes it: applied nodes become Ready, Joining or Failed (NodeNotReady).
 *
 * @example
 * ```ts
 * import { joinReports } from "./joined.ts";
 * const now = new Date("2026-01-01T00:10:00Z");
 * const [w1] = joinReports({
 *   nodes: [{
 *     machine: "w-1",
 *     run: { machine: "w-1", plane: "dataPlane", state: "Ready", reason: "Applied", detail: "applied", upToDate: true },
 *     changedAt: new Date("2026-01-01T00:09:00Z"),
 *   }],
 *   workload: { api: { state: "Available", message: "ready", since: now }, nodes: new Map() },
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
  const named = [...(i.workload.nodes?.values() ?? [])].some((n) => n.configuration !== undefined);
  return i.nodes.map((f) => {
    const j = joinOne(f, i, named);
    // A node NICO changed while the API was away (a fix forward) has not been seen working since.
    const { api } = i.workload;
    const changed = f.changedAt;
    const redone = api.state === "Unavailable" && changed !== undefined && changed > api.since && j.state !== "Ready";
    return redone ? { ...j, changedInOutage: true } : j;
  });
}

/** What judging an applied node by its Node reads, besides its facts. */
interface Judging {
  now: Date;
  timeoutMs: number;
  /** Nodes name the configuration they run: a Ready Node must name the one its spec carries. */
  named: boolean;
  /** When the workload API came back from its last outage (deadlines run from then), unless the node failed before. */
  returned?: Date | undefined;
}

function joinOne(f: NodeFacts, i: JoinInput, named: boolean): NodeReport {
  const r = f.run;
  if (r.state !== "Ready") return notApplied(f, i);
  const applied = { ...r, applied: true };
  if (i.workload.disabled) return applied;
  const before = verdictBeforeOutage(f, i, named);
  const { api, nodes } = i.workload;
  if (api.state !== "Available" || !nodes) return whileAway(f, i, before);
  // The time the workload API could not be read is not held against a node: after an outage its deadline runs
  // from when the API came back (Nodes register and report again). A verdict reached before the outage stands.
  const returned = api.outage && before?.state !== "Failed" ? api.outage.to : undefined;
  return byNode(f, f.node, { now: i.now, timeoutMs: i.timeoutMs, named, returned });
}

/**
 * The verdict as before the outage: the node judged at the moment the workload API went away, with the Nodes as
 * last seen then (the outage under way, or the last one once the API is back). None without such a moment.
 */
function verdictBeforeOutage(f: NodeFacts, i: JoinInput, named: boolean): NodeReport | undefined {
  const { api, nodes } = i.workload;
  if (!nodes) return undefined;
  const then = api.state !== "Available"
    ? { at: api.since, nodes }
    : api.outage?.nodes
    ? { at: api.outage.from, nodes: api.outage.nodes }
    : undefined;
  if (!then) return undefined;
  return byNode(f, then.nodes.get(f.machine), { now: then.at, timeoutMs: i.timeoutMs, named });
}

/** The workload API went away after `changed` and within the node timeout of it: the change may be why. */
function awayAfter(changed: Date | undefined, api: WorkloadFacts["api"], timeoutMs: number): boolean {
  return api.state === "Unavailable" && changed !== undefined && api.since >= changed &&
    api.since.getTime() - changed.getTime() < timeoutMs;
}

/** A node NIO has not applied: as NIO says; one still applying when the API went away may be why (a suspect). */
function notApplied(f: NodeFacts, i: JoinInput): NodeReport {
  // A switch that restarts the API server, for example.
  const suspect = f.run.state === "Applying" && !i.workload.disabled &&
    awayAfter(f.changedAt, i.workload.api, i.timeoutMs);
  return { ...f.run, applied: false, ...(suspect ? { suspect } : {}) };
}

/**
 * An applied node while the workload API cannot be read (or its Nodes are not listed yet). A verdict reached while
 * the API answered stands: a node that had already failed as last seen stays Failed, so an outage never lifts a
 * halt. Otherwise a node is judged only by its current change: one seen working before the outage (applied before
 * it began, and joined as its Node stood then, by evidence from after the switch) is never blamed for it. A change
 * the outage began after, and that was not seen working, is the suspect: it may still be changed toward a newer
 * spec (fix forward), and it is Failed once the outage outlasts the node timeout, which halts the rollout.
 */
function whileAway(f: NodeFacts, i: JoinInput, before: NodeReport | undefined): NodeReport {
  const { api } = i.workload;
  if (before?.state === "Failed") {
    return { ...before, detail: `${before.detail}; the workload API has not answered since (${api.message})` };
  }
  const r = f.run, applied = { ...r, applied: true };
  // Seen working: joined as the Nodes stood when the API went, by evidence from after the switch (a Ready left over
  // from before proves nothing: the API may stop a moment after NIO's apply, before the kubelet posted again).
  const confirmed = r.appliedAt !== undefined && r.appliedAt < api.since && before?.state === "Ready";
  const suspect = !confirmed && awayAfter(f.changedAt, api, i.timeoutMs);
  if (suspect && overdue(f.changedAt, i)) {
    return {
      ...applied,
      state: "Failed",
      reason: "NodeNotReady",
      suspect,
      detail: `NodeNotReady: the workload API stopped answering after ${r.machine} changed and has not come back ` +
        `within ${seconds(i.timeoutMs)} (${api.message})`,
    };
  }
  const seen = f.node?.ready === "True" ? "; its Node was Ready when last seen" : "";
  const why = suspect ? `; the API went away after its change${seen ? "" : " and before it was seen working"}` : "";
  return {
    ...applied,
    state: "Joining",
    reason: "WorkloadAPIUnavailable",
    ...(suspect ? { suspect } : {}),
    detail: `applied; the workload API cannot be checked (${api.message})${seen}${why}`,
  };
}

/** Past the node timeout of `since`, as of `j.now`. */
function overdue(since: Date | undefined, j: { now: Date; timeoutMs: number }): boolean {
  return since !== undefined && j.now.getTime() - since.getTime() > j.timeoutMs;
}

/**
 * An applied node judged by `node`, its Node: missing, not Ready, Ready but naming another configuration or
 * reporting another Kubernetes version than its configuration asks for (core/nodes/versioned.ts), or Joined. A
 * node that ran its change before the API came back is only settling until it shows itself or its deadline passes.
 */
function byNode(f: NodeFacts, node: NodeView | undefined, j: Judging): NodeReport {
  const r = f.run;
  const applied = { ...r, applied: true };
  const want = j.named ? f.expected : undefined;
  const out = !node
    ? nodeMissing(f, applied, j)
    : node.ready !== "True"
    ? nodeNotReady(f, node, applied, j)
    : want && node.configuration !== want
    ? configurationNotReported(f, node, want, applied, j)
    : !want && silentSinceSwitch(f, node, j)
    ? kubeletSilent(f, node, applied, j)
    : versionNotReported(f, node, applied, reportDeadline(f, j)) ??
      (etcdWait(f) ? etcdMemberNotReady(f, etcdWait(f)!, applied, j) : joined(node, want, applied, j));
  const settling = j.returned && r.appliedAt !== undefined && r.appliedAt < j.returned && !overdue(j.returned, j);
  return settling && out.state === "Joining" ? { ...out, settling: true } : out;
}

function joined(node: NodeView, want: string | undefined, applied: NodeReport, j: Judging): NodeReport {
  if (node.drainStarted) {
    // Still available: it is the node the rollout is working on (drained now, uncordoned once Ready again).
    const since = age(j.now.getTime() - node.drainStarted.getTime());
    return {
      ...applied,
      reason: "Joined",
      detail: `applied; Node Ready; cordoned by NICO for the rollout for ${since}`,
    };
  }
  const runs = want ? `; runs configuration ${want}` : "";
  return { ...applied, reason: "Joined", detail: `applied; Node Ready${runs}` };
}

/**
 * Why etcd does not count a control-plane node whose Node is Ready as joined yet (undefined: it does, or NICO does not
 * see etcd): no look since its change, no member on its address, a learner, or a member that is not healthy. The
 * next control-plane step waits for it, so a switch never starts while the one before is still catching up.
 */
function etcdWait(f: NodeFacts): string | undefined {
  const e = f.etcd;
  if (!e) return undefined;
  const since = latest(f.changedAt, f.run.appliedAt);
  if (since && e.seenAt <= since) return "waiting for a look at etcd taken after its change";
  if (!e.member) return "no etcd member is on its address";
  if (e.member.isLearner) return "its etcd member is still a learner";
  if (!e.member.healthy) return "its etcd member does not answer as a healthy member";
  return undefined;
}

function etcdMemberNotReady(f: NodeFacts, why: string, applied: NodeReport, j: Judging): NodeReport {
  if (overdue(back(latest(f.changedAt, f.run.appliedAt), j), j)) {
    return {
      ...applied,
      state: "Failed",
      reason: "EtcdMemberNotReady",
      detail: `EtcdMemberNotReady: Node ${f.machine} is Ready but ${why} ${
        seconds(j.timeoutMs)
      } after it applied (the node timeout)`,
    };
  }
  return { ...applied, state: "Joining", reason: "EtcdMemberNotReady", detail: `applied; Node Ready; ${why}` };
}

/** `d`, or when the workload API came back if that is later. */
function back(d: Date | undefined, j: Judging): Date | undefined {
  return latest(d, j.returned);
}

function nodeMissing(f: NodeFacts, applied: NodeReport, j: Judging): NodeReport {
  if (overdue(back(f.changedAt, j), j)) {
    return {
      ...applied,
      state: "Failed",
      reason: "NodeNotReady",
      detail: `NodeNotReady: no Node named ${f.machine} registered within ${
        seconds(j.timeoutMs)
      } of the apply (the flake must register the Node under the Machine's name)`,
    };
  }
  return { ...applied, state: "Joining", reason: "NodeMissing", detail: `applied; waiting for Node ${f.machine}` };
}

function nodeNotReady(f: NodeFacts, node: NodeView, applied: NodeReport, j: Judging): NodeReport {
  const changed = f.changedAt;
  const since = back(latest(changed, node.since), j);
  const why = node.why ? ` (${node.why})` : "";
  if (overdue(since, j)) {
    // Name the deadline that fired: counted from the change, or from the Node's last transition.
    const deadline = seconds(j.timeoutMs);
    const after = since === changed
      ? `within ${deadline} of its last change`
      : since === j.returned
      ? `within ${deadline} of the workload API's return`
      : `for more than ${deadline}`;
    return {
      ...applied,
      state: "Failed",
      reason: "NodeNotReady",
      detail: `NodeNotReady: Node ${f.machine} not Ready ${after} (the node timeout)${why}`,
    };
  }
  const forHow = node.since ? ` for ${age(j.now.getTime() - node.since.getTime())}` : "";
  return {
    ...applied,
    state: "Joining",
    reason: "NodeNotReady",
    detail: `applied; Node ${f.machine} not Ready${why}${forHow}`,
  };
}

/** The deadline of an applied node to report what it runs: the node timeout after its change or apply. */
function reportDeadline(f: NodeFacts, j: Judging): { late: boolean; timeout: string } {
  return { late: overdue(back(latest(f.changedAt, f.run.appliedAt), j), j), timeout: seconds(j.timeoutMs) };
}

function configurationNotReported(
  f: NodeFacts,
  node: NodeView,
  want: string,
  applied: NodeReport,
  j: Judging,
): NodeReport {
  const says = node.configuration ? `still names configuration ${node.configuration}` : "names no configuration";
  if (reportDeadline(f, j).late) {
    return {
      ...applied,
      state: "Failed",
      reason: "ConfigurationNotReported",
      detail: `ConfigurationNotReported: Node ${f.machine} ${says} ${seconds(j.timeoutMs)} after it applied ${want}`,
    };
  }
  return {
    ...applied,
    state: "Joining",
    reason: "ConfigurationNotReported",
    detail: `applied; Node ${f.machine} is Ready but ${says}; waiting for it to name ${want}`,
  };
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
