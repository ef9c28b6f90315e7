/**
 * `EtcdHealthy`: the condition of what a pass sees of etcd (core/etcd/health.ts) and what the membership plan
 * found. Here, above core/etcd/, as every condition NICO builds. Pure; table-tested.
 *
 * @module
 */
import { condition, type ConditionInput, listNames } from "./conditions.ts";
import { type EtcdSight, memberLabel } from "../etcd/health.ts";
import { quorumFacts } from "../etcd/members.ts";
import { counted, type MembershipPlan } from "../etcd/membership.ts";

/**
 * `EtcdHealthy` for what a pass sees, with what the membership plan found (orphans, a blocked change).
 *
 * @example
 * ```ts
 * import { etcdCondition } from "./etcd.ts";
 * const m = (id: string, healthy: boolean) => ({ id, name: `cp-${id}`, peerURLs: [], isLearner: false, healthy, leader: id === "1", alarms: [] });
 * etcdCondition({ kind: "seen", members: [m("1", true), m("2", true), m("3", true)], at: new Date() }).reason; // "Healthy"
 * etcdCondition({ kind: "seen", members: [m("1", true), m("2", true), m("3", false)], at: new Date() }).reason; // "QuorumAtRisk"
 * etcdCondition({ kind: "off", why: "workload connections are off" }).status; // "Unknown"
 * ```
 */
export function etcdCondition(
  sight: EtcdSight,
  plan?: Pick<MembershipPlan, "orphans" | "blocked">,
): ConditionInput {
  if (sight.kind === "off") return condition("EtcdHealthy", "Unknown", "EtcdNotObserved", sight.why);
  if (sight.kind === "unreachable" && sight.quorumLost) {
    return condition(
      "EtcdHealthy",
      "False",
      "QuorumLost",
      `${sight.why}; NICO replaces no control-plane member: bring members back, or restore etcd from a backup`,
    );
  }
  if (sight.kind === "unreachable") {
    return condition(
      "EtcdHealthy",
      "Unknown",
      "EtcdUnreachable",
      `${sight.why}; the rollout keeps to the Node-based rules`,
    );
  }
  const { members } = sight;
  const q = quorumFacts(members);
  const figures = counted(members);
  const sick = members.filter((m) => !m.isLearner && !m.healthy).map(memberLabel);
  if (q.tolerance < 0) {
    return condition(
      "EtcdHealthy",
      "False",
      "QuorumLost",
      `quorum lost: ${figures}; not answering: ${listNames(sick)}`,
    );
  }
  const alarmed = members.filter((m) => m.alarms.length).map((m) => `${m.alarms.join(", ")} on ${memberLabel(m)}`);
  if (alarmed.length) return condition("EtcdHealthy", "False", "Alarm", `alarm: ${listNames(alarmed)}; ${figures}`);
  if (sick.length && q.tolerance === 0) {
    return condition(
      "EtcdHealthy",
      "False",
      "QuorumAtRisk",
      `${listNames(sick)} not healthy: one more loss stops etcd (${figures})`,
    );
  }
  if (sick.length) {
    return condition("EtcdHealthy", "False", "MemberUnhealthy", `${listNames(sick)} not healthy (${figures})`);
  }
  if (plan?.blocked) return condition("EtcdHealthy", "False", "MembershipBlocked", plan.blocked);
  if (plan?.orphans.length) {
    const why = plan.orphans.map((o) => o.why).join("; ");
    return condition("EtcdHealthy", "False", "OrphanMember", `${why}; NICO removes it while quorum holds`);
  }
  const leader = members.find((m) => m.leader);
  const learners = members.filter((m) => m.isLearner).map(memberLabel);
  return condition(
    "EtcdHealthy",
    "True",
    "Healthy",
    `${figures}; leader ${leader ? memberLabel(leader) : "?"}` +
      (learners.length ? `; learning: ${listNames(learners)}` : ""),
  );
}
