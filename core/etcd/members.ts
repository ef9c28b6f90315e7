/**
 * etcd's own view of a cluster's control plane, as NICO judges it: which
 * member stands for which control-plane node (by the host of its peer URL,
 * which is the node's address in the flake contract), quorum and failure
 * tolerance counted over voting members, and whether a step (a member down
 * for its node's switch) or a removal keeps a majority healthy. Pure;
 * table-tested.
 *
 * etcd's rule: a cluster of n voting members needs floor(n/2)+1 of them
 * healthy to make progress; learners do not vote and do not count.
 *
 * @module
 */

/** A member as NICO sees it in one pass: the member list, plus what its own status answered. */
export interface MemberView {
  /** The member id, a decimal uint64. */
  id: string;
  /** Empty for a member added but never started. */
  name: string;
  peerURLs: string[];
  isLearner: boolean;
  /** Its status answered in time, with no errors of its own. */
  healthy: boolean;
  /** It leads (as the members that answered agree). */
  leader: boolean;
  /** Alarms raised on it (`NOSPACE`, `CORRUPT`). */
  alarms: string[];
}

/** The host of a URL as written in a member's peer URLs (IPv6 without brackets, lowercase). */
export function urlHost(url: string): string | undefined {
  try {
    return new URL(url).hostname.replace(/^\[|\]$/g, "").toLowerCase();
  } catch {
    return undefined;
  }
}

/**
 * The member whose peer URL is on `address` (a node's address as `cluster.nix` names it).
 *
 * @example
 * ```ts
 * import { memberOn } from "./members.ts";
 * const m = { id: "1", name: "cp-1", peerURLs: ["https://127.0.0.5:2380"], isLearner: false, healthy: true, leader: true, alarms: [] };
 * memberOn([m], "127.0.0.5")?.name; // "cp-1"
 * memberOn([m], "127.0.0.6"); // undefined
 * ```
 */
export function memberOn(members: readonly MemberView[], address: string): MemberView | undefined {
  const want = address.replace(/^\[|\]$/g, "").toLowerCase();
  return members.find((m) => m.peerURLs.some((u) => urlHost(u) === want));
}

/** The quorum of a cluster with `voters` voting members. */
export const quorumOf = (voters: number) => Math.floor(voters / 2) + 1;

/** How a membership stands: voters, healthy voters, the quorum and how many more healthy voters it can lose. */
export interface QuorumFacts {
  voters: number;
  healthyVoters: number;
  quorum: number;
  /** Healthy voters above the quorum (negative: quorum is lost). */
  tolerance: number;
}

/**
 * Counts voters and healthy voters.
 *
 * @example
 * ```ts
 * import { quorumFacts } from "./members.ts";
 * const m = (id: string, healthy: boolean, isLearner = false) => ({ id, name: id, peerURLs: [], isLearner, healthy, leader: false, alarms: [] });
 * quorumFacts([m("1", true), m("2", true), m("3", false)]); // { voters: 3, healthyVoters: 2, quorum: 2, tolerance: 0 }
 * quorumFacts([m("1", true), m("2", true), m("3", true, true)]).voters; // 2
 * ```
 */
export function quorumFacts(members: readonly MemberView[]): QuorumFacts {
  const voters = members.filter((m) => !m.isLearner);
  const healthyVoters = voters.filter((m) => m.healthy).length;
  const quorum = quorumOf(voters.length);
  return { voters: voters.length, healthyVoters, quorum, tolerance: healthyVoters - quorum };
}

/**
 * Whether `id` may go down for a while (its node's switch) and leave a healthy majority: the others' healthy
 * voters still make the quorum of all voters. A learner or an unhealthy member costs nothing.
 *
 * @example
 * ```ts
 * import { mayTakeDown } from "./members.ts";
 * const m = (id: string, healthy = true) => ({ id, name: id, peerURLs: [], isLearner: false, healthy, leader: false, alarms: [] });
 * mayTakeDown([m("1"), m("2"), m("3")], "1"); // true
 * mayTakeDown([m("1"), m("2"), m("3", false)], "1"); // false
 * mayTakeDown([m("1"), m("2")], "1"); // false: two members cannot lose one
 * ```
 */
export function mayTakeDown(members: readonly MemberView[], id: string): boolean {
  const q = quorumFacts(members);
  const m = members.find((x) => x.id === id);
  const costs = m && m.healthy && !m.isLearner ? 1 : 0;
  return q.healthyVoters - costs >= q.quorum;
}

/**
 * Whether removing `id` from the membership leaves the remaining voters a healthy majority of their own (etcd
 * refuses the same with its strict reconfiguration check). Removing a dead member of three keeps two of two.
 *
 * @example
 * ```ts
 * import { mayRemove } from "./members.ts";
 * const m = (id: string, healthy = true) => ({ id, name: id, peerURLs: [], isLearner: false, healthy, leader: false, alarms: [] });
 * mayRemove([m("1"), m("2"), m("3", false)], "3"); // true
 * mayRemove([m("1"), m("2", false), m("3", false)], "3"); // false: one healthy of two
 * mayRemove([m("1"), m("2"), m("3")], "3"); // true
 * mayRemove([m("1"), m("2", false)], "2"); // false: one of two has no quorum to agree on the removal
 * ```
 */
export function mayRemove(members: readonly MemberView[], id: string): boolean {
  const rest = members.filter((m) => m.id !== id);
  if (rest.length === members.length || rest.length === 0) return false;
  // The removal is itself a change etcd must agree on: the membership of now needs its quorum too.
  if (quorumFacts(members).tolerance < 0) return false;
  const q = quorumFacts(rest);
  return q.healthyVoters >= q.quorum;
}

/** A healthy voting member to hand leadership to, other than `from` (name order: the same choice each pass). */
export function leaderTarget(members: readonly MemberView[], from: string): MemberView | undefined {
  return [...members]
    .filter((m) => m.id !== from && m.healthy && !m.isLearner && m.name)
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))[0];
}

/**
 * Whether the members sit where the flake contract puts them: a majority of the voting members on the addresses
 * of `addresses` (the cluster's control-plane nodes). When they do not (a flake whose etcd advertises other
 * names), NICO cannot tell which member is which node's and judges no node by its member.
 *
 * @example
 * ```ts
 * import { placedOnNodes } from "./members.ts";
 * const m = (id: string, host: string) => ({ id, name: id, peerURLs: [`https://${host}:2380`], isLearner: false, healthy: true, leader: false, alarms: [] });
 * placedOnNodes([m("1", "127.0.0.1"), m("2", "127.0.0.2"), m("3", "etcd-3.local")], ["127.0.0.1", "127.0.0.2"]); // true
 * placedOnNodes([m("1", "etcd-1.local"), m("2", "etcd-2.local")], ["127.0.0.1", "127.0.0.2"]); // false
 * ```
 */
export function placedOnNodes(members: readonly MemberView[], addresses: readonly string[]): boolean {
  const voters = members.filter((m) => !m.isLearner);
  const placed = voters.filter((m) => addresses.some((a) => memberOn([m], a)));
  return voters.length > 0 && placed.length >= quorumOf(voters.length);
}
