/**
 * Evidence from after the switch, where a node does not name the configuration it runs: its kubelet's status
 * posted after NIO's apply ended. Until its kubelet posts (within a bounded window), a Node that is Ready shows what
 * it was before the switch (the old Ready, the old version), so the node's step is not over. Called by
 * core/nodes/joined.ts for a Ready Node. Pure.
 *
 * @module
 */
import { formatDuration } from "../../lib/duration.ts";
import type { NodeFacts } from "./facts.ts";
import type { NodeReport } from "./readiness.ts";
import type { NodeView } from "./workload.ts";

/** What the judging reads: now, and the node timeout (the window never outlasts it). */
export interface PostJudging {
  now: Date;
  timeoutMs: number;
}

/**
 * How long NICO waits, after a node's apply, for its kubelet to post a status (where the node does not name the
 * configuration it runs): a kubelet the switch restarted posts within seconds. Past it (a switch that left the
 * kubelet running posts nothing new for minutes), the Node counts as it stands.
 */
export const KUBELET_POST_WINDOW_MS = 60_000;

/**
 * The node's kubelet has posted nothing since its apply ended, within {@link KUBELET_POST_WINDOW_MS} of it: its Ready
 * condition and its version are still what they were before the switch, which proves nothing about the switch.
 * Kubernetes times have second precision, so a post stamped with the second the apply ended in (or NICO's change
 * was made in) may be the old kubelet's, just before: only a post from a later second counts. A quick switch
 * right after the old kubelet's post (a change made the moment a node turned Ready) is where that matters; a
 * kubelet that posts only in that second is waited for up to the window.
 */
export function silentSinceSwitch(f: NodeFacts, node: NodeView, j: PostJudging): boolean {
  // Where NIO does not say when the apply ended, NICO's change is the earliest it can have ended.
  const at = f.run.appliedAt ?? f.changedAt;
  if (!at || j.now.getTime() - at.getTime() >= Math.min(KUBELET_POST_WINDOW_MS, j.timeoutMs)) return false;
  const second = (d: Date | undefined) => d ? Math.floor(d.getTime() / 1000) * 1000 : -Infinity;
  return !node.postedAt || node.postedAt.getTime() <= Math.max(second(at), second(f.changedAt));
}

/**
 * The report of an applied node whose Node is Ready but whose kubelet has posted nothing since its switch.
 *
 * @example
 * ```ts
 * import { kubeletSilent } from "./posted.ts";
 * const run = { machine: "w-1", plane: "dataPlane" as const, state: "Ready" as const, reason: "Applied", detail: "applied", upToDate: true, appliedAt: new Date("2026-01-01T00:00:10Z") };
 * const node = { name: "w-1", ready: "True" as const, cordoned: false, postedAt: new Date("2026-01-01T00:00:00Z") };
 * kubeletSilent({ machine: "w-1", run }, node, run, { now: new Date("2026-01-01T00:00:12Z"), timeoutMs: 600_000 }).detail;
 * // "applied; w-1's kubelet has posted nothing since its switch (last at 2026-01-01T00:00:00Z): its Node is Ready as it was before; waiting up to 1m after the apply"
 * ```
 */
export function kubeletSilent(f: NodeFacts, node: NodeView, applied: NodeReport, j: PostJudging): NodeReport {
  const last = node.postedAt ? ` (last at ${node.postedAt.toISOString().replace(/\.\d+Z$/, "Z")})` : "";
  const window = formatDuration(Math.min(KUBELET_POST_WINDOW_MS, j.timeoutMs));
  return {
    ...applied,
    state: "Joining",
    reason: "KubeletNotPosted",
    detail: `applied; ${f.machine}'s kubelet has posted nothing since its switch${last}: its Node is Ready as it ` +
      `was before; waiting up to ${window} after the apply`,
  };
}
