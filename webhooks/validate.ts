/**
 * Validation of a KubernetesCluster on CREATE and UPDATE: a pure function
 * of the object, the object before, and what the caches hold. Refusals
 * stop `kubectl apply`; warnings are printed by kubectl and let it pass.
 *
 * @module
 */
import { isDeepStrictEqual } from "node:util";
import type { ClusterRef } from "../core/machines/selection.ts";
import {
  type KubernetesCluster,
  type KubernetesClusterSpec,
  KubernetesClusterStatus,
} from "../crds/kubernetescluster.ts";
import type { Machine, NixosConfiguration } from "../core/contract/nio.ts";
import { type Findings, machineFindings, quorumWarnings } from "./machine_rules.ts";
import { canonicalHost, type HostPolicy } from "../lib/git/hosts.ts";
import {
  listProblems,
  nameProblems,
  rawProblems,
  repoProblems,
  schemaProblems,
  selectorProblems,
} from "./spec_rules.ts";
import { updateProblems } from "./update_rules.ts";
import { versionProblems } from "./version_rules.ts";
import { backupAccessProblems, backupRawProblems, type BackupSecretAccess } from "./backup_rules.ts";
import { endpointKey, endpointProblems } from "./endpoint_rules.ts";

/** Whether the requesting user may read the credentialsRef Secret, or why that is unknown. */
export type SecretAccess = { allowed: boolean; user: string } | { error: string };

/** Everything validation reads. */
export interface ValidationInput {
  operation: "CREATE" | "UPDATE";
  /** The request's namespace. */
  namespace: string;
  /** The cluster as sent (not yet trusted). */
  object: unknown;
  /** The cluster before an UPDATE. */
  oldObject?: unknown;
  machines: Machine[];
  configurations: NixosConfiguration[];
  clusters: KubernetesCluster[];
  /** The answer of the access check asked for by {@link secretToAuthorize}; absent when none was made. */
  credentialsAccess?: SecretAccess | undefined;
  /** The access checks of `spec.etcd.backup.store`'s Secrets (webhooks/backup_rules.ts), by field. */
  backupAccess?: Readonly<Record<string, { name: string; access: BackupSecretAccess }>> | undefined;
  /** The operator's default repository, so a missing gitRepo can be reported. */
  defaultGitRepo?: string | undefined;
  /** Hosts gitRepo may name (`--git-allowed-hosts`); default: public hosts only. */
  gitAllowedHosts?: HostPolicy | undefined;
  /** The clusters of any namespace naming the spec's `controlPlaneEndpoint` (endpoint_rules.ts); absent: none. */
  endpointUsers?: KubernetesCluster[] | undefined;
  /** The Machines of any namespace at the endpoint's host (endpoint_rules.ts); absent: none. */
  endpointMachines?: Machine[] | undefined;
}

/** Refusals (any refuses the request) and warnings. */
export type Verdict = Findings;

interface RawCluster {
  metadata?: { name?: unknown; uid?: unknown; deletionTimestamp?: unknown };
  spec?: unknown;
  status?: { bootstrapNode?: unknown } & Record<string, unknown>;
}

const asRaw = (o: unknown): RawCluster => (typeof o === "object" && o !== null ? o as RawCluster : {});
const str = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : undefined);

/**
 * Whether there is anything to judge: an UPDATE that leaves the spec alone
 * (metadata, finalizers) or happens during deletion always passes, so the
 * controller can never be locked out of its own objects.
 */
export function needsValidation(operation: string, object: unknown, oldObject?: unknown): boolean {
  if (operation === "CREATE") return true;
  if (operation !== "UPDATE") return false;
  const obj = asRaw(object);
  if (obj.metadata?.deletionTimestamp) return false;
  return !isDeepStrictEqual(obj.spec, asRaw(oldObject).spec);
}

interface RefFields {
  gitRepo?: unknown;
  credentialsRef?: { name?: unknown };
}

/**
 * The Secret named by `spec.credentialsRef` when the requester must be
 * allowed to read it: on CREATE, and on an UPDATE that changes
 * credentialsRef, or gitRepo while credentialsRef is set (a new gitRepo
 * sends the same Secret to another server).
 */
export function secretToAuthorize(operation: string, object: unknown, oldObject?: unknown): string | undefined {
  if (!needsValidation(operation, object, oldObject)) return undefined;
  const spec = (asRaw(object).spec ?? {}) as RefFields;
  const name = str(spec.credentialsRef?.name);
  if (!name || operation === "CREATE") return name;
  const old = (asRaw(oldObject).spec ?? {}) as RefFields;
  return str(old.credentialsRef?.name) !== name || old.gitRepo !== spec.gitRepo ? name : undefined;
}

function accessProblems(name: string, namespace: string, access: SecretAccess | undefined): string[] {
  if (access === undefined || ("allowed" in access && access.allowed)) return [];
  if ("error" in access) {
    return [
      `spec.credentialsRef.name: NICO could not check that you may read Secret ${name} (${access.error}); ` +
      "try again in a moment",
    ];
  }
  return [
    `spec.credentialsRef.name: user ${access.user} may not get Secret ${name} in namespace ${namespace}, ` +
    "so it cannot make NICO send that Secret to a Git server; ask for get access to that Secret, " +
    "or have someone who has it set spec.credentialsRef",
  ];
}

/** Validates one CREATE or UPDATE of a KubernetesCluster. */
export function validateCluster(input: ValidationInput): Verdict {
  const verdict: Verdict = { errors: [], warnings: [] };
  if (!needsValidation(input.operation, input.object, input.oldObject)) return verdict;
  const obj = asRaw(input.object);
  const name = str(obj.metadata?.name) ?? "";
  const ns = input.namespace;

  verdict.errors.push(...nameProblems(name), ...rawProblems(obj.spec, ns), ...backupRawProblems(obj.spec, ns));
  const schema = schemaProblems(obj.spec);
  if (!schema.spec) {
    verdict.errors.push(...schema.errors);
    return verdict;
  }
  const spec = schema.spec;
  verdict.errors.push(...listProblems(spec), ...selectorProblems(spec), ...repoProblems(spec, input.gitAllowedHosts));

  const uid = str(obj.metadata?.uid);
  const cluster: ClusterRef = { name, namespace: ns, ...(uid ? { uid } : {}) };
  const old = input.operation === "UPDATE" ? asRaw(input.oldObject) : undefined;
  const oldSpec: KubernetesClusterSpec | undefined = old ? schemaProblems(old.spec).spec : undefined;
  const bootstrap = str(old?.status?.bootstrapNode) ?? str(obj.status?.bootstrapNode);
  const machines = machineFindings({
    cluster,
    spec,
    oldSpec,
    bootstrap,
    machines: input.machines,
    configurations: input.configurations,
    clusters: input.clusters,
  });
  verdict.errors.push(...machines.errors);
  verdict.warnings.push(...machines.warnings);

  if (oldSpec) {
    const update = updateProblems({
      cluster,
      oldSpec,
      spec,
      bootstrap,
      machines: input.machines,
      configurations: input.configurations,
      selection: machines.selection,
    });
    verdict.errors.push(...update.errors);
    verdict.warnings.push(...update.warnings);
    const versions = versionProblems(spec, oldSpec, KubernetesClusterStatus.safeParse(old?.status).data);
    verdict.errors.push(...versions.errors);
    verdict.warnings.push(...versions.warnings);
  }

  verdict.errors.push(
    ...endpointProblems(spec, oldSpec, { namespace: ns, name }, input.endpointUsers ?? [], input.endpointMachines),
  );
  if (spec.credentialsRef) {
    verdict.errors.push(...accessProblems(spec.credentialsRef.name, ns, input.credentialsAccess));
  }
  verdict.errors.push(...backupAccessProblems(ns, input.backupAccess ?? {}));
  if (!spec.gitRepo && !input.defaultGitRepo) {
    verdict.warnings.push(
      "spec.gitRepo: not set and NICO has no default repository (--default-git-repo); the cluster stays blocked until you set spec.gitRepo",
    );
  }
  if (verdict.errors.length) {
    // Advice about a spec that is refused anyway is noise: keep only what bears on the refusal.
    const advice = new Set(quorumWarnings(spec));
    verdict.warnings = verdict.warnings.filter((w) => !advice.has(w));
  }
  return verdict;
}

/** The key and host of the endpoint the object names, for {@link ValidationInput.endpointUsers}; none: undefined. */
export function endpointOf(object: unknown): { key: string; host: string } | undefined {
  const e = (asRaw(object).spec as { controlPlaneEndpoint?: { host?: unknown; port?: unknown } } | undefined)
    ?.controlPlaneEndpoint;
  if (typeof e?.host !== "string" || !e.host) return undefined;
  const key = endpointKey({ host: e.host, port: typeof e.port === "number" ? e.port : undefined });
  return { key, host: canonicalHost(e.host) };
}
