/**
 * A cluster's backup store, from `spec.etcd.backup.store` and the Secrets
 * it names (read from the cluster's own namespace, never another), as the
 * S3 client's options: the one place that turns the spec into a store,
 * for the controller, the CLI and restores alike
 * (controllers/cluster/backup/store.ts reads the Secrets). What is wrong
 * with them is a {@link BackupProblem} naming the field and the fix. Pure.
 *
 * @module
 */
import { BACKUP_CA_KEY, BACKUP_SECRET_KEYS, type BackupStore } from "../../crds/backup.ts";
import type { ReasonOf } from "../../crds/conditions/mod.ts";
import { decodeBase64 } from "../../lib/encoding.ts";
import type { S3ClientOptions } from "../../lib/s3/client.ts";
import { backupPrefix } from "./keys.ts";

/** What is wrong with the store, as `EtcdBackedUp=False` and a Warning Event say it. */
export interface BackupProblem {
  reason: ReasonOf<"EtcdBackedUp", "False">;
  message: string;
}

/** A store ready to use: the client's options, the bucket, the folder of the cluster's backups. */
export interface ResolvedStore {
  client: S3ClientOptions;
  bucket: string;
  prefix: string;
}

/** A Secret's `data` as the API gives it (base64 values); null: no such Secret. */
export type SecretData = Record<string, string> | null;

const FIELD = "spec.etcd.backup.store";

function value(data: Record<string, string>, key: string): string | undefined {
  const b64 = data[key];
  if (b64 === undefined) return undefined;
  try {
    const v = decodeBase64(b64).trim();
    return v === "" ? undefined : v;
  } catch {
    return undefined;
  }
}

/**
 * The store of `store` for cluster `cluster` of `namespace`, given its Secrets' data (`ca` only when it names a
 * CA Secret), or what is wrong.
 *
 * @example
 * ```ts
 * import { resolveStore } from "./store.ts";
 * const store = {
 *   endpoint: "https://s3.example.com", bucket: "etcd", region: "us-east-1", credentialsSecret: { name: "s3" },
 * };
 * const r = resolveStore(store, { namespace: "infra", cluster: "prod" }, { credentials: null });
 * "problem" in r && r.problem.reason; // "SecretNotFound"
 * ```
 */
export function resolveStore(
  store: BackupStore,
  where: { namespace: string; cluster: string },
  secrets: { credentials: SecretData; ca?: SecretData | undefined },
): { store: ResolvedStore } | { problem: BackupProblem } {
  const creds = store.credentialsSecret.name;
  if (!secrets.credentials) {
    return problem(
      "SecretNotFound",
      `${FIELD}.credentialsSecret: no Secret ${creds} in namespace ${where.namespace}` +
        `; create it there with the keys ${BACKUP_SECRET_KEYS.accessKeyId} and ${BACKUP_SECRET_KEYS.secretAccessKey}`,
    );
  }
  const accessKeyId = value(secrets.credentials, BACKUP_SECRET_KEYS.accessKeyId);
  const secretAccessKey = value(secrets.credentials, BACKUP_SECRET_KEYS.secretAccessKey);
  const missing = [
    ...(accessKeyId ? [] : [BACKUP_SECRET_KEYS.accessKeyId]),
    ...(secretAccessKey ? [] : [BACKUP_SECRET_KEYS.secretAccessKey]),
  ];
  if (missing.length) {
    return problem(
      "SecretKeysMissing",
      `${FIELD}.credentialsSecret: Secret ${creds} has no ${missing.join(" and ")}` +
        ` (or it is empty); add ${missing.length > 1 ? "them" : "it"} to the Secret`,
    );
  }
  let caPem: string | undefined;
  if (store.caSecret) {
    const name = store.caSecret.name;
    if (!secrets.ca) {
      return problem(
        "SecretNotFound",
        `${FIELD}.caSecret: no Secret ${name} in namespace ${where.namespace}` +
          `; create it there with the store's CA bundle under ${BACKUP_CA_KEY}`,
      );
    }
    caPem = value(secrets.ca, BACKUP_CA_KEY);
    if (!caPem?.includes("-----BEGIN CERTIFICATE-----")) {
      return problem(
        "SecretKeysMissing",
        `${FIELD}.caSecret: Secret ${name} has no PEM certificate under ` +
          `${BACKUP_CA_KEY}; put the store's CA bundle there`,
      );
    }
  }
  return {
    store: {
      client: {
        endpoint: store.endpoint.replace(/\/+$/, ""),
        region: store.region,
        credentials: { accessKeyId: accessKeyId!, secretAccessKey: secretAccessKey! },
        ...(caPem ? { caPem } : {}),
      },
      bucket: store.bucket,
      prefix: backupPrefix(store.prefix, where.namespace, where.cluster),
    },
  };
}

function problem(reason: BackupProblem["reason"], message: string): { problem: BackupProblem } {
  return { problem: { reason, message } };
}

/** A failure of the store or of etcd as a kind (an `S3Error`'s) and its message; other errors carry no kind. */
export interface FailureOf {
  kind?: string | undefined;
  message: string;
}

/**
 * What a failed backup or check says, naming the field of `store` to fix where the store's answer points at one.
 *
 * @example
 * ```ts
 * import { storeProblem } from "./store.ts";
 * const store = { endpoint: "https://s3.example.com", bucket: "etcd", region: "us-east-1", credentialsSecret: { name: "s3" } };
 * storeProblem(store, { kind: "no-bucket", message: "s3 HeadBucket etcd: no such bucket" }).reason; // "BucketNotFound"
 * ```
 */
export function storeProblem(store: BackupStore, f: FailureOf): BackupProblem {
  const at = `the store at ${store.endpoint}`;
  switch (f.kind) {
    case "credentials":
    case "denied":
      return {
        reason: "StoreCredentialsRefused",
        message: `${FIELD}.credentialsSecret: ${at} refuses the keys of Secret ${store.credentialsSecret.name} ` +
          `(${f.message}); put keys that may read and write bucket ${store.bucket} there`,
      };
    case "no-bucket":
      return {
        reason: "BucketNotFound",
        message: `${FIELD}.bucket: ${at} has no bucket ${store.bucket} (${f.message}); create it (NICO does not) ` +
          "or name another",
      };
    case "unreachable":
    case "timeout":
    case "redirect":
      return {
        reason: "StoreUnreachable",
        message: `${FIELD}.endpoint: ${at} cannot be used (${f.message}); check the endpoint, the region and ` +
          "the network between NICO and the store",
      };
    case "tls":
      return {
        reason: "StoreTLSRefused",
        message: `${FIELD}.caSecret: TLS with ${at} failed (${f.message}); set caSecret to a Secret whose ` +
          `${BACKUP_CA_KEY} is the CA that signed the store's certificate, or fix the endpoint's name`,
      };
    default:
      return { reason: "BackupFailed", message: f.message };
  }
}
