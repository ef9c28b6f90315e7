/**
 * Admission rules of `spec.etcd.backup` that need more than the schema: the
 * Secrets it names are read by NICO and their keys sent to the store, so the
 * requester must be allowed to read them (as for `credentialsRef`), and they
 * are in the cluster's namespace only (a `namespace` field is refused, not
 * silently dropped). Pure.
 *
 * @module
 */
import { isRecord } from "../lib/encoding.ts";

/** Whether the requesting user may read a Secret, or why that is unknown (as webhooks/validate.ts has it). */
export type BackupSecretAccess = { allowed: boolean; user: string } | { error: string };

const FIELD = "spec.etcd.backup.store";
const REFS = ["credentialsSecret", "caSecret"] as const;

function storeOf(o: unknown): Record<string, unknown> | undefined {
  const spec = isRecord(o) ? o.spec : undefined;
  const etcd = isRecord(spec) ? spec.etcd : undefined;
  const backup = isRecord(etcd) ? etcd.backup : undefined;
  return isRecord(backup) && isRecord(backup.store) ? backup.store : undefined;
}

const nameOf = (ref: unknown) => (isRecord(ref) && typeof ref.name === "string" && ref.name ? ref.name : undefined);

/**
 * The Secrets of `spec.etcd.backup.store` the requester must be allowed to read, by field: all of them on CREATE, or
 * when the endpoint or bucket changes (their keys would go to another store); otherwise those whose name changes.
 *
 * @example
 * ```ts
 * import { backupSecretsToAuthorize } from "./backup_rules.ts";
 * const c = (name: string) => ({ spec: { etcd: { backup: { store: { endpoint: "https://s3", credentialsSecret: { name } } } } } });
 * backupSecretsToAuthorize("UPDATE", c("b"), c("a")); // { credentialsSecret: "b" }
 * backupSecretsToAuthorize("UPDATE", c("a"), c("a")); // {}
 * ```
 */
export function backupSecretsToAuthorize(
  operation: string,
  object: unknown,
  oldObject?: unknown,
): Record<string, string> {
  const store = storeOf(object);
  if (!store) return {};
  const old = operation === "UPDATE" ? storeOf(oldObject) : undefined;
  const moved = !old || old.endpoint !== store.endpoint || old.bucket !== store.bucket;
  const out: Record<string, string> = {};
  for (const field of REFS) {
    const name = nameOf(store[field]);
    if (name && (moved || nameOf(old?.[field]) !== name)) out[field] = name;
  }
  return out;
}

/** Refusals for the Secrets the requester may not read (or whose access could not be checked), by field. */
export function backupAccessProblems(
  namespace: string,
  access: Readonly<Record<string, { name: string; access: BackupSecretAccess }>>,
): string[] {
  return Object.entries(access).flatMap(([field, { name, access: a }]) => {
    if ("allowed" in a && a.allowed) return [];
    if ("error" in a) {
      return [`${FIELD}.${field}.name: NICO could not check that you may read Secret ${name} (${a.error}); try again`];
    }
    return [
      `${FIELD}.${field}.name: user ${a.user} may not get Secret ${name} in namespace ${namespace}, so it cannot ` +
      "make NICO send that Secret to a store; ask for get access to it, or have someone who has it set the field",
    ];
  });
}

/** A `namespace` on the store's Secret references: refused (the schema would drop it; the Secret must be here). */
export function backupRawProblems(spec: unknown, namespace: string): string[] {
  const store = storeOf({ spec });
  if (!store) return [];
  return REFS.flatMap((field) => {
    const ref = store[field];
    if (!isRecord(ref) || !("namespace" in ref)) return [];
    return [
      `${FIELD}.${field}.namespace: there is no namespace field: the Secret must be in the cluster's namespace ` +
      `${namespace}; copy it there and remove ${field}.namespace`,
    ];
  });
}
