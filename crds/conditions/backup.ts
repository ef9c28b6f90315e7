/**
 * `EtcdBackedUp`: whether NICO keeps etcd backups as `spec.etcd.backup`
 * asks (written only while it is set): the last one succeeded, one is under
 * way, or why none can be taken, naming the field or the store's error.
 *
 * @module
 */
import { reason, type TypeSpec } from "./types.ts";

const FIX_STORE = "fix the field the message names (docs/backups.md); NICO tries again at once when the spec or " +
  "the Secret changes, otherwise at the next schedule or change";

export const ETCD_BACKED_UP = {
  role: "detail",
  polarity: "positive",
  watched: false,
  about: "the last etcd backup NICO took to the store of `spec.etcd.backup` succeeded (written only while it is set)",
  reasons: {
    BackedUp: reason(
      "True",
      "fine",
      "later",
      "the last backup succeeded; `status.etcd.backups.last` names its object, size, revision, member and hash",
      "nothing",
    ),
    BackupInProgress: reason(
      "Unknown",
      "progress",
      "later",
      "no backup was taken yet (or none since NICO started and the store was listed): one is under way, or the " +
        "store is being checked",
      "nothing",
    ),
    NoBackupYet: reason(
      "Unknown",
      "progress",
      "later",
      "the store answers but holds no backup of the cluster yet, and none is due (no schedule, no change)",
      "nothing; `nico backup <cluster>` takes one now",
    ),
    SecretNotFound: reason(
      "False",
      "attention",
      "now",
      "a Secret `spec.etcd.backup.store` names (credentialsSecret, caSecret) is not in the cluster's namespace",
      "create it in the cluster's namespace, or name the right one",
    ),
    SecretKeysMissing: reason(
      "False",
      "attention",
      "now",
      "the credentials Secret lacks `accessKeyId` or `secretAccessKey`, or the CA Secret lacks `ca.crt`",
      "add the keys the message names",
    ),
    StoreCredentialsRefused: reason(
      "False",
      "attention",
      "now",
      "the store refuses the access key or its secret (unknown key, wrong secret, or denied)",
      "put working keys in the credentials Secret",
    ),
    BucketNotFound: reason("False", "attention", "now", "the store has no such bucket", FIX_STORE),
    StoreUnreachable: reason(
      "False",
      "attention",
      "now",
      "the store does not answer (refused, no route, a name that does not resolve, no answer in time, a redirect)",
      "check `spec.etcd.backup.store.endpoint` and the network between NICO and the store",
    ),
    StoreTLSRefused: reason(
      "False",
      "attention",
      "now",
      "the TLS handshake with the store failed: its certificate is not signed by a trusted CA or does not carry " +
        "the endpoint's name",
      "set `spec.etcd.backup.store.caSecret` to a Secret whose `ca.crt` is the store's CA, or fix the endpoint",
    ),
    BackupFailed: reason(
      "False",
      "attention",
      "now",
      "a backup failed for another reason (the store failed mid-upload, etcd's stream broke or its hash did not " +
        "match, no healthy member); nothing was counted and no half-written object was left",
      "read the message; NICO tries again at the next schedule or change",
    ),
  },
} as const satisfies TypeSpec;
