/**
 * Kubernetes' version skew policy, as far as NICO can observe it without
 * touching a host (kubelets from their Nodes, API servers from their own
 * `/version`). Source: kubernetes.io/releases/version-skew-policy/, the
 * "Supported version skew" and "Supported component upgrade order" sections:
 *
 * - kube-apiserver: "In highly-available (HA) clusters, the newest and oldest
 *   kube-apiserver instances must be within one minor version."
 * - kubelet: "kubelet must not be newer than kube-apiserver, and may be up to
 *   three minor versions older (kubelet < 1.25 may only be up to two minor
 *   versions older)."
 * - upgrades: "kube-apiserver ... must not skip minor versions when
 *   upgrading, even in single-instance clusters"; the control plane is
 *   upgraded before the kubelets.
 *
 * One reading NICO makes explicit: a control-plane node's own kubelet talks to
 * the API server on the same node (k3s runs both in one process; kubeadm's
 * upgrade procedure upgrades each control-plane node's kubelet right after
 * its control plane components), so it is judged against that API server and
 * the window below the newest one, not against the other control-plane
 * nodes' API servers while they are upgraded one at a time.
 *
 * The controller-manager and scheduler windows are not judged: NICO cannot
 * see their versions without reading the workload cluster's pods.
 *
 * Pure; table-tested.
 *
 * @module
 */
import type { Plane } from "../contract/labels.ts";
import { formatVersion, highest, type KubeVersion, lowest } from "./version.ts";

/** How many minors a kubelet may be older than kube-apiserver: three, two for kubelets before 1.25. */
export function kubeletWindow(kubelet: KubeVersion): number {
  return kubelet.minor < 25 ? 2 : 3;
}

/** How far apart the API servers of an HA control plane may be, in minors. */
export const API_SERVER_SPREAD = 1;

/** The versions a node reports: its kubelet (every node) and its API server (control-plane nodes). */
export interface NodeVersions {
  machine: string;
  plane: Plane;
  kubelet?: KubeVersion | undefined;
  apiServer?: KubeVersion | undefined;
}

/** Which rule a pair of versions breaks. */
export type SkewRule = "ApiServersApart" | "KubeletNewerThanApiServer" | "KubeletTooOld" | "ApiServerSkipsMinor";

/** One break of the policy: the node whose version breaks it, what it is judged against, and how to fix it. */
export interface SkewViolation {
  rule: SkewRule;
  /** The node whose version breaks the rule (the newer API server, the kubelet). */
  machine: string;
  version: KubeVersion;
  /** The node it is judged against (for ApiServerSkipsMinor: itself, before the change). */
  against: string;
  againstVersion: KubeVersion;
  /** For people: both versions, the rule, and the fix. */
  message: string;
}

const v = formatVersion;

/** The API server version of a control-plane node: its own `/version`, else its kubelet's. */
export function apiServerOf(n: NodeVersions): KubeVersion | undefined {
  return n.plane === "controlPlane" ? n.apiServer ?? n.kubelet : undefined;
}

/**
 * Every break of the policy among `nodes`, sorted by rule then node. Minor versions are compared (the policy
 * speaks of minors); a node that reports nothing is not judged.
 *
 * @example
 * ```ts
 * import { skewViolations } from "./policy.ts";
 * const [broken] = skewViolations([
 *   { machine: "cp-1", plane: "controlPlane", kubelet: { minor: 30, patch: 4 }, apiServer: { minor: 30, patch: 4 } },
 *   { machine: "w-1", plane: "dataPlane", kubelet: { minor: 31, patch: 0 } },
 * ]);
 * broken!.rule; // "KubeletNewerThanApiServer"
 * broken!.message; // "w-1's kubelet 1.31.0 is newer than cp-1's API server 1.30.4: a kubelet must not be newer than kube-apiserver; roll the control plane first (spec.rollout.order: ControlPlaneFirst) or set spec.version"
 * ```
 */
export function skewViolations(nodes: readonly NodeVersions[]): SkewViolation[] {
  const servers = nodes.flatMap((n) => {
    const api = apiServerOf(n);
    return api ? [{ machine: n.machine, api }] : [];
  });
  const out: SkewViolation[] = [];
  const oldest = lowest(servers.map((s) => s.api));
  const newest = highest(servers.map((s) => s.api));
  const oldestAt = servers.find((s) => s.api === oldest)?.machine ?? "";
  const newestAt = servers.find((s) => s.api === newest)?.machine ?? "";
  for (const s of servers) {
    if (oldest && s.api.minor - oldest.minor > API_SERVER_SPREAD) {
      out.push({
        rule: "ApiServersApart",
        machine: s.machine,
        version: s.api,
        against: oldestAt,
        againstVersion: oldest,
        message: `${s.machine}'s API server ${v(s.api)} and ${oldestAt}'s ${v(oldest)} are more than one minor ` +
          `apart: the API servers of a control plane must stay within one minor; set spec.version to go one minor ` +
          `at a time (NICO chains the minors)`,
      });
    }
  }
  for (const n of nodes) {
    if (!n.kubelet) continue;
    const own = n.plane === "controlPlane" ? apiServerOf(n) : undefined;
    // Not newer than the API server it talks to: its own on a control-plane node, the oldest one otherwise.
    const ceiling = n.plane === "controlPlane"
      ? own && { at: n.machine, api: own }
      : oldest && { at: oldestAt, api: oldest };
    if (ceiling && n.kubelet.minor > ceiling.api.minor) {
      out.push({
        rule: "KubeletNewerThanApiServer",
        machine: n.machine,
        version: n.kubelet,
        against: ceiling.at,
        againstVersion: ceiling.api,
        message: `${n.machine}'s kubelet ${v(n.kubelet)} is newer than ${ceiling.at}'s API server ` +
          `${v(ceiling.api)}: a kubelet must not be newer than kube-apiserver; roll the control plane first ` +
          `(spec.rollout.order: ControlPlaneFirst) or set spec.version`,
      });
    }
    const window = kubeletWindow(n.kubelet);
    if (newest && newest.minor - n.kubelet.minor > window) {
      out.push({
        rule: "KubeletTooOld",
        machine: n.machine,
        version: n.kubelet,
        against: newestAt,
        againstVersion: newest,
        message: `${n.machine}'s kubelet ${v(n.kubelet)} is more than ${window} minors older than ${newestAt}'s ` +
          `API server ${v(newest)}: upgrade the workers before the control plane moves further (set spec.version: ` +
          `NICO steps the workers when the window requires it)`,
      });
    }
  }
  const order: SkewRule[] = ["ApiServersApart", "ApiServerSkipsMinor", "KubeletNewerThanApiServer", "KubeletTooOld"];
  return out.sort((a, b) => order.indexOf(a.rule) - order.indexOf(b.rule) || (a.machine < b.machine ? -1 : 1));
}

/** The identity of a violation, to tell new ones from old (whom it is judged against may change with the step). */
const keyOf = (x: SkewViolation) => `${x.rule}/${x.machine}`;

/**
 * The breaks of the policy that changing `machine` to run `to` would add (those already there are not held
 * against it: a step may fix forward): the same judgement as {@link skewViolations} on the versions as they
 * would be, plus an API server skipping a minor.
 *
 * @example
 * ```ts
 * import { stepViolations } from "./policy.ts";
 * const nodes = [
 *   { machine: "cp-1", plane: "controlPlane" as const, kubelet: { minor: 30, patch: 4 }, apiServer: { minor: 30, patch: 4 } },
 *   { machine: "w-1", plane: "dataPlane" as const, kubelet: { minor: 30, patch: 4 } },
 * ];
 * stepViolations(nodes, "cp-1", { minor: 31 }).length; // 0
 * stepViolations(nodes, "cp-1", { minor: 32 })[0]!.rule; // "ApiServerSkipsMinor"
 * stepViolations(nodes, "w-1", { minor: 31 })[0]!.rule; // "KubeletNewerThanApiServer"
 * ```
 */
export function stepViolations(nodes: readonly NodeVersions[], machine: string, to: KubeVersion): SkewViolation[] {
  const before = new Set(skewViolations(nodes).map(keyOf));
  const node = nodes.find((n) => n.machine === machine);
  if (!node) return [];
  const moved: NodeVersions = { ...node, kubelet: to, ...(node.plane === "controlPlane" ? { apiServer: to } : {}) };
  const after = skewViolations(nodes.map((n) => (n.machine === machine ? moved : n)));
  const added = after.filter((x) => !before.has(keyOf(x)));
  const was = apiServerOf(node);
  if (node.plane === "controlPlane" && was && to.minor - was.minor > 1) {
    added.unshift({
      rule: "ApiServerSkipsMinor",
      machine,
      version: to,
      against: machine,
      againstVersion: was,
      message: `${machine}'s API server would go from ${v(was)} to ${v(to)}: kube-apiserver must not skip minor ` +
        `versions; NICO goes through each minor in turn`,
    });
  }
  return added;
}

/** What the skew guard judges: what each node reports, and what each is asked for. */
export interface RolloutVersions {
  /** What each node reports now (a node that reports nothing is not judged). */
  nodes: NodeVersions[];
  /** The version each node's configuration is to ask for, where `spec.version` sets one, by machine. */
  asks: ReadonlyMap<string, KubeVersion>;
  /** `spec.version` is set: a control-plane step can only fix a break forward. */
  target: boolean;
  /** Where an upgrade stands, for people (core/versions/chain.ts), while one is under way. */
  waiting?: string | undefined;
}
