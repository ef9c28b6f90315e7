/**
 * The cluster's identity (CA, CA key, join token) is made once. Whether NICO
 * may still make it is a question of evidence: once any node has applied a
 * configuration, or a kubeconfig was issued, the running cluster trusts the
 * existing identity, and a missing Secret must be restored, not replaced.
 * Pure.
 *
 * @module
 */
import { findCondition, type Machine, type NixosConfiguration } from "../contract/nio.ts";

/**
 * NIO reports that it applied this configuration at least once (any NIO generation).
 *
 * @example
 * ```ts
 * import { everApplied } from "./identity.ts";
 * const spec = { machineRef: { name: "w-1" }, gitRepo: "https://127.0.0.1/nixos.git", flake: "#w-1", onRemoveFlake: "#minimal", fullInstall: false, additionalFiles: [] };
 * everApplied({ metadata: { name: "c.w-1" }, spec }); // false
 * everApplied({ metadata: { name: "c.w-1" }, spec, status: { conditions: [{ type: "Applied", status: "True" }] } }); // true
 * ```
 */
export function everApplied(cfg: NixosConfiguration): boolean {
  const s = cfg.status;
  if (!s) return false;
  return Boolean(
    s.resolvedRevision || s.appliedCommit || s.lastAppliedTime || s.phase === "Ready" ||
      findCondition(s.conditions, "Applied")?.status === "True",
  );
}

export interface BootstrapEvidence {
  /** The cluster's own NixosConfigurations. */
  owned: NixosConfiguration[];
  /** Machines of the namespace (their write-back names a configuration). */
  machines: Machine[];
  /** The kubeconfig Secret exists. */
  kubeconfigIssued: boolean;
}

/**
 * Whether the cluster has been brought up, so that its identity must never
 * change by accident.
 *
 * @example
 * ```ts
 * import { wasBootstrapped } from "./identity.ts";
 * wasBootstrapped({ owned: [], machines: [], kubeconfigIssued: false }); // false
 * wasBootstrapped({ owned: [], machines: [], kubeconfigIssued: true }); // true
 * ```
 */
export function wasBootstrapped(e: BootstrapEvidence): boolean {
  if (e.kubeconfigIssued || e.owned.some(everApplied)) return true;
  const names = new Set(e.owned.map((c) => c.metadata.name));
  return e.machines.some((m) => m.status?.hasConfiguration && names.has(m.status.appliedConfiguration ?? ""));
}

/**
 * What to tell the user when identity Secrets are missing from a cluster that runs.
 *
 * @example
 * ```ts
 * import { identityLostMessage } from "./identity.ts";
 * identityLostMessage(["c-ca"], "nico.homystack.com/regenerate-identity").split(";")[0]; // "Secret c-ca of a running cluster is missing"
 * ```
 */
export function identityLostMessage(missing: string[], annotation: string): string {
  return `Secret${missing.length > 1 ? "s" : ""} ${missing.join(", ")} of a running cluster ` +
    `${missing.length > 1 ? "are" : "is"} missing; NICO will not replace ${missing.length > 1 ? "them" : "it"}, ` +
    "because the nodes trust the existing identity. Restore from a backup (kubectl apply -f <saved Secret>), " +
    `or to re-key deliberately (every node gets a new identity) annotate the cluster ${annotation}=true`;
}

/** The reason a kubeconfig is re-issued when a re-key request finds the identity intact. */
export const REKEY_KUBECONFIG_REASON = "re-key requested";

/**
 * The answer to a re-key request (`annotation=true`) on a cluster whose identity is intact: what NICO kept and
 * why, what it rotated (the admin kubeconfig, when it could issue one: `reissued.previousExpiry` is when the client
 * certificate it replaced expires, null when unreadable, absent when there was none), and how to rotate the rest by
 * hand.
 *
 * @example
 * ```ts
 * import { identityKeptMessage } from "./identity.ts";
 * identityKeptMessage("nico.homystack.com/regenerate-identity", "c", undefined).split(":")[0];
 * // "nico.homystack.com/regenerate-identity=true found the identity intact"
 * ```
 */
export function identityKeptMessage(
  annotation: string,
  cluster: string,
  reissued: { previousExpiry?: Date | null } | undefined,
): string {
  const until = reissued?.previousExpiry
    ? `until ${reissued.previousExpiry.toISOString().slice(0, 10)}`
    : "until it expires";
  const rotated = !reissued
    ? "has issued no kubeconfig yet, so there is nothing of NICO's own to rotate"
    : reissued.previousExpiry === undefined
    ? `issued the admin kubeconfig (${cluster}-kubeconfig)`
    : `issued a new admin kubeconfig (${cluster}-kubeconfig: a new client key and certificate); the previous ` +
      `certificate stays valid ${until}, as Kubernetes cannot revoke a client certificate (only a new CA would)`;
  return `${annotation}=true found the identity intact: kept the server token (${cluster}-join-token: k3s encrypts ` +
    `its bootstrap data with it, so it must never change), the agent token (${cluster}-agent-token), the cluster ` +
    `CA (${cluster}-ca) and the etcd CA (${cluster}-etcd-ca, where there is one): every node trusts them, and a new ` +
    "one rolled out node by node leaves the nodes on the old and the new one unable to trust each other; NICO makes " +
    `those only when they are lost. It ${rotated}. To rotate a ` +
    "token or the CA by hand, follow your distribution's own procedure on the nodes first, then put the new value " +
    "into its Secret: NICO rolls it out node by node as any change (docs/troubleshooting.md, IdentityKept)";
}
