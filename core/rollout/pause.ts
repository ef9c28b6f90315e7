/**
 * The one pause gate: whether a cluster is paused, and what a pass over it
 * may still write. A paused cluster keeps its status, Secrets, claims and
 * kubeconfig current (they change no node), and changes nothing that moves
 * a node: no configuration written or deleted (but a node's run schedule
 * goes back to its resting one, so NIO does not run it every minute while
 * paused), no drain, no Node uncordoned
 * or deleted, no etcd member removed nor leadership moved, no Machine released or taken out of service. The phases ask
 * here instead of reading `paused` each on its own. Pure; table-tested.
 *
 * @module
 */
import { PAUSED_ANNOTATION } from "../contract/labels.ts";

/** What one pass may write, by kind of write. */
export interface PassWrites {
  /** The cluster's status (always: it says the cluster is paused, and why nothing moves). */
  status: boolean;
  /** The cluster's own Secrets (tokens, CA) and its kubeconfig Secret: no node changes for them. */
  secrets: boolean;
  /** Claims on the Machines the selection picked (a claim changes no node). */
  claims: boolean;
  /** NixosConfigurations created, updated or deleted (the rollout). */
  configurations: boolean;
  /**
   * A node's NIO v1 `dayTwoSchedule` put back to its resting one after NICO had set `* * * * *` for its step (always:
   * paused or not, NIO runs what it was given on the node's schedule, and a pause must not keep it running every
   * minute).
   */
  restSchedules: boolean;
  /** Nodes of the workload cluster cordoned and drained before a change. */
  drains: boolean;
  /** Nodes of the workload cluster uncordoned after a drain, or deleted once their machine left. */
  workloadNodes: boolean;
  /** Claims on Machines the cluster no longer needs, released. */
  releases: boolean;
  /** Machines marked out of service to be replaced. */
  remediation: boolean;
  /** etcd's membership changed: leadership moved, a member removed. */
  etcdMembership: boolean;
}

/**
 * Whether the cluster is paused: `spec.paused`, or the `nico.homystack.com/paused` annotation set to exactly
 * `"true"`.
 *
 * @example
 * ```ts
 * import { isPaused } from "./pause.ts";
 * isPaused({ paused: false }, { "nico.homystack.com/paused": "true" }); // true
 * isPaused({}, { "nico.homystack.com/paused": "yes" }); // false: only "true" pauses
 * ```
 */
export function isPaused(
  spec: { paused?: boolean | undefined },
  annotations: Record<string, string> | undefined,
): boolean {
  return spec.paused === true || annotations?.[PAUSED_ANNOTATION] === "true";
}

/**
 * What a pass may write: everything when the cluster is not paused; when it is, only what changes no node.
 *
 * @example
 * ```ts
 * import { passWrites } from "./pause.ts";
 * passWrites(true).status; // true
 * passWrites(true).configurations; // false
 * passWrites(false).configurations; // true
 * ```
 */
export function passWrites(paused: boolean): PassWrites {
  const moves = !paused;
  return {
    status: true,
    secrets: true,
    claims: true,
    configurations: moves,
    restSchedules: true,
    drains: moves,
    workloadNodes: moves,
    releases: moves,
    remediation: moves,
    etcdMembership: moves,
  };
}
