/**
 * `spec.etcd.backup` and `status.etcd.backups`: where NICO keeps etcd
 * snapshots of the cluster (an S3-compatible store), when it takes them (a
 * schedule, before every control-plane change, on demand), how many it
 * keeps, and what it last did. Part of the `KubernetesCluster` schema;
 * docs/backups.md tells the whole story.
 *
 * @module
 */
import { z } from "zod";
import { DNS_SUBDOMAIN } from "./common.ts";
import { CronSchedule } from "./nio.ts";

/** The keys of the credentials Secret (`spec.etcd.backup.store.credentialsSecret`). */
export const BACKUP_SECRET_KEYS = { accessKeyId: "accessKeyId", secretAccessKey: "secretAccessKey" } as const;
/** The key of the CA Secret (`spec.etcd.backup.store.caSecret`): a PEM bundle. */
export const BACKUP_CA_KEY = "ca.crt";
/** Objects kept when `keep` is absent. */
export const BACKUP_KEEP_DEFAULT = 10;

const LocalSecret = (what: string) =>
  z.object({
    name: z.string().min(1).max(253).regex(DNS_SUBDOMAIN).describe(
      `Name of a Secret in the cluster's namespace ${what}.`,
    ),
  }).describe(`A Secret in the cluster's namespace (no other namespace: NICO reads no other tenant's Secrets).`);

const ENDPOINT_RULE = "^https?://[^/@\\s?#]+(/[^\\s?#]*)?$";

export const BackupStore = z.object({
  endpoint: z.string().min(1).max(1024).regex(
    new RegExp(ENDPOINT_RULE),
    "expected a URL such as https://s3.example.com",
  )
    .describe(
      "The store's S3 API, https://host[:port] (http:// only for a store on the management cluster's own host); " +
        "requests are path-style (`<endpoint>/<bucket>/<key>`).",
    )
    .meta({
      "x-kubernetes-validations": [{
        rule: `self.matches('${ENDPOINT_RULE.replaceAll("\\", "\\\\")}')`,
        message: "endpoint must be a URL such as https://s3.example.com, with no credentials, query or fragment",
      }],
    }),
  bucket: z.string().min(3).max(63).regex(/^[a-z0-9][a-z0-9.-]*[a-z0-9]$/, "expected an S3 bucket name")
    .describe("The bucket. NICO never creates it: create it first."),
  prefix: z.string().max(512).regex(/^([^/\s][^\s]*\/)?$/, "expected a relative folder ending in '/', such as prod/")
    .optional()
    .describe("Folder of the bucket the cluster's backups go into, ending in '/'. Absent: `<namespace>/<cluster>/`."),
  region: z.string().min(1).max(64).default("us-east-1")
    .describe("The region requests are signed for; us-east-1 for stores that have none."),
  credentialsSecret: LocalSecret("with the keys accessKeyId and secretAccessKey"),
  caSecret: LocalSecret("whose key ca.crt is the PEM CA bundle the store's certificate is checked against").optional()
    .describe("For a store whose certificate a private CA signed; absent: the system's roots."),
}).describe("An S3-compatible object store.");

export const BackupSpec = z.object({
  store: BackupStore,
  schedule: CronSchedule.optional()
    .describe("When NICO takes a backup (cron, UTC, as NIO's dayTwoSchedule). Absent: no scheduled backups."),
  keep: z.int().min(1).max(1000).default(BACKUP_KEEP_DEFAULT)
    .describe("How many of its backups NICO keeps under the prefix; it deletes the oldest beyond that."),
  beforeChanges: z.enum(["Required", "BestEffort"]).default("Required")
    .describe(
      "Before a control-plane change (a Kubernetes version step, a control-plane node's switch, a member removal, " +
        "a remediation) NICO takes a snapshot and waits for it. Required: when none can be taken the rollout " +
        "halts, naming the store's error. BestEffort: a failed snapshot is skipped (said in status) and the " +
        "change goes on.",
    ),
}).describe("etcd backups NICO takes itself and keeps in an S3-compatible store (docs/backups.md).");

export type BackupSpec = z.output<typeof BackupSpec>;
export type BackupStore = z.output<typeof BackupStore>;

export const BackupRecordStatus = z.object({
  key: z.string().describe("The object's key in the bucket."),
  size: z.int().min(0).describe("Bytes (the database and its 32-byte SHA-256)."),
  revision: z.string().describe("The member's revision when the snapshot began."),
  member: z.string().describe("The etcd member it was taken from (its id)."),
  time: z.string().describe("When the snapshot began, RFC 3339."),
  reason: z.string().describe("Why: schedule, pre-change, manual."),
  sha256: z.string().describe("The database's SHA-256 etcd sent, checked as it streamed."),
  seconds: z.number().min(0).optional().describe(
    "How long taking and uploading it took (backups NICO took since it started).",
  ),
}).describe("One backup in the store.");

export const BackupsStatus = z.object({
  last: BackupRecordStatus.optional().describe("The newest successful backup."),
  lastFailure: z.object({
    time: z.string().describe("When it failed, RFC 3339."),
    reason: z.string().describe("Why it was to be taken: schedule, pre-change, manual."),
    message: z.string().describe("What failed, naming the field or the store's error."),
  }).optional().describe("The last failed attempt, kept until a later one succeeds."),
  taking: z.string().optional().describe("A backup under way: why it is taken."),
  skipped: z.string().optional().describe(
    "BestEffort: the pre-change snapshot that could not be taken and was skipped, with why.",
  ),
  failures: z.int().min(0).optional().describe("Attempts that failed in a row (absent: none)."),
  since: z.string().optional().describe(
    "When NICO began keeping backups of the cluster (the first success is expected within the schedule of it).",
  ),
  request: z.string().optional().describe(
    "The last on-demand request (the nico.homystack.com/backup-request annotation) answered, success or failure.",
  ),
  requestBackup: BackupRecordStatus.optional().describe(
    "The backup that answered the request named in request (last may be a newer, scheduled one).",
  ),
  requestFailure: z.string().optional().describe("Why the backup the request named in request asked for failed."),
}).describe("What NICO last did of etcd backups (spec.etcd.backup).");

export type BackupsStatus = z.output<typeof BackupsStatus>;
