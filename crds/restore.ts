/**
 * `spec.etcd.restore` and `status.restore`: a one-shot request to bring the
 * cluster's etcd back from a backup, and what became of it (part of the
 * `KubernetesCluster` schema; the steps are planned in core/etcd/restore.ts,
 * the runbook is docs/recovery.md).
 *
 * @module
 */
import { z } from "zod";
import { DNS_SUBDOMAIN } from "./common.ts";

/** The word that asks for the newest successful backup instead of a named object. */
export const LATEST_BACKUP = "latest";

/** A request id: a DNS label, so it can name a marker file on the hosts as it is. */
export const REQUEST_ID = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** An object key as a restore may name it: the characters S3 calls safe, no `..`, no leading `/`. */
export const BACKUP_KEY = /^[A-Za-z0-9!_.*'()=+-][A-Za-z0-9!_.*'()=+/-]*$/;

export const RestoreRequest = z.object({
  requestId: z.string().min(1).max(63).regex(REQUEST_ID, "expected a DNS label such as restore-1").describe(
    "Names this request (a DNS label). A new value asks for a new restore; a request NICO finished " +
      "(status.restore.requestId, whatever its outcome) never runs again, so the field can stay in Git.",
  ),
  backup: z.string().min(1).max(1024).regex(BACKUP_KEY, "expected an object key as nico backups lists it, or latest")
    .default(LATEST_BACKUP).describe(
      "The backup to restore: its object key in the store (as `nico backups` and status.etcd.backups name it), " +
        "or `latest`, the newest successful one.",
    ).meta({
      "x-kubernetes-validations": [{ rule: "!self.contains('..')", message: "backup must not contain '..'" }],
    }),
  rewindHealthy: z.boolean().default(false).describe(
    "Restore even though etcd has a healthy quorum, rewinding every change made since the backup. Off: NICO " +
      "refuses a restore while a healthy majority of members answers.",
  ),
  from: z.string().min(1).max(253).regex(DNS_SUBDOMAIN).optional().describe(
    "Another KubernetesCluster in this namespace whose backup store (spec.etcd.backup) holds the backup; absent: " +
      "this cluster's own. How a new cluster is brought up on other Machines from an old cluster's backup.",
  ),
}).describe(
  "A one-shot restore of etcd from a backup (docs/recovery.md): NICO takes a safety snapshot where etcd still " +
    "answers, holds every other change, restores the bootstrap node and has the other control-plane nodes rejoin " +
    "one at a time. A new cluster created with it is brought up from the backup.",
);

export type RestoreRequest = z.output<typeof RestoreRequest>;

/** The steps of a restore, in order, then how it ended. */
export const RestoreStep = z.enum([
  "Resolving",
  "SafetySnapshot",
  "Restoring",
  "Rejoining",
  "Succeeded",
  "Refused",
  "Failed",
]);
export type RestoreStep = z.output<typeof RestoreStep>;

/** The steps a restore ends in. */
export const FINISHED_STEPS: readonly RestoreStep[] = ["Succeeded", "Refused", "Failed"];

export const RestoreNodeState = z.enum(["Waiting", "Restoring", "Restored", "Rejoining", "Rejoined", "Failed"]);
export type RestoreNodeState = z.output<typeof RestoreNodeState>;

export const RestoreNodeStatus = z.object({
  name: z.string().describe("A control-plane Machine."),
  state: RestoreNodeState.describe(
    "Waiting (its turn has not come), Restoring (the bootstrap node restores the backup), Restored, Rejoining " +
      "(its old etcd data removed, it joins the restored cluster), Rejoined, or Failed.",
  ),
  message: z.string().optional().describe("What it waits for, or why it failed."),
}).describe("One control-plane node in a restore.");

export const RestoreHistoryEntry = z.object({
  step: RestoreStep.describe("The step it entered."),
  at: z.string().describe("When the restore entered the step, RFC 3339.").meta({ format: "date-time" }),
  message: z.string().describe("What happened."),
}).describe("One step a restore went through.");

export const RestoreStatus = z.object({
  requestId: z.string().describe("spec.etcd.restore.requestId of the restore this is about."),
  step: RestoreStep.describe(
    "Where it is: Resolving (finding the backup), SafetySnapshot, Restoring (the bootstrap node), Rejoining (the " +
      "other control-plane nodes, one at a time); or how it ended: Succeeded, Refused (nothing was touched) or " +
      "Failed (the message says what was left as it was).",
  ),
  reason: z.string().describe("CamelCase reason of the step, for programs."),
  message: z.string().describe("What is happening, or why it ended so, for people."),
  from: z.string().optional().describe("The cluster whose store holds the backup (this one when absent)."),
  backup: z.string().optional().describe("The object key of the backup, once found."),
  sha256: z.string().optional().describe(
    "The backup's SHA-256 as NICO recorded it: that of the etcd database, the object but its last 32 bytes (which " +
      "hold the same hash, as etcd appends it); the node that restores must find it at download.",
  ),
  backupRevision: z.int().min(0).optional().describe("The etcd revision the backup was taken at."),
  revision: z.int().min(0).optional().describe(
    "The revision etcd answers with once restored (bumped past the backup's, so watchers never go back).",
  ),
  safetySnapshot: z.string().optional().describe(
    "The object key of the snapshot NICO took before touching anything: restore it to undo this restore.",
  ),
  marker: z.string().optional().describe(
    "The etcd key NICO wrote just before its safety snapshot: the bootstrap node counts as restored only once its " +
      "member answers without it (its data is then the backup's, not what it held before).",
  ),
  startedAt: z.string().describe("When NICO took the request, RFC 3339.").meta({ format: "date-time" }),
  finishedAt: z.string().optional().describe("When it ended, RFC 3339.").meta({ format: "date-time" }),
  nodes: z.array(RestoreNodeStatus).optional().describe("The control-plane nodes, in the order they go."),
  history: z.array(RestoreHistoryEntry).max(16).optional().describe("The steps it went through, oldest first."),
}).describe(
  "The last restore NICO took (spec.etcd.restore): kept here, and not in status.etcd, because status.etcd is " +
    "absent while NICO cannot see etcd, which is when a restore runs.",
);

export type RestoreStatus = z.output<typeof RestoreStatus>;
export type RestoreNodeStatus = z.output<typeof RestoreNodeStatus>;
