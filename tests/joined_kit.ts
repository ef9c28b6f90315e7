/**
 * Fixtures of the readiness tests (tests/unit/joined_test.ts, tests/unit/joined_dark_test.ts): a fixed now,
 * applied reports, Node views, workload facts, one node judged, and planner nodes. Pure.
 */
import type { NodeFacts } from "../core/nodes/facts.ts";
import { joinReports, type WorkloadFacts } from "../core/nodes/joined.ts";
import type { NodeReport } from "../core/nodes/readiness.ts";
import type { PlanNode } from "../core/rollout/plan.ts";
import type { NodeView } from "../core/nodes/workload.ts";

export const NOW = new Date("2026-01-01T12:00:00Z");
export const ago = (s: number) => new Date(NOW.getTime() - s * 1000);
export const TIMEOUT = 10 * 60_000;

/** A report of a node NIO applied. */
export const applied = (machine: string, plane: NodeReport["plane"] = "dataPlane", upToDate = true): NodeReport => ({
  machine,
  plane,
  state: "Ready",
  reason: "Applied",
  detail: "applied",
  upToDate,
});

/** A Node, Ready unless `o` says otherwise. */
export const node = (name: string, o: Partial<NodeView> = {}): NodeView => ({
  name,
  ready: "True",
  cordoned: false,
  ...o,
});

/** The workload cluster with these Nodes (`undefined`: not listed yet), its API in `state` for 90 s. */
export const facts = (
  nodes: NodeView[] | undefined,
  state: WorkloadFacts["api"]["state"] = "Available",
): WorkloadFacts => ({
  api: { state, message: state === "Available" ? "/readyz answers ok" : "/readyz: connection refused", since: ago(90) },
  nodes: nodes && new Map(nodes.map((n) => [n.name, n])),
});

/**
 * The facts record of each report as the shell gathers it: its Node from `w`, its configuration last changed
 * `changedSecondsAgo`, naming `expected` when given.
 */
export function factsOf(reports: NodeReport[], w: WorkloadFacts, changedSecondsAgo = 60, expected?: string) {
  return reports.map((r): NodeFacts => ({
    machine: r.machine,
    run: r,
    changedAt: ago(changedSecondsAgo),
    node: w.nodes?.get(r.machine),
    ...(expected !== undefined ? { expected } : {}),
  }));
}

/** Reports judged against the workload cluster, each node last changed `changedSecondsAgo`. */
export function joinAll(reports: NodeReport[], w: WorkloadFacts, changedSecondsAgo = 60, expected?: string) {
  return joinReports({
    nodes: factsOf(reports, w, changedSecondsAgo, expected),
    workload: w,
    now: NOW,
    timeoutMs: TIMEOUT,
  });
}

/** One report judged against the workload cluster, its node last changed `changedSecondsAgo`. */
export function join(r: NodeReport, w: WorkloadFacts, changedSecondsAgo = 60): NodeReport {
  return joinAll([r], w, changedSecondsAgo)[0]!;
}

/** A planner node that exists, up to date and not available (its plane from its name) unless `o` says otherwise. */
export const planNode = (machine: string, o: Partial<PlanNode> = {}): PlanNode => ({
  machine,
  plane: machine.startsWith("cp") ? "controlPlane" : "dataPlane",
  exists: true,
  upToDate: true,
  available: false,
  failed: false,
  ...o,
});
