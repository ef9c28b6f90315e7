/**
 * Which Nodes of the workload cluster NICO deletes as departed: Nodes no kubelet keeps Ready that belong to no node
 * of the cluster any more. Two kinds: the Node of a machine that left (a Machine of the namespace that is neither a
 * member nor configured), and, after a restore, a Node that came with the backup and names no machine of this
 * cluster (a restore onto other machines brings the old cluster's Nodes back; their machines are elsewhere or gone),
 * once its status is Unknown (no kubelet posts for it: one that posts NotReady is alive). A Ready Node is never
 * deleted: some kubelet still posts for it. Pure; table-tested (tests/unit/departed_test.ts).
 *
 * @module
 */
import type { NodeView } from "./workload.ts";

export interface DepartedInput {
  /** The Nodes as last seen. */
  nodes: ReadonlyMap<string, NodeView>;
  /** The cluster's member machines (of the spec's selection). */
  members: ReadonlySet<string>;
  /** Machines that have a configuration of this cluster (leaving nodes among them). */
  configured: ReadonlySet<string>;
  /** Whether a Machine of that name is in the cluster's namespace. */
  isMachine: (name: string) => boolean;
  /** When the cluster's last restore started (`status.restore.startedAt`), once it succeeded. */
  restoredFrom?: Date | undefined;
}

/** A Node to delete, and why (the Event's message). */
export interface DepartedNode {
  name: string;
  why: string;
}

/**
 * The Nodes to delete, in name order.
 *
 * @example
 * ```ts
 * import { departedNodes } from "./departed.ts";
 * const gone = { name: "old-1", ready: "Unknown" as const, cordoned: false, createdAt: new Date("2026-01-01T00:00:00Z") };
 * departedNodes({
 *   nodes: new Map([["old-1", gone]]),
 *   members: new Set(["cp-1"]),
 *   configured: new Set(["cp-1"]),
 *   isMachine: () => false,
 *   restoredFrom: new Date("2026-02-01T00:00:00Z"),
 * });
 * // [{ name: "old-1", why: "deleted Node old-1: it came with the restored backup and no machine of this cluster has that name" }]
 * ```
 */
export function departedNodes(i: DepartedInput): DepartedNode[] {
  const out: DepartedNode[] = [];
  for (const [name, view] of [...i.nodes].sort(([a], [b]) => a.localeCompare(b))) {
    if (i.members.has(name) || i.configured.has(name) || view.ready === "True") continue;
    if (i.restoredFrom && view.ready === "Unknown" && view.createdAt && view.createdAt < i.restoredFrom) {
      out.push({
        name,
        why: `deleted Node ${name}: it came with the restored backup and no machine of this cluster has that name`,
      });
    } else if (i.isMachine(name)) {
      out.push({ name, why: `deleted Node ${name}: its machine left` });
    }
  }
  return out;
}
