/**
 * A cluster's Kubernetes versions in one pass: from what each member
 * reports and asks for, the chain's plan (core/versions/chain.ts), the
 * version each node's `cluster.nix` is to ask for, which nodes' changes are
 * version changes, what the skew guard judges (core/rollout/version_rules.ts)
 * and what the status says (`status.version`, `status.versions`). Pure;
 * the reconciler shell gathers the facts (controllers/cluster/versions.ts).
 *
 * @module
 */
import type { Plane } from "../contract/labels.ts";
import type { RolloutVersions } from "./policy.ts";
import type { KubernetesClusterStatus } from "../../crds/kubernetescluster.ts";
import { type ChainNode, planVersions, type VersionPlan } from "./chain.ts";
import type { NodeVersions } from "./policy.ts";
import { formatVersion, type KubeVersion, lowest, parseReportedVersion } from "./version.ts";

/** What the pass knows of one member's versions. */
export interface MemberVersions {
  machine: string;
  plane: Plane;
  /** Its configuration exists (a change of what it asks for is a version change of a running node). */
  exists: boolean;
  /** What its configuration asks for now (`cluster.nix` `kubernetesVersion`); absent: none, or no configuration. */
  asked?: KubeVersion | undefined;
  /** What its kubelet reports, as reported (`v1.31.4+k3s1`). */
  kubelet?: string | undefined;
  /** A control-plane node: what its own API server answers on `/version` since it last applied, as answered. */
  apiServer?: string | undefined;
  /** NICO does not look inside the workload cluster and NIO applied it: it counts as reporting what it asks for. */
  appliedUnseen?: boolean | undefined;
}

/** What {@link clusterVersions} answers. */
export interface ClusterVersions {
  plan: VersionPlan;
  /** The version each node's `cluster.nix` is to ask for (`1.31`), by machine; empty without `spec.version`. */
  render: Map<string, string>;
  /** Nodes whose configuration is to ask for another version than it does now. */
  changing: Set<string>;
  /** What the skew guard judges; absent when no node reports a version. */
  rollout?: RolloutVersions | undefined;
  /** `status.version` and `status.versions`. */
  status: Pick<KubernetesClusterStatus, "version" | "versions">;
}

/** What a member reports, for the policy: its kubelet and (a control-plane node) its API server. */
function reportedOf(m: MemberVersions): NodeVersions {
  const unseen = m.appliedUnseen ? m.asked : undefined;
  return {
    machine: m.machine,
    plane: m.plane,
    kubelet: parseReportedVersion(m.kubelet) ?? unseen,
    ...(m.plane === "controlPlane" ? { apiServer: parseReportedVersion(m.apiServer) ?? unseen } : {}),
  };
}

/**
 * The versions of a pass, for `target` (`spec.version`; absent: no node is asked for one).
 *
 * @example
 * ```ts
 * import { clusterVersions } from "./cluster.ts";
 * const v = clusterVersions({ minor: 32 }, [
 *   { machine: "cp-1", plane: "controlPlane", exists: true, asked: { minor: 31 }, kubelet: "v1.31.2", apiServer: "v1.31.2" },
 *   { machine: "w-1", plane: "dataPlane", exists: true, asked: { minor: 31 }, kubelet: "v1.31.2" },
 * ]);
 * [...v.render]; // [["cp-1", "1.32"], ["w-1", "1.31"]]
 * [...v.changing]; // ["cp-1"]
 * v.status.version; // "1.31.2"
 * v.status.versions?.chain; // ["1.32"]
 * ```
 */
export function clusterVersions(target: KubeVersion | undefined, members: readonly MemberVersions[]): ClusterVersions {
  const reported = members.map(reportedOf);
  const chainNodes: ChainNode[] = members.map((m, k) => {
    const r = reported[k]!;
    return {
      machine: m.machine,
      plane: m.plane,
      rendered: m.asked,
      reported: m.plane === "controlPlane" ? r.apiServer ?? r.kubelet : r.kubelet,
    };
  });
  const plan = planVersions(target, chainNodes);
  const render = new Map<string, string>();
  const asks = new Map<string, KubeVersion>();
  const changing = new Set<string>();
  for (const m of target ? members : []) {
    // A node the chain leaves out keeps what its configuration asks for.
    const want = plan.desired.get(m.machine) ?? m.asked;
    if (!want) continue;
    asks.set(m.machine, want);
    render.set(m.machine, formatVersion(want));
    if (m.exists && (!m.asked || formatVersion(m.asked) !== formatVersion(want))) changing.add(m.machine);
  }
  const known = reported.filter((r) => r.kubelet || r.apiServer);
  const floor = lowest(known.flatMap((r) => [r.kubelet, r.apiServer].filter((x) => x !== undefined)));
  const nodes = members.map((m) => ({
    name: m.machine,
    ...(m.kubelet ? { kubelet: m.kubelet } : {}),
    ...(m.plane === "controlPlane" && m.apiServer ? { apiServer: m.apiServer } : {}),
    ...(render.has(m.machine) ? { asked: render.get(m.machine)! } : {}),
  })).filter((n) => Object.keys(n).length > 1).sort((a, b) => (a.name < b.name ? -1 : 1));
  const chain = plan.chain.length ? plan.chain.map(formatVersion) : undefined;
  const versions = target || nodes.length
    ? {
      ...(target ? { target: formatVersion(target) } : {}),
      ...(chain && plan.step ? { step: formatVersion(plan.step) } : {}),
      ...(chain ? { chain } : {}),
      ...(nodes.length ? { nodes } : {}),
    }
    : undefined;
  return {
    plan,
    render,
    changing,
    rollout: known.length
      ? { nodes: reported, asks, target: target !== undefined, ...(chain ? { waiting: plan.waiting } : {}) }
      : undefined,
    status: { ...(floor ? { version: formatVersion(floor) } : {}), ...(versions ? { versions } : {}) },
  };
}
