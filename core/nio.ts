/**
 * NIO's `Machine` and `NixosConfiguration`, as NICO reads and writes them.
 * Both NIO generations share the group `nio.homystack.com/v1alpha1`; these
 * types carry the fields of both (see docs/nio-contract.md in shared docs).
 *
 * @module
 */
import type { ObjectMeta } from "../lib/kube/meta.ts";
import { resource } from "../lib/kube/resources.ts";

/** NIO's API group. */
export const NIO_GROUP = "nio.homystack.com";
/** Where NIO serves Machines. */
export const MACHINES = resource(NIO_GROUP, "v1alpha1", "Machine", "machines");
/** Where NIO serves NixosConfigurations. */
export const NIXOS_CONFIGURATIONS = resource(NIO_GROUP, "v1alpha1", "NixosConfiguration", "nixosconfigurations");

export interface NioCondition {
  type: string;
  status: "True" | "False" | "Unknown" | string;
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
  observedGeneration?: number;
}

export interface Machine {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec?: {
    /** Newer NIO. */
    host?: string;
    /** Older NIO. */
    ipAddress?: string;
    /** Older NIO. */
    hostname?: string;
    sshUser?: string;
    sshKeySecretRef?: { name: string; namespace?: string };
  };
  status?: {
    discoverable?: boolean;
    hasConfiguration?: boolean;
    appliedConfiguration?: string;
    appliedCommit?: string;
    lastAppliedTime?: string;
    observedGeneration?: number;
    conditions?: NioCondition[];
  };
}

export type AdditionalFile =
  | { path: string; valueType: "Inline"; inline: string }
  | { path: string; valueType: "SecretRef"; secretRef: { name: string; key: string } };

export interface NixosConfigurationSpec {
  machineRef: { name: string };
  gitRepo: string;
  ref?: string;
  credentialsRef?: { name: string };
  flake: string;
  onRemoveFlake: string;
  configurationSubdir?: string;
  fullInstall: boolean;
  additionalFiles: AdditionalFile[];
}

export interface NixosConfiguration {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec: NixosConfigurationSpec;
  status?: {
    /** Newer NIO: Installing, Converging, Ready, Degraded, Blocked, Removing. */
    phase?: string;
    observedGeneration?: number;
    resolvedRevision?: string;
    /** Older NIO. */
    appliedCommit?: string;
    lastAppliedTime?: string;
    message?: string;
    conditions?: NioCondition[];
  };
}

/**
 * The address NICO gives a node: `spec.host`, else `spec.ipAddress`, else `spec.hostname`.
 *
 * @example
 * ```ts
 * import { machineAddress } from "./nio.ts";
 * machineAddress({ metadata: { name: "m" }, spec: { host: "127.0.0.5" } }); // "127.0.0.5"
 * ```
 */
export function machineAddress(m: Machine): string | undefined {
  return m.spec?.host || m.spec?.ipAddress || m.spec?.hostname || undefined;
}

/**
 * The Secret holding the Machine's SSH private key, if it names one in its own namespace.
 *
 * @example
 * ```ts
 * import { machineSshKeySecret } from "./nio.ts";
 * machineSshKeySecret({ metadata: { name: "m" }, spec: { sshKeySecretRef: { name: "m-ssh" } } }); // "m-ssh"
 * ```
 */
export function machineSshKeySecret(m: Machine): string | undefined {
  const ref = m.spec?.sshKeySecretRef;
  if (!ref?.name) return undefined;
  if (ref.namespace && ref.namespace !== m.metadata.namespace) return undefined;
  return ref.name;
}

/** Key of the SSH private key inside the Machine's key Secret (newer NIO's convention). */
export const SSH_KEY_SECRET_KEY = "ssh-privatekey";

/**
 * findCondition.
 *
 * @example
 * ```ts
 * import { findCondition } from "./nio.ts";
 * findCondition([{ type: "Ready", status: "True" }], "Ready")?.status; // "True"
 * ```
 */
export function findCondition<T extends { type: string }>(conds: T[] | undefined, type: string): T | undefined {
  return conds?.find((c) => c.type === type);
}
