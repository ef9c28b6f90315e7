/**
 * NIO's `Machine` and `NixosConfiguration`, as NICO reads and writes them.
 * Both NIO generations share the group `nio.homystack.com/v1alpha1`; these
 * types carry the fields of both (see docs/nio-contract.md in shared docs).
 *
 * @module
 */
import type { ObjectMeta } from "../../lib/kube/meta.ts";
import { resource } from "../../lib/kube/resources.ts";

/** NIO's API group. */
export const NIO_GROUP = "nio.homystack.com";
/** Where NIO serves Machines. */
export const MACHINES = resource(NIO_GROUP, "v1alpha1", "Machine", "machines");
/** Where NIO serves NixosConfigurations. */
export const NIXOS_CONFIGURATIONS = resource(NIO_GROUP, "v1alpha1", "NixosConfiguration", "nixosconfigurations");
/** NIO v1 only: one-shot workloads; NICO reads the decommission runs (`onRemoveFlake`) among them. */
export const NIX_JOBS = resource(NIO_GROUP, "v1alpha1", "NixJob", "nixjobs");
/** NIO v1 only: recurring workloads; a node's day-two runs come from `<configuration>-day2`. */
export const NIX_CRON_JOBS = resource(NIO_GROUP, "v1alpha1", "NixCronJob", "nixcronjobs");
/** The batch Jobs NIO v1's runs are. */
export const JOBS = resource("batch", "v1", "Job", "jobs");

/**
 * Which NIO NICO talks to. `v1`: the Go NIO (v1.0.0 and later), which converges a host through
 * NixCronJob runs; `older`: the Python NIO, which applies over SSH and writes an `Applied` condition.
 */
export type NioGeneration = "v1" | "older";

/** NIO v1's labels on the children of a NixosConfiguration (decommission NixJobs among them). */
export const NIO_CONFIG_LABEL = `${NIO_GROUP}/config`;
export const NIO_MACHINE_LABEL = `${NIO_GROUP}/machine`;
export const NIO_OPERATION_LABEL = `${NIO_GROUP}/operation`;
/** NIO v1's label on every object its workloads make (`managedLabels`): the kind of workload that made it. */
export const NIO_WORKLOAD_KIND_LABEL = `${NIO_GROUP}/workload-kind`;
/**
 * The label selector of NIO v1's day-two runs: the Jobs of NixCronJobs, one-off and scheduled alike (a
 * scheduled run's labels are its Pod template's, which the API server copies onto a Job made without labels).
 */
export const NIO_RUN_SELECTOR = `${NIO_WORKLOAD_KIND_LABEL}=NixCronJob`;
/** The value of {@link NIO_OPERATION_LABEL} on the NixJob that applies `onRemoveFlake`. */
export const NIO_DECOMMISSION = "decommission";
/** NIO v1's default `dayTwoSchedule`. */
export const NIO_DEFAULT_SCHEDULE = "*/30 * * * *";

/**
 * The NixCronJob NIO v1 makes for a configuration's day-two runs (its batch CronJob has the same name).
 *
 * @example
 * ```ts
 * import { dayTwoName } from "./nio.ts";
 * dayTwoName("prod.w-1"); // "prod.w-1-day2"
 * ```
 */
export function dayTwoName(configuration: string): string {
  return `${configuration}-day2`;
}

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

/** NIO v1's `jobTemplate`: what the run Pods get (passed through as written). */
export interface NioJobTemplate {
  image?: string;
  nodeSelector?: Record<string, string>;
  tolerations?: Record<string, unknown>[];
  resources?: Record<string, unknown>;
  serviceAccountName?: string;
}

export interface NixosConfigurationSpec {
  machineRef: { name: string };
  gitRepo: string;
  ref?: string;
  credentialsRef?: { name: string };
  flake: string;
  onRemoveFlake: string;
  configurationSubdir?: string;
  /** Written only when `true`: NIO v1 drops a `false` (and bumps the generation) when it adds its finalizer. */
  fullInstall?: boolean;
  additionalFiles: AdditionalFile[];
  /** NIO v1: cron schedule of the node's day-two runs (NIO's default `*\/30 * * * *`). */
  dayTwoSchedule?: string;
  /** NIO v1: the run Pods' image, placement and resources. */
  jobTemplate?: NioJobTemplate;
  /** NIO v1: a NixStore (binary cache) for the runs. */
  storeRef?: { name: string };
  /** NIO v1: a NixBuilder (remote builder) for the runs. */
  builderRef?: { name: string };
}

/** NIO v1's fields NICO passes through from `spec.nio` (crds/nio.ts), by name. */
export type NioPassThroughField = "dayTwoSchedule" | "jobTemplate" | "storeRef" | "builderRef";

/** How one `spec.nio` setting reaches each node's NixosConfiguration. */
export interface NioPassThrough<K extends NioPassThroughField> {
  /** The value written into the configuration's spec, from the one in `spec.nio` (a copy: never shared). */
  render(v: NonNullable<NixosConfigurationSpec[K]>): NonNullable<NixosConfigurationSpec[K]>;
  /**
   * A hand edit of it is repaired (core/render/drift.ts). Not `dayTwoSchedule`: NICO itself gives the node it
   * updates `* * * * *` for its step (core/nodes/runs.ts), and puts the resting one back once the node ran.
   */
  repaired: boolean;
  /** It is part of the configuration's identity (core/render/desired.ts configurationId); not the schedule. */
  identity: boolean;
}

/**
 * The NIO pass-through as one table: every `spec.nio` setting, the configuration field it becomes, and how drift
 * repair and the identity treat it. Rendering, drift repair, the identity and the NIO generation test all derive
 * from it; a unit test fails on a `spec.nio` key without a row, or one the simulated NIO's CRD lacks. A new NIO v1
 * field: its schema (crds/nio.ts), its type and row here, the simulator's CRD (testing/nio-crds.yaml).
 */
export const NIO_PASS_THROUGH: { readonly [K in NioPassThroughField]: NioPassThrough<K> } = {
  dayTwoSchedule: { render: (v) => v, repaired: false, identity: false },
  jobTemplate: { render: (v) => structuredClone(v), repaired: true, identity: true },
  storeRef: { render: (v) => ({ name: v.name }), repaired: true, identity: true },
  builderRef: { render: (v) => ({ name: v.name }), repaired: true, identity: true },
};

/** The `spec.nio` settings a configuration carries, rendered by {@link NIO_PASS_THROUGH}; none without them. */
export function nioFields(
  nio: { readonly [K in NioPassThroughField]?: unknown } | undefined,
  which: (row: NioPassThrough<NioPassThroughField>) => boolean = () => true,
): Pick<NixosConfigurationSpec, NioPassThroughField> {
  const out: Record<string, unknown> = {};
  for (const [k, row] of Object.entries(NIO_PASS_THROUGH) as [NioPassThroughField, NioPassThrough<never>][]) {
    const v = nio?.[k];
    if (v !== undefined && v !== null && which(row)) out[k] = row.render(v as never);
  }
  return out as Pick<NixosConfigurationSpec, NioPassThroughField>;
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

/** The NixosConfiguration CRD NIO installs; its schema tells the generations apart. */
export const NIXOS_CONFIGURATION_CRD = `nixosconfigurations.${NIO_GROUP}`;

/**
 * The NIO generation a NixosConfiguration CRD belongs to: NIO v1's schema has
 * fields the older one lacks (those of {@link NIO_PASS_THROUGH}: `dayTwoSchedule`,
 * `jobTemplate`, `storeRef`, `builderRef`). `undefined` when the object is not that CRD.
 *
 * @example
 * ```ts
 * import { nioGenerationOfCrd } from "./nio.ts";
 * const crd = (spec: Record<string, unknown>) => ({
 *   metadata: { name: "nixosconfigurations.nio.homystack.com" },
 *   spec: { versions: [{ name: "v1alpha1", schema: { openAPIV3Schema: { properties: { spec: { properties: spec } } } } }] },
 * });
 * nioGenerationOfCrd(crd({ gitRepo: {}, dayTwoSchedule: {} })); // "v1"
 * nioGenerationOfCrd(crd({ gitRepo: {} })); // "older"
 * ```
 */
export function nioGenerationOfCrd(crd: unknown): NioGeneration | undefined {
  const c = crd as {
    metadata?: { name?: string };
    spec?: { versions?: { name?: string; schema?: { openAPIV3Schema?: { properties?: Record<string, unknown> } } }[] };
  };
  if (c?.metadata?.name !== NIXOS_CONFIGURATION_CRD) return undefined;
  const version = c.spec?.versions?.find((v) => v.name === "v1alpha1");
  const spec = version?.schema?.openAPIV3Schema?.properties?.spec as
    | { properties?: Record<string, unknown> }
    | undefined;
  if (!spec?.properties) return undefined;
  const v1Only = Object.keys(NIO_PASS_THROUGH);
  return v1Only.some((f) => f in spec.properties!) ? "v1" : "older";
}

/** A NIO v1 NixJob that applies a removed configuration's `onRemoveFlake` (the parts NICO reads). */
export interface DecommissionJob {
  metadata: ObjectMeta;
  status?: { phase?: string; succeeded?: number; failed?: number; activeJob?: string };
}
