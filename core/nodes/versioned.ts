/**
 * Readiness by version: a node whose configuration asks for a Kubernetes
 * version (`cluster.nix` `kubernetesVersion`) is Joined only once its Node
 * reports it (`status.nodeInfo.kubeletVersion`) and, on a control-plane node
 * whose API server answers `/version`, that answer too. Until then it is
 * Joining; past the node timeout it is Failed (`VersionMismatch`), naming
 * what it reports and what was asked. A node asked for no version is judged
 * as before. Called by core/nodes/joined.ts for a Node that is Ready. Pure.
 *
 * @module
 */
import type { NodeFacts } from "./facts.ts";
import type { NodeReport } from "./readiness.ts";
import type { NodeView } from "./workload.ts";
import { formatVersion, parseReportedVersion, satisfies } from "../versions/version.ts";

/** Whether the node's time to report is up, and the node timeout as written in specs (`10m`). */
export interface VersionDeadline {
  late: boolean;
  timeout: string;
}

/**
 * The report of a Ready node that does not report the version it was asked for; undefined when it does, or when
 * it was asked for none.
 *
 * @example
 * ```ts
 * import { versionNotReported } from "./versioned.ts";
 * const run = { machine: "w-1", plane: "dataPlane" as const, state: "Ready" as const, reason: "Applied", detail: "applied", upToDate: true };
 * const node = { name: "w-1", ready: "True" as const, cordoned: false, kubeletVersion: "v1.30.4+k3s1" };
 * const facts = { machine: "w-1", run, asked: { minor: 31 } };
 * versionNotReported(facts, node, run, { late: false, timeout: "10m" })?.detail;
 * // "applied; Node w-1 is Ready but its kubelet reports v1.30.4+k3s1; waiting for 1.31"
 * versionNotReported(facts, node, run, { late: true, timeout: "10m" })?.reason; // "VersionMismatch"
 * versionNotReported({ ...facts, asked: { minor: 30 } }, node, run, { late: true, timeout: "10m" }); // undefined
 * ```
 */
export function versionNotReported(
  f: NodeFacts,
  node: NodeView,
  applied: NodeReport,
  deadline: VersionDeadline,
): NodeReport | undefined {
  const asked = f.asked;
  if (!asked) return undefined;
  const kubelet = parseReportedVersion(node.kubeletVersion);
  const api = f.run.plane === "controlPlane" ? parseReportedVersion(f.apiServer) : undefined;
  const kubeletRuns = kubelet !== undefined && satisfies(kubelet, asked);
  const apiRuns = api === undefined || satisfies(api, asked);
  if (kubeletRuns && apiRuns) return undefined;
  const says = [
    kubeletRuns ? "" : `its kubelet reports ${node.kubeletVersion ?? "no version"}`,
    apiRuns ? "" : `its API server answers ${f.apiServer} on /version`,
  ].filter(Boolean).join(" and ");
  const want = formatVersion(asked);
  if (deadline.late) {
    return {
      ...applied,
      state: "Failed",
      reason: "VersionMismatch",
      detail: `VersionMismatch: Node ${f.machine} is Ready but ${says}, not ${want} as its cluster.nix asks ` +
        `(kubernetesVersion), ${deadline.timeout} after it applied; the flake must run the version cluster.nix ` +
        `asks for`,
    };
  }
  return {
    ...applied,
    state: "Joining",
    reason: "VersionNotReported",
    detail: `applied; Node ${f.machine} is Ready but ${says}; waiting for ${want}`,
  };
}
