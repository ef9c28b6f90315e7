/**
 * What one look at etcd found (a {@link EtcdSnapshot}, made by the shell's
 * observer off the pass's path), and the members as NICO judges them from
 * it: healthy when its own status answered in time with no errors and a
 * leader known, the leader as the members that answered agree. Pure.
 *
 * @module
 */
import type { EtcdAlarm, EtcdMember, EtcdStatus } from "../../lib/etcd/client.ts";
import type { MemberView } from "./members.ts";

/** One refresh of a cluster's etcd: the member list, each member's status (or why none), the alarms. */
export interface EtcdSnapshot {
  /** When the refresh finished. */
  at: Date;
  /** When it began: what it says of a member is no older than this (absent in snapshots made by hand). */
  since?: Date | undefined;
  /** The member list, from the first endpoint that answered; absent when none did. */
  members?: EtcdMember[] | undefined;
  /** Why each endpoint asked for the list did not answer it, in the order asked (none answered: why NICO cannot see). */
  listErrors: string[];
  /** Each member's own status, by member id. */
  statuses: ReadonlyMap<string, EtcdStatus>;
  /** Why a member's status is missing, by member id. */
  statusErrors: ReadonlyMap<string, string>;
  alarms: EtcdAlarm[];
  /**
   * When no endpoint answered the list (etcd 3.7 serves it only with a leader): the hosts whose member still
   * answered its own status, without a leader. Quorum lost, not a flake without the contract.
   */
  leaderless?: string[] | undefined;
  /** How many requests the refresh made, and how long it took (for the cost per refresh). */
  cost?: { requests: number; ms: number } | undefined;
}

/**
 * The leader the members that answered name most (`"0"`: none names one).
 *
 * @example
 * ```ts
 * import { leaderOf } from "./observed.ts";
 * const st = (leader: string) => ({ leader }) as never;
 * leaderOf(new Map([["1", st("2")], ["2", st("2")], ["3", st("1")]])); // "2"
 * leaderOf(new Map()); // "0"
 * ```
 */
export function leaderOf(statuses: ReadonlyMap<string, Pick<EtcdStatus, "leader">>): string {
  const votes = new Map<string, number>();
  for (const s of statuses.values()) if (s.leader !== "0") votes.set(s.leader, (votes.get(s.leader) ?? 0) + 1);
  let best = "0";
  for (const [id, n] of votes) if (n > (votes.get(best) ?? 0) || (n === votes.get(best) && id < best)) best = id;
  return best;
}

/**
 * The members of a snapshot as NICO judges them (none when the list could not be read).
 *
 * @example
 * ```ts
 * import { memberViews } from "./observed.ts";
 * const member = (id: string) => ({ id, name: `m${id}`, peerURLs: [`https://127.0.0.${id}:2380`], clientURLs: [], isLearner: false });
 * const status = (id: string) => ({ memberId: id, leader: "1", raftTerm: "2", raftIndex: "9", raftAppliedIndex: "9", isLearner: false, errors: [], dbSize: 1, version: "3.7.0" });
 * const v = memberViews({
 *   at: new Date(), members: [member("1"), member("2")], listErrors: [],
 *   statuses: new Map([["1", status("1")]]), statusErrors: new Map([["2", "no answer within 2000 ms"]]), alarms: [],
 * });
 * v.map((m) => [m.name, m.healthy, m.leader]); // [["m1", true, true], ["m2", false, false]]
 * ```
 */
export function memberViews(s: EtcdSnapshot): MemberView[] {
  const leader = leaderOf(s.statuses);
  return (s.members ?? []).map((m) => {
    const st = s.statuses.get(m.id);
    return {
      id: m.id,
      name: m.name,
      peerURLs: m.peerURLs,
      isLearner: m.isLearner,
      healthy: st !== undefined && st.errors.length === 0 && st.leader !== "0",
      leader: m.id === leader,
      alarms: s.alarms.filter((a) => a.memberId === m.id).map((a) => a.alarm),
    };
  });
}
