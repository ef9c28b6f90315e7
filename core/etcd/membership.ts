/**
 * What NICO does to etcd's membership in one pass, and which control-plane
 * steps wait for it. One change at a time, in this order:
 *
 * 1. a control-plane node the rollout removes now (scale-down, replacement,
 *    remediation; already drained) has its member removed first, after
 *    leadership moved off it, and only if the rest keep a healthy majority;
 *    its configuration is removed once the member is gone;
 * 2. a control-plane node whose configuration changes now must not lead
 *    (leadership moves off it first, as Cluster API's KubeadmControlPlane
 *    does) and its member may go down for the switch only if the others keep
 *    a healthy majority;
 * 3. an orphan member (its peer address is on no control-plane node of the
 *    cluster, or it was added and never started within the startup
 *    timeout: a failed join) is removed, while quorum holds.
 *
 * And a new control-plane node is not created while a voting member does
 * not answer: etcd refuses every member add then, learners too (its strict
 * reconfiguration check wants the leader connected to every voter). A dead
 * member of a node that leaves the control plane (a remediation, a
 * replacement) is therefore removed first, before its replacement joins, as
 * Cluster API's KubeadmControlPlane does: removing a dead member never costs
 * etcd a vote it has.
 *
 * Pure; table-tested. The shell carries the action out and tells an Event.
 *
 * @module
 */
import { leaderTarget, mayRemove, mayTakeDown, memberOn, type MemberView, quorumFacts } from "./members.ts";

/** A control-plane node of the cluster: a member of the spec, or one leaving whose configuration still exists. */
export interface EtcdNode {
  machine: string;
  address: string;
}

export interface MembershipInput {
  members: readonly MemberView[];
  /** Every control-plane node of the cluster (members of the spec and departing ones). */
  nodes: readonly EtcdNode[];
  /** Control-plane nodes whose configuration the rollout removes in this pass. */
  removing: readonly string[];
  /** Control-plane nodes whose configuration the rollout changes in this pass. */
  changing: readonly string[];
  /** Control-plane nodes whose configuration the rollout creates in this pass (a member is to join). */
  creating?: readonly string[] | undefined;
  /** Control-plane nodes that leave the control plane (configured, not in the spec), removed now or later. */
  departing?: readonly string[] | undefined;
  /**
   * When NICO first saw each member that has not started or is still a learner (by id): a join that never
   * started, or never caught up, is an orphan after the startup timeout.
   */
  unstartedSince: ReadonlyMap<string, Date>;
  now: Date;
  startupTimeoutMs: number;
}

export type MembershipAction =
  | { kind: "moveLeader"; from: MemberView; to: MemberView; why: string }
  | { kind: "remove"; member: MemberView; why: string };

/** A node whose step waits for etcd, and why. */
export interface EtcdHold {
  machine: string;
  why: string;
}

export interface MembershipPlan {
  /** The one membership change of this pass. */
  action?: MembershipAction | undefined;
  /** Steps of the rollout that wait (not taken in this pass). */
  holds: EtcdHold[];
  /** Members no node of the cluster stands for, or failed joins past the startup timeout. */
  orphans: { member: MemberView; why: string }[];
  /** Something NICO may not do without losing quorum: said in status. */
  blocked?: string | undefined;
}

const label = (m: MemberView) => (m.name ? `${m.name} (${m.id})` : `unstarted member ${m.id}`);

/** Why `m` is an orphan (and whether no node is on its address), or undefined when a node stands for it in time. */
function orphanWhy(m: MemberView, i: MembershipInput): { why: string; nowhere: boolean } | undefined {
  if (!i.nodes.some((n) => memberOn([m], n.address))) {
    const where = m.peerURLs.join(", ") || "no peer URL";
    return { why: `${label(m)} is on ${where}, where no control-plane node of this cluster is`, nowhere: true };
  }
  const since = i.unstartedSince.get(m.id);
  if ((!m.name || m.isLearner) && since && i.now.getTime() - since.getTime() > i.startupTimeoutMs) {
    const s = Math.round((i.now.getTime() - since.getTime()) / 1000);
    const why = m.name
      ? `${label(m)} is still a learner ${s} s after NICO first saw it (a join that never caught up)`
      : `${label(m)} was added ${s} s ago and never started (a failed join)`;
    return { why, nowhere: false };
  }
  return undefined;
}

/**
 * Whether the members NICO can place on its nodes hold quorum by themselves. An orphan by address is removed only
 * then: peer URLs that name no node's address at all (a flake whose etcd advertises other addresses than
 * `cluster.nix` names) must never look like a cluster of orphans.
 */
function placedHoldQuorum(i: MembershipInput): boolean {
  const placed = i.members.filter((m) => !m.isLearner && m.healthy && i.nodes.some((n) => memberOn([m], n.address)));
  return placed.length >= quorumFacts(i.members).quorum;
}

/**
 * What a voting member that does not answer means for this pass: the dead member of a departing node is removed
 * (when the rest keep a healthy majority), and every node the rollout would create waits, since etcd would refuse
 * its member.
 */
function deadVoters(i: MembershipInput): { action?: MembershipAction; holds: EtcdHold[] } {
  const dead = i.members.filter((m) => !m.isLearner && !m.healthy);
  if (!dead.length) return { holds: [] };
  const leaving = (i.departing ?? []).flatMap((machine) => {
    const n = i.nodes.find((x) => x.machine === machine);
    const m = n && memberOn(dead, n.address);
    return m ? [{ machine, member: m }] : [];
  });
  const first = leaving.find((l) => mayRemove(i.members, l.member.id));
  const action: MembershipAction | undefined = first && {
    kind: "remove",
    member: first.member,
    why: `${first.machine} leaves the control plane and its member does not answer (etcd admits no new member ` +
      "while it votes)",
  };
  const names = dead.map(label).join(", ");
  // Removed first, where each is a departing node's (or on no node at all: an orphan) and one may go now.
  const goes = (m: MemberView) =>
    leaving.some((l) => l.member.id === m.id) || !i.nodes.some((n) => memberOn([m], n.address));
  const then = dead.some((m) => mayRemove(i.members, m.id)) && dead.every(goes)
    ? (dead.length > 1 ? "their members are removed first" : "its member is removed first")
    : `NICO waits for ${dead.length > 1 ? "them" : "it"} to answer again or to be taken out of the control plane`;
  const holds = (i.creating ?? []).map((machine) => ({
    machine,
    why: `etcd admits no new member while ${names} ${dead.length > 1 ? "do" : "does"} not answer (its strict ` +
      `reconfiguration check): ${then}`,
  }));
  return { ...(action ? { action } : {}), holds };
}

/**
 * Plans this pass's membership change.
 *
 * @example
 * ```ts
 * import { planMembership } from "./membership.ts";
 * const m = (id: string, host: string, leader = false) => ({ id, name: `cp-${id}`, peerURLs: [`https://${host}:2380`], isLearner: false, healthy: true, leader, alarms: [] });
 * const members = [m("1", "127.0.0.1", true), m("2", "127.0.0.2"), m("3", "127.0.0.3")];
 * const nodes = [1, 2, 3].map((n) => ({ machine: `cp-${n}`, address: `127.0.0.${n}` }));
 * const p = planMembership({ members, nodes, removing: [], changing: ["cp-1"], unstartedSince: new Map(), now: new Date(), startupTimeoutMs: 600_000 });
 * p.action?.kind; // "moveLeader"
 * p.holds; // [{ machine: "cp-1", why: "leadership moves off its etcd member cp-1 (1) first" }]
 * ```
 */
export function planMembership(i: MembershipInput): MembershipPlan {
  const dead = deadVoters(i);
  const holds: EtcdHold[] = [...dead.holds];
  let action: MembershipAction | undefined = dead.action;
  let blocked: string | undefined;
  const found = i.members.flatMap((member) => {
    const o = orphanWhy(member, i);
    return o ? [{ member, ...o }] : [];
  });
  const orphans = found.map(({ member, why }) => ({ member, why }));
  const nodeOf = (machine: string) => i.nodes.find((n) => n.machine === machine);
  const away = (m: MemberView, why: string): MembershipAction | undefined => {
    const to = leaderTarget(i.members, m.id);
    return to ? { kind: "moveLeader", from: m, to, why } : undefined;
  };
  for (const machine of i.removing) {
    const m = nodeOf(machine) && memberOn(i.members, nodeOf(machine)!.address);
    if (!m) continue;
    if (m.leader) {
      action ??= away(m, `${machine} leaves the control plane`);
      holds.push({ machine, why: `leadership moves off its etcd member ${label(m)} before it is removed` });
    } else if (mayRemove(i.members, m.id)) {
      action ??= { kind: "remove", member: m, why: `${machine} leaves the control plane` };
      holds.push({ machine, why: `its etcd member ${label(m)} is removed first` });
    } else {
      blocked ??= `removing ${label(m)} would leave etcd without a healthy majority (${counted(i.members)})`;
      holds.push({ machine, why: blocked });
    }
  }
  // With one or two voters a switch stops etcd for a while. Alone, nothing better is coming, so nothing is held
  // (the Node-based rules already say a small control plane's update interrupts the API); two voters of which one
  // leaves wait for that removal: the one left then switches alone (the planner orders a scale-down so).
  const voters = quorumFacts(i.members).voters;
  const leaverVotes = (machine: string) =>
    (i.departing ?? []).some((d) => {
      const n = d !== machine ? nodeOf(d) : undefined;
      const v = n && memberOn(i.members, n.address);
      return v !== undefined && !v.isLearner;
    });
  for (const machine of i.changing) {
    const m = nodeOf(machine) && memberOn(i.members, nodeOf(machine)!.address);
    if (!m) continue;
    const canLoseOne = voters >= 3 || (voters === 2 && leaverVotes(machine));
    const moved = m.leader && !m.isLearner ? away(m, `${machine}'s configuration changes`) : undefined;
    if (moved) {
      action ??= moved;
      holds.push({ machine, why: `leadership moves off its etcd member ${label(m)} first` });
    } else if (canLoseOne && !mayTakeDown(i.members, m.id)) {
      holds.push({
        machine,
        why: `its switch would leave fewer healthy etcd members than a majority (${counted(i.members)})`,
      });
    }
  }
  if (!action && found.length) {
    const placed = placedHoldQuorum(i);
    const removable = found.filter((o) => mayRemove(i.members, o.member.id));
    const next = removable.find((o) => !o.nowhere || placed);
    if (next) action = { kind: "remove", member: next.member, why: next.why };
    else if (removable.length) {
      blocked ??= `orphan ${label(removable[0]!.member)} stays: the members on this cluster's control-plane nodes ` +
        `do not hold quorum by themselves (${counted(i.members)}); do the members' peer URLs name the nodes' ` +
        "addresses as cluster.nix does?";
    } else blocked ??= `orphan ${label(found[0]!.member)} stays: removing it would lose quorum`;
  }
  holds.push(...afterRemoval(i, action, holds));
  return { ...(action ? { action } : {}), holds, orphans, ...(blocked ? { blocked } : {}) };
}

/**
 * A member removed in this pass changes the count every switch is judged by, and the switch would be judged
 * against the count from before: one change to etcd at a time, so a control-plane switch waits for the next
 * pass (and its look at the members left) whenever this pass removes a member.
 */
function afterRemoval(i: MembershipInput, action: MembershipAction | undefined, holds: EtcdHold[]): EtcdHold[] {
  if (action?.kind !== "remove") return [];
  const why = `waits for the removal of etcd member ${label(action.member)} in this pass (one change to etcd at a ` +
    "time; the switch is judged against the members left)";
  return i.changing.filter((machine) => !holds.some((h) => h.machine === machine)).map((machine) => ({ machine, why }));
}

/**
 * Which members were counted, for status and messages: `2/3 healthy voting members (quorum 2): cp-1, cp-2`.
 *
 * @example
 * ```ts
 * import { counted } from "./membership.ts";
 * const m = (name: string, healthy: boolean) => ({ id: name, name, peerURLs: [], isLearner: false, healthy, leader: false, alarms: [] });
 * counted([m("cp-1", true), m("cp-2", true), m("cp-3", false)]); // "2/3 healthy voting members (quorum 2): cp-1, cp-2"
 * ```
 */
export function counted(members: readonly MemberView[]): string {
  const q = quorumFacts(members);
  const healthy = members.filter((m) => m.healthy && !m.isLearner).map((m) => m.name || m.id).sort();
  return `${q.healthyVoters}/${q.voters} healthy voting members (quorum ${q.quorum})${
    healthy.length ? `: ${healthy.join(", ")}` : ""
  }`;
}
