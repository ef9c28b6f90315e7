/**
 * etcd's health as the cluster's status says it: what NICO can see of etcd
 * in a pass ({@link EtcdSight}: not looked at, unreachable, or its members)
 * and `status.etcd` (the `EtcdHealthy` condition is core/status/etcd.ts) (the members, and the quorum
 * figures with which members were counted). Pure; table-tested.
 *
 * @module
 */
import type { EtcdStatus } from "../../crds/kubernetescluster.ts";
import { listNames } from "../../lib/text.ts";
import { memberOn, type MemberView, quorumFacts } from "./members.ts";
import { counted, type EtcdNode } from "./membership.ts";
import { type EtcdSnapshot, memberViews } from "./observed.ts";

/** What a pass can see of etcd. */
export type EtcdSight =
  /** NICO does not look (no workload connections, no etcd CA, not asked yet): why. */
  | { kind: "off"; why: string }
  /**
   * No member answered (refused, TLS refused, no answer in time): why. `quorumLost` when members answered their
   * own status without a leader: etcd runs, NICO's credentials work, but it has lost quorum. `at`: when that look
   * began.
   */
  | { kind: "unreachable"; why: string; quorumLost?: true; at?: Date }
  /** `at`: when the look began (the members are as they were then, or later). */
  | { kind: "seen"; members: MemberView[]; at: Date };

/**
 * What the last snapshot lets a pass see: nothing before the first, unreachable when no member answered the list
 * or the last answer is older than `staleMs`, else the members.
 *
 * @example
 * ```ts
 * import { etcdSight } from "./health.ts";
 * const now = new Date("2026-01-01T00:01:00Z");
 * etcdSight(undefined, now, 30_000).kind; // "off"
 * const refused = { at: now, listErrors: ["etcd https://127.0.0.5:2379 cluster/member/list: connection refused"], statuses: new Map(), statusErrors: new Map(), alarms: [] };
 * const sight = etcdSight(refused, now, 30_000);
 * sight.kind === "unreachable" && sight.why; // "no member answers: etcd https://127.0.0.5:2379 cluster/member/list: connection refused"
 * etcdSight({ ...refused, leaderless: ["127.0.0.5"] }, now, 30_000).kind; // "unreachable", with quorumLost: true
 * ```
 */
export function etcdSight(snap: EtcdSnapshot | undefined, now: Date, staleMs: number): EtcdSight {
  if (!snap) return { kind: "off", why: "NICO has not asked etcd yet" };
  const at = snap.since ?? snap.at; // when the look began
  if (!snap.members && snap.leaderless?.length) {
    const why = `no member answers the member list, and the members on ${listNames(snap.leaderless)} answer ` +
      "without a leader: etcd has lost quorum";
    return { kind: "unreachable", why, quorumLost: true, at };
  }
  if (!snap.members) {
    const why = snap.listErrors.length ? listNames(snap.listErrors, 2) : "no control-plane node to ask";
    return { kind: "unreachable", why: `no member answers: ${why}`, at };
  }
  const age = now.getTime() - snap.at.getTime();
  if (age > staleMs) {
    return {
      kind: "unreachable",
      why: `the last answer is ${Math.round(age / 1000)} s old (etcd does not answer now)`,
      at,
    };
  }
  return { kind: "seen", members: memberViews(snap), at };
}

export const memberLabel = (m: MemberView) => m.name || `unstarted member ${m.id}`;

/**
 * `status.etcd`: the members as seen (with the node on each one's peer address) and the quorum figures.
 *
 * @example
 * ```ts
 * import { etcdStatus } from "./health.ts";
 * const m = { id: "1", name: "cp-1", peerURLs: ["https://127.0.0.5:2380"], isLearner: false, healthy: true, leader: true, alarms: [] };
 * const s = etcdStatus([m], [{ machine: "cp-1", address: "127.0.0.5" }]);
 * s.members[0]?.node; // "cp-1"
 * s.counted; // "1/1 healthy voting members (quorum 1): cp-1"
 * ```
 */
export function etcdStatus(members: readonly MemberView[], nodes: readonly EtcdNode[]): EtcdStatus {
  const q = quorumFacts(members);
  return {
    members: members.map((m) => {
      const node = nodes.find((n) => memberOn([m], n.address))?.machine;
      return {
        name: m.name,
        memberID: m.id,
        ...(m.peerURLs[0] ? { peerURL: m.peerURLs[0] } : {}),
        ...(node ? { node } : {}),
        healthy: m.healthy,
        leader: m.leader,
        learner: m.isLearner,
        ...(m.alarms.length ? { alarms: [...m.alarms] } : {}),
      };
    }),
    ...q,
    counted: counted(members),
  };
}
