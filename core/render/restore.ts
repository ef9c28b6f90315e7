/**
 * A restore of etcd in the nodes' configurations (docs/cluster-nix.md#restore): the `restore` block of a
 * control-plane node's `cluster.nix`, and the Secret-backed file that carries the presigned URL of the backup to
 * the bootstrap node alone. Pure.
 *
 * @module
 */
import type { ClusterNixRestore } from "./clusternix.ts";

/** The file that carries the presigned URL of the backup to the node that restores (a Secret, never inline). */
export const ETCD_RESTORE_URL_FILE = "etcd-restore-url";
/** Key of the URL in the restore Secret. */
export const ETCD_RESTORE_URL_KEY = "url";
/** The peer port of stacked etcd on each control-plane node's address (the flake contract; k3s and kubeadm's). */
export const ETCD_PEER_PORT = 2380;

/** What a restore under way asks of the nodes' configurations (from the restore planner's plan and record). */
export interface DesiredRestore {
  requestId: string;
  backup: string;
  sha256: string;
  /** The nodes that carry a role now; every other node carries none. */
  roles: ReadonlyMap<string, "restore" | "rejoin">;
}

/**
 * The peer URL of a member on `address` (IPv6 in brackets).
 *
 * @example
 * ```ts
 * import { peerUrl } from "./restore.ts";
 * peerUrl("127.0.0.1"); // "https://127.0.0.1:2380"
 * peerUrl("::1"); // "https://[::1]:2380"
 * ```
 */
export function peerUrl(address: string): string {
  return `https://${address.includes(":") ? `[${address}]` : address}:${ETCD_PEER_PORT}`;
}

/**
 * The `restore` block of `machine`'s `cluster.nix` (undefined: it carries none). The node that restores learns
 * the restored cluster's members: itself alone, at its address.
 *
 * @example
 * ```ts
 * import { restoreBlock } from "./restore.ts";
 * const r = { requestId: "r1", backup: "c/b.db", sha256: "00", roles: new Map([["cp-1", "restore" as const]]) };
 * restoreBlock(r, "cp-1", "127.0.0.1")?.members; // [{ name: "cp-1", peerURL: "https://127.0.0.1:2380" }]
 * restoreBlock(r, "cp-2", "127.0.0.2"); // undefined
 * ```
 */
export function restoreBlock(
  r: DesiredRestore | undefined,
  machine: string,
  address: string,
): ClusterNixRestore | undefined {
  const role = r?.roles.get(machine);
  if (!r || !role) return undefined;
  const block = { id: r.requestId, role, backup: r.backup, sha256: r.sha256 };
  return role === "restore" ? { ...block, members: [{ name: machine, peerURL: peerUrl(address) }] } : block;
}
