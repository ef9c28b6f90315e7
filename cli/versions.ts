/**
 * The Kubernetes versions in the user commands, from the cluster's status
 * (`status.versions`: what each node reports and is asked for) and what each
 * configuration's `cluster.nix` asks for now: a node's version for `nico
 * describe`, the whole way to `spec.version` for `nico plan`
 * (core/rollout/upgrade.ts), and what the planner's version rules read.
 * Pure.
 *
 * @module
 */
import { askedVersion, clusterNixOf } from "../core/render/clusternix.ts";
import type { RolloutInput, RolloutVersions } from "../core/rollout/types.ts";
import type { ChainNode } from "../core/versions/chain.ts";
import type { NodeVersions } from "../core/versions/policy.ts";
import { upgradeSteps } from "../core/rollout/upgrade.ts";
import { formatVersion, type KubeVersion, parseReportedVersion, parseSpecVersion } from "../core/versions/version.ts";
import type { ClusterView, NodeView } from "./observe.ts";

type Reported = NonNullable<NonNullable<ClusterView["cluster"]["status"]>["versions"]>["nodes"];

/** What the status says a node reports and is asked for. */
function reportedBy(v: ClusterView, machine: string): NonNullable<Reported>[number] | undefined {
  return v.cluster.status?.versions?.nodes?.find((n) => n.name === machine);
}

/** What a node's configuration asks for now. */
function askedBy(n: NodeView): KubeVersion | undefined {
  return parseSpecVersion(askedVersion(n.config && clusterNixOf(n.config)) ?? "");
}

/** The versions a node reports, for the policy. */
function versionsOf(v: ClusterView, n: NodeView): NodeVersions {
  const r = reportedBy(v, n.machine);
  return {
    machine: n.machine,
    plane: n.plane,
    kubelet: parseReportedVersion(r?.kubelet),
    ...(n.plane === "controlPlane" ? { apiServer: parseReportedVersion(r?.apiServer) } : {}),
  };
}

/** Whether the status lists any node's versions (then `nico describe` shows a VERSION column). */
export function showsVersions(v: ClusterView): boolean {
  return (v.cluster.status?.versions?.nodes?.length ?? 0) > 0;
}

/** A node's version for `nico describe`: what it reports (`1.31.4`), and `→ 1.32` while it is asked for another. */
export function versionCell(v: ClusterView, n: NodeView): string {
  const r = reportedBy(v, n.machine);
  const raw = n.plane === "controlPlane" ? r?.apiServer ?? r?.kubelet : r?.kubelet;
  const now = parseReportedVersion(raw);
  const shown = now ? formatVersion(now) : raw ?? "-";
  const asked = parseSpecVersion(r?.asked ?? "");
  const moving = asked &&
    (!now || now.minor !== asked.minor || (asked.patch !== undefined && now.patch !== asked.patch));
  return moving ? `${shown} → ${formatVersion(asked)}` : shown;
}

/** The cluster's version for `nico describe`: the lowest running, and `→ target` while an upgrade is under way. */
export function clusterVersionCell(v: ClusterView): string {
  const s = v.cluster.status;
  const target = s?.versions?.target;
  if (!s?.version) return target ? `- → ${target}` : "-";
  return target && s.versions?.chain?.length ? `${s.version} → ${target}` : s.version;
}

/** What the planner's version rules read, as the status tells it (none when no node reports a version). */
export function rolloutVersionsOf(v: ClusterView): { versions: RolloutVersions | undefined; changing: Set<string> } {
  const members = v.nodes.filter((n) => !n.departing);
  const changing = new Set(
    members.filter((n) => {
      const asked = parseSpecVersion(reportedBy(v, n.machine)?.asked ?? "");
      const now = askedBy(n);
      return n.config !== undefined && asked !== undefined && (!now || formatVersion(now) !== formatVersion(asked));
    }).map((n) => n.machine),
  );
  const nodes = members.map((n) => versionsOf(v, n));
  if (!nodes.some((n) => n.kubelet || n.apiServer)) return { versions: undefined, changing };
  const asks = new Map(members.flatMap((n) => {
    const asked = parseSpecVersion(reportedBy(v, n.machine)?.asked ?? "");
    return asked ? [[n.machine, asked] as const] : [];
  }));
  const versions: RolloutVersions = { nodes, asks, target: v.cluster.spec.version !== undefined };
  return { versions, changing };
}

/** The lines of `nico plan` that show the way to `spec.version`, every step of the chain; none without one. */
export function versionLines(v: ClusterView, input: RolloutInput): string[] {
  const target = parseSpecVersion(v.cluster.spec.version ?? "");
  if (!target) return [];
  const nodes: ChainNode[] = v.nodes.filter((n) => !n.departing).map((n) => {
    const r = versionsOf(v, n);
    return {
      machine: n.machine,
      plane: n.plane,
      rendered: askedBy(n),
      reported: n.plane === "controlPlane" ? r.apiServer ?? r.kubelet : r.kubelet,
    };
  });
  const { nodes: _nodes, versions: _versions, ...rollout } = input;
  const steps = upgradeSteps(target, nodes, rollout);
  const running = v.cluster.status?.version;
  const head = `Kubernetes ${running ?? "(not reported yet)"} → ${formatVersion(target)} (spec.version)`;
  if (!steps.length) return [`${head}: every node runs it.`];
  return [
    `${head}: the control plane first, one minor at a time, then the workers:`,
    ...steps.map((s, k) =>
      `  ${k + 1}. ${s.plane === "controlPlane" ? "control plane" : "workers"} to ${formatVersion(s.version)}: ` +
      s.nodes.join(", ")
    ),
  ];
}
