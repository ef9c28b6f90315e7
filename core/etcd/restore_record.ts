/**
 * The shapes of the restore planner (core/etcd/restore.ts): its facts, its
 * plan, and the record's moves from step to step. Pure.
 *
 * @module
 */
import {
  FINISHED_STEPS,
  type RestoreNodeStatus,
  type RestoreRequest,
  type RestoreStatus,
  type RestoreStep,
} from "../../crds/restore.ts";
import type { ReasonOf } from "../../crds/conditions/mod.ts";
import type { EventReason } from "../../crds/events.ts";

/** What a control-plane node's configuration tells its flake to do for a restore. */
export type RestoreRole = "restore" | "rejoin";

/** The reason of a restore's step (that of the `Restoring` condition). */
export type RestoreReason = ReasonOf<"Restoring">;

/** What the store answered about the backup asked for. */
export type BackupLookup =
  | { kind: "found"; key: string; sha256: string; revision?: number | undefined }
  | { kind: "missing"; message: string }
  | { kind: "unreachable"; message: string }
  | { kind: "refused"; message: string };

/** One control-plane node of the spec, as a restore sees it. */
export interface RestoreNode {
  name: string;
  /** The restore role and request its configuration on the server carries; absent: none (or no configuration). */
  role?: { role: RestoreRole; requestId: string } | undefined;
  /** A configuration of it exists. */
  configured: boolean;
  /** NIO applied the configuration it has now. */
  applied: boolean;
  /** Why NIO's last apply of that configuration failed, if it did. */
  failed?: string | undefined;
  /**
   * Its etcd member is a healthy voter of the cluster the bootstrap node's member belongs to (during a restore the
   * shell reads the member list from the bootstrap node, so an old member that still runs is not counted).
   */
  member: boolean;
}

export interface RestoreFacts {
  request: RestoreRequest | undefined;
  record: RestoreStatus | undefined;
  now: Date;
  /** The cluster was brought up once (false: a new cluster, brought up from the backup). */
  provisioned: boolean;
  /**
   * What NICO sees of etcd now: a member answers; a healthy majority of voters with a leader; and when that look was
   * taken (absent: not known).
   */
  etcd: { answers: boolean; quorum: boolean; summary: string; seenAt?: Date | undefined };
  /** The store's answer about the backup, when the shell asked it this pass. */
  backup?: BackupLookup | undefined;
  /**
   * The safety snapshot the shell took this pass (its key, and the marker key it wrote into etcd just before), or
   * why it could not.
   */
  safety?: { key: string; marker: string } | { error: string } | undefined;
  /** The request whose instruction (the presigned URL) the restore Secret holds now. */
  instruction?: string | undefined;
  /** The node that restores: the cluster's bootstrap node. */
  bootstrap: string;
  /** The control-plane nodes of the spec. */
  nodes: readonly RestoreNode[];
  /** The revision the bootstrap node's member answers with, once it answers. */
  revision?: number | undefined;
  /**
   * Whether the bootstrap node's member still holds the record's marker (undefined: not asked, or it did not
   * answer). While it does, its data is what it was before the restore, whatever NIO says of its apply.
   */
  marked?: boolean | undefined;
  /** How long the presigned URL is valid (`--restore-url-lifetime`), for the reason of a refused download. */
  urlLifetime?: number | undefined;
}

/**
 * The key NICO writes into etcd just before a restore's safety snapshot: no backup taken before it holds it, so a
 * member that answers without it restored one.
 *
 * @example
 * ```ts
 * import { restoreMarker } from "./restore_record.ts";
 * restoreMarker("rewind-1"); // "/nico.homystack.com/restore/rewind-1"
 * ```
 */
export function restoreMarker(requestId: string): string {
  return `/nico.homystack.com/restore/${requestId}`;
}

/**
 * What the shell does for the restore in this pass (at most one). `lookAgain`: etcd is to be looked at again before
 * the request is judged (the last look is older than the request).
 */
export type RestoreAct = "lookupBackup" | "safetySnapshot" | "presign" | "withdraw" | "lookAgain";

export interface RestoreEvent {
  type: "Normal" | "Warning";
  reason: EventReason;
  message: string;
}

export interface RestorePlan {
  /** `status.restore` after this pass (absent: none was ever asked for). */
  record: RestoreStatus | undefined;
  /** A restore runs: every change but what {@link roles} asks is held. */
  active: boolean;
  /** The control-plane nodes whose configuration is to carry a restore role now; any other is held as it is. */
  roles: ReadonlyMap<string, RestoreRole>;
  act?: RestoreAct | undefined;
  event?: RestoreEvent | undefined;
}

/** No node carries a restore role. */
export const NONE: ReadonlyMap<string, RestoreRole> = new Map();

/** Whether a record ended (and its request is never run again). */
export function finished(record: RestoreStatus | undefined): boolean {
  return record !== undefined && FINISHED_STEPS.includes(record.step);
}

/** The record moved to `s` (its history says when). */
export function enter(
  rec: RestoreStatus,
  s: RestoreStep,
  reason: RestoreReason,
  message: string,
  now: Date,
): RestoreStatus {
  const history = [...(rec.history ?? []), { step: s, at: now.toISOString(), message }].slice(-16);
  return { ...rec, step: s, reason, message, history };
}

/** An Event the shell posts on the cluster. */
export function event(type: RestoreEvent["type"], reason: EventReason, message: string): RestoreEvent {
  return { type, reason, message };
}

/** The restore ended: nothing held, the instruction taken back. */
export function end(
  f: RestoreFacts,
  rec: RestoreStatus,
  s: "Succeeded" | "Refused" | "Failed",
  reason: RestoreReason,
  message: string,
  nodes?: RestoreNodeStatus[],
): RestorePlan {
  const done = { ...enter(rec, s, reason, message, f.now), finishedAt: f.now.toISOString() };
  const record = nodes ? { ...done, nodes } : done;
  const type = s === "Succeeded" ? "Normal" : "Warning";
  const what = s === "Succeeded" ? "RestoreSucceeded" : s === "Refused" ? "RestoreRefused" : "RestoreFailed";
  return {
    record,
    active: false,
    roles: NONE,
    act: "withdraw",
    event: event(type, what, `restore ${rec.requestId}: ${message}`),
  };
}
