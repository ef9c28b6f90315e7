/**
 * What the phases of one pass hand each other, as types: the cluster's
 * identity (secrets phase), what is known of the workload cluster and of
 * failing runs (observers), and how each member node stands, computed from
 * those facts: one {@link Member} record each, gathered once per pass.
 *
 * @module
 */
import type { KeyPair } from "../../lib/pki.ts";
import type { NixosConfiguration } from "../../core/contract/nio.ts";
import { configurationFacts, type NodeFacts } from "../../core/nodes/facts.ts";
import { joinReports, type WorkloadFacts } from "../../core/nodes/joined.ts";
import { judgedAgainst, type NodeReport } from "../../core/nodes/readiness.ts";
import type { Plane } from "../../core/machines/selection.ts";
import type { EtcdSight } from "../../core/etcd/health.ts";
import { memberOn, placedOnNodes } from "../../core/etcd/members.ts";
import { nodeAddress } from "../../core/render/desired.ts";
import type { EtcdNode } from "../../core/etcd/membership.ts";
import type { ClusterScope } from "./scope.ts";
import { type PassRuns, runReport } from "./phases/runs.ts";

/** What the secrets phase produced: the CA, and a digest of the cluster's identity (tokens and CAs). */
export interface Identity {
  ca: KeyPair;
  /** For `cluster.nix`, never the secrets themselves. */
  digest: string;
  /** A re-key was asked for and found nothing lost: answered once the kubeconfig is re-issued (see answerKeptRekey). */
  rekeyKept?: boolean;
  /** The etcd CA NICO issued the cluster, or why it has none (controllers/cluster/etcd/trust.ts). */
  etcd?: { ca: KeyPair; none?: undefined } | { ca?: undefined; none: string } | undefined;
}

/** What the pass sees of etcd (phases/etcd.ts), and the control-plane nodes its members are placed on. */
export interface EtcdView {
  sight: EtcdSight;
  /** Every control-plane node of the cluster: members of the spec, and departing ones with a configuration. */
  nodes: EtcdNode[];
}

/** What is known about the workload cluster (answered by the workload observer). */
export type WorkloadView = WorkloadFacts & { hasKubeconfig?: boolean };

/** The facts node reports are computed from, as far as the pass has them. */
export interface PassView {
  /** What is known about the workload cluster; absent before it was observed. */
  workload?: WorkloadView | undefined;
  /** The members' runs and run reports, gathered once (phases/runs.ts); absent before they were. */
  runs?: PassRuns | undefined;
  /** Configurations as the server answered this pass, by name. */
  written: ReadonlyMap<string, NixosConfiguration>;
  /** The spec each configuration should carry, by name (none before they were rendered). */
  wantedSpec: ReadonlyMap<string, NixosConfiguration["spec"]>;
  /** Each control-plane node's API server version as answered since its last apply, by machine. */
  apiServers?: ReadonlyMap<string, string> | undefined;
  /** What the pass sees of etcd; absent before it was looked at. */
  etcd?: EtcdView | undefined;
}

/** The configuration of `machine` as of this pass: what was written, else the cache. */
function configOf(s: ClusterScope, v: PassView, machine: string): NixosConfiguration | undefined {
  const cn = s.nameOf(machine);
  return v.written.get(cn) ?? s.cache.config(cn);
}

/** One member node as this pass knows it: its facts record, the configuration they came from, and its report. */
export interface Member {
  facts: NodeFacts;
  /** Its configuration as its facts were gathered: written in this pass, else the cache. */
  config: NixosConfiguration | undefined;
  /** How it stands: NIO's view, then the workload cluster's (an applied node is Ready only when its Node is). */
  report: NodeReport;
}

/** Every member, control plane first, its facts gathered once and judged once (see {@link afterWrites}). */
export function gatherMembers(s: ClusterScope, v: PassView): Member[] {
  return judged(s, v, [
    ...s.selection.controlPlane.members.map((m) => gathered(s, v, m, "controlPlane")),
    ...s.selection.dataPlane.members.map((m) => gathered(s, v, m, "dataPlane")),
  ]);
}

/**
 * The members once this pass has written their configurations: a member whose configuration a write replaced
 * (the server answered another version than its facts were gathered from) is gathered and judged again from what
 * was written; the others keep their facts and report, as nothing else they are judged by changes within a pass
 * (the Machines, runs and the workload cluster are read once, before).
 */
export function afterWrites(s: ClusterScope, v: PassView, members: Member[]): Member[] {
  const replaced = (m: Member) => {
    const now = v.written.get(s.nameOf(m.facts.machine));
    const rv = now?.metadata.resourceVersion;
    return now !== undefined && now !== m.config && (rv === undefined || rv !== m.config?.metadata.resourceVersion);
  };
  const again = judged(s, v, members.filter(replaced).map((m) => gathered(s, v, m.facts.machine, m.report.plane)));
  if (!again.length) return members;
  const by = new Map(again.map((m) => [m.facts.machine, m]));
  return members.map((m) => by.get(m.facts.machine) ?? m);
}

/** The reports of `members`. */
export function reportsOf(members: readonly Member[]): NodeReport[] {
  return members.map((m) => m.report);
}

/** One member's facts record: its run report as NIO gives it, its configuration's facts, its Node. */
function gathered(s: ClusterScope, v: PassView, machine: string, plane: Plane): Omit<Member, "report"> {
  const config = configOf(s, v, machine);
  const desired = v.wantedSpec.get(s.nameOf(machine));
  // The pass's run report of the cached configuration, judged against the wanted spec; made again only for a
  // configuration written in this pass (or before the runs were gathered).
  const cached = config === s.cache.config(s.nameOf(machine)) ? v.runs?.reports.get(machine) : undefined;
  const run = cached
    ? judgedAgainst(cached, { cluster: s.ref, config, desired })
    : runReport(s, v.runs, machine, plane, config, desired);
  const apiServer = v.apiServers?.get(machine);
  const facts: NodeFacts = {
    machine,
    run,
    ...configurationFacts(config),
    node: v.workload?.nodes?.get(machine),
    ...(apiServer ? { apiServer } : {}),
  };
  if (plane === "controlPlane") facts.etcd = etcdFacts(v, nodeAddress(s.machines.get(machine), machine));
  return { facts, config };
}

/** What etcd's last look said of the member on a control-plane node's address (see NodeFacts.etcd). */
function etcdFacts(v: PassView, address: string): NodeFacts["etcd"] {
  const sight = v.etcd?.sight;
  if (sight?.kind !== "seen") return undefined;
  if (!placedOnNodes(sight.members, v.etcd!.nodes.map((n) => n.address))) return undefined;
  const m = memberOn(sight.members, address);
  return { seenAt: sight.at, ...(m ? { member: { healthy: m.healthy, isLearner: m.isLearner } } : {}) };
}

/** Judges the gathered members against the workload cluster (before it was observed: as NIO reports them). */
function judged(s: ClusterScope, v: PassView, members: Omit<Member, "report">[]): Member[] {
  if (!v.workload) return members.map((m) => ({ ...m, report: m.facts.run }));
  const reports = joinReports({
    nodes: members.map((m) => m.facts),
    workload: v.workload,
    now: s.now,
    timeoutMs: s.timeoutMs,
  });
  return members.map((m, k) => ({ ...m, report: reports[k]! }));
}
