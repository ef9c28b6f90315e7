/**
 * The NixosConfigurations a cluster should have: one per node, with the
 * files each node receives. Pure; golden-tested.
 *
 * @module
 */
import { createHash } from "node:crypto";
import type { KubernetesClusterSpec } from "../../crds/kubernetescluster.ts";
import { clusterOwnerReference } from "../contract/owner.ts";
import { childShardLabels } from "../contract/shards.ts";
import {
  BOOTSTRAP_LABEL,
  CLUSTER_LABEL,
  CONFIGURATION_ANNOTATION,
  type Role,
  ROLE_LABEL,
  SPEC_HASH_ANNOTATION,
} from "../contract/labels.ts";
import {
  type AdditionalFile,
  type Machine,
  machineAddress,
  machineSshKeySecret,
  nioFields,
  type NioGeneration,
  type NixosConfiguration,
  type NixosConfigurationSpec,
  SSH_KEY_SECRET_KEY,
} from "../contract/nio.ts";
import { type ClusterNode, renderClusterNix } from "./clusternix.ts";
import { type DesiredRestore, ETCD_RESTORE_URL_FILE, ETCD_RESTORE_URL_KEY, restoreBlock } from "./restore.ts";
import { specHash } from "./hash.ts";

export { clusterHash, specHash } from "./hash.ts";
import { normalizeHost } from "../contract/hosts.ts";
import {
  agentTokenSecret,
  caKeySecret,
  caSecret,
  configName,
  etcdCaKeySecret,
  etcdCaSecret,
  etcdRestoreSecret,
  joinTokenSecret,
} from "../contract/names.ts";
import type { Selection } from "../machines/selection.ts";

/** Key of the token inside both token Secrets (server and agent). */
export const JOIN_TOKEN_KEY = "token";
/** The file that carries the agent token to every node. */
export const AGENT_TOKEN_FILE = "agent-token";
/** The files that carry the etcd CA NICO issued to control-plane nodes (docs/flake-contract.md). */
export const ETCD_CA_FILE = "etcd-ca.crt";
export const ETCD_CA_KEY_FILE = "etcd-ca.key";
/** The port stacked etcd serves clients on unless `spec.etcd.clientPort` says otherwise. */
export const ETCD_CLIENT_PORT = 2379;

export interface DesiredInput {
  /** `labels`: the cluster's own; its shard label is copied onto every configuration (core/contract/shards.ts). */
  cluster: {
    name: string;
    namespace: string;
    uid: string;
    spec: KubernetesClusterSpec;
    labels?: Record<string, string> | undefined;
  };
  selection: Selection;
  machines: Machine[];
  bootstrap: string;
  endpoint: { host: string; port: number };
  gitRepo: string;
  /** The name of a machine's configuration (an adopted child keeps its own); default {@link configName}. */
  nameOf?: ((machine: string) => string) | undefined;
  /** The commit to pin every node to, when NICO resolved `ref`. */
  revision?: string | undefined;
  /** Which NIO applies the configurations: where files land and which fields exist depend on it. */
  nio: NioGeneration;
  /**
   * A digest of the cluster's identity (server token, agent token, CA certificate): a new identity changes
   * every node's `cluster.nix`, so a re-key reaches every node through an ordered rollout.
   */
  identity?: string | undefined;
  /**
   * The Kubernetes version each node is asked for now (`1.31`, `1.31.4`), by machine (core/versions/chain.ts);
   * a node left out is asked for none, and its `cluster.nix` has no `kubernetesVersion`.
   */
  versions?: ReadonlyMap<string, string> | undefined;
  /**
   * NICO issued the cluster an etcd CA: control-plane nodes receive it (`etcd-ca.crt`, `etcd-ca.key`) and
   * `cluster.nix` says on which port etcd serves clients. Absent for a cluster brought up before NICO issued etcd
   * credentials: its nodes see no change.
   */
  etcd?: { clientPort: number } | undefined;
  /** A restore of etcd under way: the control-plane nodes' parts in it (core/render/restore.ts). */
  restore?: DesiredRestore | undefined;
}

/**
 * Where a file NICO sends must be written so the flake finds it next to `flake.nix`: NIO v1 writes
 * `additionalFiles` relative to the root of its checkout (and builds in `configurationSubdir`); the
 * older NIO writes them into `configurationSubdir` itself.
 *
 * @example
 * ```ts
 * import { filePath } from "./desired.ts";
 * filePath("cluster.nix", "clusters/prod/", "v1"); // "clusters/prod/cluster.nix"
 * filePath("cluster.nix", "clusters/prod", "older"); // "cluster.nix"
 * filePath("cluster.nix", undefined, "v1"); // "cluster.nix"
 * ```
 */
export function filePath(name: string, subdir: string | undefined, nio: NioGeneration): string {
  if (nio !== "v1" || !subdir) return name;
  const parts = subdir.split("/").filter((p) => p !== "" && p !== ".");
  return [...parts, name].join("/");
}

/**
 * The address of a node: its Machine's address, else its name, in canonical
 * form (trimmed, lower case, internationalised names in punycode). A value
 * that is no host at all is passed on trimmed; selection keeps such Machines
 * out of new clusters and {@link resolveEndpoint} refuses it as an endpoint.
 *
 * @example
 * ```ts
 * import { nodeAddress } from "./desired.ts";
 * nodeAddress({ metadata: { name: "cp-1" }, spec: { host: " 127.0.0.1 " } }, "cp-1"); // "127.0.0.1"
 * nodeAddress(undefined, "CP-1"); // "cp-1"
 * ```
 */
export function nodeAddress(m: Machine | undefined, name: string): string {
  const raw = (m && machineAddress(m)) ?? name;
  return normalizeHost(raw).host ?? raw.trim();
}

/**
 * Where clients reach the cluster's API: the spec's endpoint, else the
 * bootstrap node on 6443, with the host in canonical form; `error` says what
 * is wrong when the host is not usable.
 *
 * @example
 * ```ts
 * import { resolveEndpoint } from "./desired.ts";
 * import { KubernetesClusterSpec } from "../../crds/kubernetescluster.ts";
 * const spec = KubernetesClusterSpec.parse({ controlPlane: { machines: ["cp-1"] } });
 * resolveEndpoint(spec, { metadata: { name: "cp-1" }, spec: { host: "127.0.0.1" } }, "cp-1"); // { host: "127.0.0.1", port: 6443 }
 * ```
 */
export function resolveEndpoint(
  spec: KubernetesClusterSpec,
  bootstrap: Machine | undefined,
  bootstrapName: string,
): { host: string; port: number; error?: string } {
  const ep = spec.controlPlaneEndpoint;
  const raw = ep ? ep.host : (bootstrap && machineAddress(bootstrap)) ?? bootstrapName;
  const n = normalizeHost(raw);
  const where = ep ? "spec.controlPlaneEndpoint.host" : `the host of Machine ${bootstrapName} (the bootstrap node)`;
  return {
    host: n.host ?? raw.trim(),
    port: ep ? ep.port : 6443,
    ...(n.error ? { error: `${where} ${n.error}` } : {}),
  };
}

/**
 * The `cluster.nix` text for the current membership (as `machine` receives it: its `kubernetesVersion`).
 *
 * @example
 * ```ts
 * import { clusterNixFor } from "./desired.ts";
 * import { KubernetesClusterSpec } from "../../crds/kubernetescluster.ts";
 * const spec = KubernetesClusterSpec.parse({ controlPlane: { machines: ["cp-1"] } });
 * const plane = (members: string[]) => ({ members, wanted: members.length, shortfall: 0, mode: "explicit" as const, selector: "" });
 * const text = clusterNixFor({
 *   cluster: { name: "c", namespace: "ns", uid: "u1", spec },
 *   selection: { controlPlane: plane(["cp-1"]), dataPlane: plane([]), problems: [] },
 *   machines: [{ metadata: { name: "cp-1" }, spec: { host: "127.0.0.1" } }],
 *   bootstrap: "cp-1", endpoint: { host: "127.0.0.1", port: 6443 }, gitRepo: "https://127.0.0.1/nixos.git", nio: "v1",
 * });
 * text.includes('{ name = "cp-1"; address = "127.0.0.1"; }'); // true
 * ```
 */
export function clusterNixFor(input: DesiredInput, machine?: string): string {
  return clusterNixAndId(input, machine).text;
}

/** `cluster.nix` and its `configuration` id, as `machine` receives it (its version, its part in a restore). */
function clusterNixAndId(input: DesiredInput, machine: string | undefined): { text: string; id: string } {
  const byName = new Map(input.machines.map((m) => [m.metadata.name, m]));
  const node = (name: string): ClusterNode => ({ name, address: nodeAddress(byName.get(name), name) });
  const version = machine === undefined ? undefined : input.versions?.get(machine);
  const restore = machine === undefined ? undefined : restoreBlock(input.restore, machine, node(machine).address);
  const body = {
    name: input.cluster.name,
    namespace: input.cluster.namespace,
    endpoint: input.endpoint,
    bootstrapNode: input.bootstrap,
    controlPlane: [...input.selection.controlPlane.members].sort().map(node),
    workers: [...input.selection.dataPlane.members].sort().map(node),
    ...(input.etcd ? { etcd: input.etcd } : {}),
    ...(version ? { kubernetesVersion: version } : {}),
    ...(restore ? { restore } : {}),
  };
  const id = configurationId(input, renderClusterNix(body));
  return { text: renderClusterNix({ ...body, configuration: id }), id };
}

/**
 * One id for what every node of the cluster should run: `cluster.nix`'s own
 * content, the repository, commit and folder, the cluster's identity (its
 * tokens and CA, by digest) and what NICO passes to NIO. It is `cluster.nix`'s
 * `configuration`; a node that reports it on its Node (the flake contract)
 * says it runs this. A node-specific change (its own SSH key) does not move
 * it: NIO's run result covers that.
 */
export function configurationId(input: DesiredInput, clusterNixBody: string): string {
  const { spec } = input.cluster;
  // The schedule is no part of it: NICO changes it for a node's step (see NIO_PASS_THROUGH).
  const nio = input.nio === "v1" ? nioFields(spec.nio, (row) => row.identity) : {};
  const parts = {
    clusterNix: clusterNixBody,
    gitRepo: input.gitRepo,
    ref: input.revision ?? spec.ref ?? null,
    subdir: spec.configurationSubdir ?? null,
    credentials: spec.credentialsRef?.name ?? null,
    identity: input.identity ?? null,
    fullInstall: spec.fullInstall,
    machineSshKey: spec.machineSshKey,
    nio,
  };
  return createHash("sha256").update(JSON.stringify(parts)).digest("hex").slice(0, 16);
}

function nodeSpec(
  input: DesiredInput,
  machine: string,
  role: Role,
  clusterNix: string,
  m: Machine | undefined,
): NixosConfigurationSpec {
  const { spec, name } = input.cluster;
  const at = (file: string) => filePath(file, spec.configurationSubdir, input.nio);
  const secretFile = (file: string, secret: string, key: string): AdditionalFile => ({
    path: at(file),
    valueType: "SecretRef",
    secretRef: { name: secret, key },
  });
  // Workers get only what joins a worker; the server token and the CA key stay on the control plane.
  const files: AdditionalFile[] = [
    { path: at("cluster.nix"), valueType: "Inline", inline: clusterNix },
    ...(role === "control-plane" ? [secretFile("join-token", joinTokenSecret(name), JOIN_TOKEN_KEY)] : []),
    secretFile(AGENT_TOKEN_FILE, agentTokenSecret(name), JOIN_TOKEN_KEY),
  ];
  const sshSecret = spec.machineSshKey && m && machineSshKeySecret(m);
  if (sshSecret) {
    files.push(secretFile("machine-ssh-key", sshSecret, SSH_KEY_SECRET_KEY));
  }
  if (role === "control-plane") {
    files.push(
      secretFile("cluster-ca.crt", caSecret(name), "tls.crt"),
      secretFile("cluster-ca.key", caKeySecret(name), "tls.key"),
    );
    if (input.etcd) {
      files.push(
        secretFile(ETCD_CA_FILE, etcdCaSecret(name), "tls.crt"),
        secretFile(ETCD_CA_KEY_FILE, etcdCaKeySecret(name), "tls.key"),
      );
    }
    if (input.restore?.roles.get(machine) === "restore") {
      files.push(secretFile(ETCD_RESTORE_URL_FILE, etcdRestoreSecret(name), ETCD_RESTORE_URL_KEY));
    }
  }
  const ref = input.revision ?? spec.ref;
  // NIO v1's own fields only where NIO v1 runs: the older NIO's schema would prune them, and NICO would
  // then find them missing on every pass.
  const nio = input.nio === "v1" ? spec.nio : undefined;
  return {
    machineRef: { name: machine },
    gitRepo: input.gitRepo,
    ...(ref ? { ref } : {}),
    ...(spec.configurationSubdir ? { configurationSubdir: spec.configurationSubdir } : {}),
    ...(spec.credentialsRef ? { credentialsRef: { name: spec.credentialsRef.name } } : {}),
    flake: `#${machine}`,
    onRemoveFlake: "#minimal",
    // Never `false`: NIO v1 drops it when it adds its finalizer (a full update that bumps the generation).
    ...(spec.fullInstall ? { fullInstall: true } : {}),
    additionalFiles: files,
    ...nioFields(nio),
  };
}

/**
 * One NixosConfiguration per selected node, sorted by name.
 *
 * @example
 * ```ts
 * import { desiredConfigurations } from "./desired.ts";
 * import { KubernetesClusterSpec } from "../../crds/kubernetescluster.ts";
 * const spec = KubernetesClusterSpec.parse({ controlPlane: { machines: ["cp-1"] }, dataPlane: { machines: ["w-1"] } });
 * const plane = (members: string[]) => ({ members, wanted: members.length, shortfall: 0, mode: "explicit" as const, selector: "" });
 * const configs = desiredConfigurations({
 *   cluster: { name: "c", namespace: "ns", uid: "u1", spec },
 *   selection: { controlPlane: plane(["cp-1"]), dataPlane: plane(["w-1"]), problems: [] },
 *   machines: [{ metadata: { name: "cp-1" }, spec: { host: "127.0.0.1" } }, { metadata: { name: "w-1" }, spec: { host: "127.0.0.2" } }],
 *   bootstrap: "cp-1", endpoint: { host: "127.0.0.1", port: 6443 }, gitRepo: "https://127.0.0.1/nixos.git", nio: "v1",
 * });
 * configs.map((c) => c.metadata.name); // ["c.cp-1", "c.w-1"]
 * configs[1]?.spec.additionalFiles.map((f) => f.path); // ["cluster.nix", "agent-token"]
 * ```
 */
export function desiredConfigurations(input: DesiredInput): NixosConfiguration[] {
  const { cluster } = input;
  const byName = new Map(input.machines.map((m) => [m.metadata.name, m]));
  // One cluster.nix per version asked and part in a restore (nodes differ only there).
  const byKind = new Map<string, { text: string; id: string }>();
  const rendered = (machine: string) => {
    const role = input.restore?.roles.get(machine);
    const kind = `${input.versions?.get(machine) ?? ""}|${role === "restore" ? machine : role ?? ""}`;
    let r = byKind.get(kind);
    if (!r) byKind.set(kind, r = clusterNixAndId(input, machine));
    return r;
  };
  const nodes: [string, Role][] = [
    ...input.selection.controlPlane.members.map((n): [string, Role] => [n, "control-plane"]),
    ...input.selection.dataPlane.members.map((n): [string, Role] => [n, "worker"]),
  ];
  return nodes.map(([machine, role]) => {
    const { text: clusterNix, id } = rendered(machine);
    const spec = nodeSpec(input, machine, role, clusterNix, byName.get(machine));
    return {
      apiVersion: "nio.homystack.com/v1alpha1",
      kind: "NixosConfiguration",
      metadata: {
        name: input.nameOf ? input.nameOf(machine) : configName(cluster.name, machine),
        namespace: cluster.namespace,
        labels: {
          [CLUSTER_LABEL]: cluster.name,
          [ROLE_LABEL]: role,
          ...(machine === input.bootstrap ? { [BOOTSTRAP_LABEL]: "true" } : {}),
          ...childShardLabels(cluster.labels),
        },
        annotations: { [SPEC_HASH_ANNOTATION]: specHash(spec), [CONFIGURATION_ANNOTATION]: id },
        ownerReferences: [clusterOwnerReference(cluster)],
      },
      spec,
    };
  }).sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1));
}
