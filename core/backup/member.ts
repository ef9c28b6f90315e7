/**
 * Which etcd member a snapshot is taken from: a healthy voting follower
 * (sparing the leader), else the healthy leader of a single-member cluster.
 * Pure.
 *
 * @module
 */
import type { MemberView } from "../etcd/members.ts";

/**
 * The member to take a snapshot from, or undefined with why none can be.
 *
 * @example
 * ```ts
 * import { backupMember } from "./member.ts";
 * const m = (id: string, leader: boolean) => ({ id, name: `cp-${id}`, peerURLs: [], isLearner: false, healthy: true, leader, alarms: [] });
 * backupMember([m("1", true), m("2", false), m("3", false)]).member?.id; // "2"
 * ```
 */
export function backupMember(members: readonly MemberView[]): { member?: MemberView; why?: string } {
  const usable = members.filter((m) => m.healthy && !m.isLearner && m.name && !m.alarms.includes("CORRUPT"))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const member = usable.find((m) => !m.leader) ?? usable[0];
  if (member) return { member };
  return { why: "no healthy etcd member to take a snapshot from (see EtcdHealthy)" };
}
