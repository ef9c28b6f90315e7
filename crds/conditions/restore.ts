/**
 * `Restoring`: the last restore of etcd from a backup (`spec.etcd.restore`), while it runs and how it ended.
 * Its reason is also `status.restore.reason`. Absent on a cluster that never asked for one.
 *
 * @module
 */
import { reason, type TypeSpec } from "./types.ts";

const RUNS = "a restore runs and every other change of the cluster is held";
const UNTOUCHED = "nothing was changed: the cluster is as it was; to try again, fix the cause and set a new " +
  "`spec.etcd.restore.requestId`";

export const RESTORING = {
  role: "detail",
  polarity: "negative",
  watched: true,
  about: "a restore of etcd from a backup (`spec.etcd.restore`) runs, or how the last one ended",
  reasons: {
    Resolving: reason("True", "progress", "later", `${RUNS}: NICO looks the backup up in the store`, "nothing"),
    TakingSafetySnapshot: reason(
      "True",
      "progress",
      "later",
      `${RUNS}: etcd still answers, so NICO snapshots it first (the snapshot undoes the restore)`,
      "nothing",
    ),
    RestoringBootstrap: reason(
      "True",
      "progress",
      "later",
      `${RUNS}: the bootstrap node's files carry the restore instruction; its flake downloads the backup, checks ` +
        "its SHA-256, restores it with a bumped revision and starts a cluster of one",
      "nothing; the node's NIO run shows the flake's output",
    ),
    Rejoining: reason(
      "True",
      "progress",
      "later",
      `${RUNS}: the bootstrap node answers with the restored data; the other control-plane nodes remove their old ` +
        "etcd data and rejoin, one at a time (the message names the node)",
      "nothing",
    ),
    RejoinHalted: reason(
      "True",
      "attention",
      "now",
      `${RUNS}: a control-plane node failed to rejoin the restored cluster; NICO waits for it (NIO retries its ` +
        "apply) and goes on with the next once it is a healthy member",
      "look at the node's NIO run (the message quotes it) and fix the host",
    ),
    Restored: reason(
      "False",
      "fine",
      "now",
      "the last restore succeeded: `status.restore` names the backup and the revision etcd answers with",
      "nothing",
    ),
    HealthyQuorum: reason(
      "False",
      "attention",
      "now",
      "refused: etcd has a healthy quorum, and a restore would rewind every change made since the backup",
      `to rewind anyway, set \`rewindHealthy: true\` with a new requestId; ${UNTOUCHED}`,
    ),
    BackupNotFound: reason(
      "False",
      "attention",
      "now",
      "refused: the store holds no such backup (or no successful backup at all, for `latest`)",
      `name an object \`nico backups\` lists; ${UNTOUCHED}`,
    ),
    SourceRefused: reason(
      "False",
      "attention",
      "now",
      "refused: `spec.etcd.restore.from` names no KubernetesCluster of this namespace, or one without a backup store",
      `name a cluster of this namespace whose \`spec.etcd.backup\` is set; ${UNTOUCHED}`,
    ),
    StoreUnreachable: reason(
      "False",
      "attention",
      "now",
      "failed before anything changed: the backup store did not answer (or refused NICO's credentials)",
      `see the store's error in the message; ${UNTOUCHED}`,
    ),
    SafetySnapshotFailed: reason(
      "False",
      "attention",
      "now",
      "failed before anything changed: etcd answers, but NICO could not snapshot it, so the restore could not be " +
        "undone",
      `see the error in the message; ${UNTOUCHED}`,
    ),
    BootstrapRestoreFailed: reason(
      "False",
      "attention",
      "now",
      "failed: the bootstrap node could not restore (the download failed, the URL expired, the SHA-256 did not " +
        "match, or the restore itself failed; the message quotes its NIO run). NICO took the instruction back: the " +
        "node gets its configuration of before, no other node was touched",
      "fix the cause the message names and set a new `spec.etcd.restore.requestId`",
    ),
    Cancelled: reason(
      "False",
      "attention",
      "now",
      "`spec.etcd.restore` was removed (or its requestId changed) before NICO changed any node; a restore under " +
        "way when that happens runs to its end",
      "nothing",
    ),
  },
} as const satisfies TypeSpec;
