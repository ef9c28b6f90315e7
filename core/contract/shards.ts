/**
 * Shards: which NICO replica set reconciles which KubernetesClusters. A
 * cluster labelled `nico.homystack.com/shard=<name>` belongs to the NICO run
 * with `--shard <name>`; a cluster without the label belongs to the default
 * shard (a NICO run without `--shard`), so no cluster is left to none. Each
 * shard elects its own leader on a Lease of its own. A cluster's children
 * (its NixosConfigurations and NICO's Secrets) carry its shard label too, so
 * each shard caches only its own. Machines are not sharded: a shard must see
 * the free pool, and a claim is a label on the Machine, written atomically,
 * so two shards can never both book one Machine.
 *
 * @module
 */
import { SHARD_LABEL } from "./labels.ts";

/** The name `--shard` takes for the default shard (as does no `--shard` at all). */
export const DEFAULT_SHARD = "default";

/** A shard name: a DNS label, so it is a valid label value and a valid Lease name suffix. */
export const SHARD_NAME_PATTERN = /^[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?$/;

/** The named shard of `--shard` (undefined: the default shard, also for `--shard default`). */
export function namedShard(flag: string | undefined): string | undefined {
  return flag === undefined || flag === "" || flag === DEFAULT_SHARD ? undefined : flag;
}

/**
 * The label selector of the clusters a shard reconciles: those labelled with its name, or (default shard) those
 * without the label.
 *
 * @example
 * ```ts
 * import { shardSelector } from "./shards.ts";
 * shardSelector("edge-1"); // "nico.homystack.com/shard=edge-1"
 * shardSelector(undefined); // "!nico.homystack.com/shard"
 * ```
 */
export function shardSelector(shard: string | undefined): string {
  return shard === undefined ? `!${SHARD_LABEL}` : `${SHARD_LABEL}=${shard}`;
}

/**
 * The selector of the configurations and Secrets a shard caches in full: its own clusters' children, which carry
 * their cluster's shard label ({@link childShardLabels}); `base` (another selector, e.g. the cluster label) is
 * ANDed with it.
 *
 * @example
 * ```ts
 * import { shardChildSelector } from "./shards.ts";
 * shardChildSelector("edge-1", "nico.homystack.com/cluster"); // "nico.homystack.com/cluster,nico.homystack.com/shard=edge-1"
 * shardChildSelector(undefined); // "!nico.homystack.com/shard"
 * ```
 */
export function shardChildSelector(shard: string | undefined, base?: string): string {
  return base ? `${base},${shardSelector(shard)}` : shardSelector(shard);
}

/**
 * The selector of every object a shard's {@link shardSelector} leaves out: the other shards' (and, for a named
 * shard, the unlabelled ones). The two together select every object once.
 *
 * @example
 * ```ts
 * import { otherShardsSelector } from "./shards.ts";
 * otherShardsSelector("edge-1"); // "nico.homystack.com/shard!=edge-1"
 * otherShardsSelector(undefined); // "nico.homystack.com/shard"
 * ```
 */
export function otherShardsSelector(shard: string | undefined): string {
  return shard === undefined ? SHARD_LABEL : `${SHARD_LABEL}!=${shard}`;
}

/**
 * The shard label a cluster's children carry: their cluster's, so a shard's caches can select its own children;
 * none for a cluster of the default shard.
 *
 * @example
 * ```ts
 * import { childShardLabels } from "./shards.ts";
 * childShardLabels({ "nico.homystack.com/shard": "edge-1" }); // { "nico.homystack.com/shard": "edge-1" }
 * childShardLabels({}); // {}
 * ```
 */
export function childShardLabels(clusterLabels: Record<string, string> | undefined): Record<string, string> {
  const shard = shardOfLabels(clusterLabels);
  return shard === undefined ? {} : { [SHARD_LABEL]: shard };
}

/**
 * Whether a child's labels put it in the shard its cluster's labels name (a child of a moved cluster does not until
 * it is relabelled).
 */
export function childInShard(
  childLabels: Record<string, string> | undefined,
  clusterLabels: Record<string, string> | undefined,
): boolean {
  return childLabels?.[SHARD_LABEL] === childShardLabels(clusterLabels)[SHARD_LABEL];
}

/** What {@link mayHoldStrays} judges a cluster by, on its first pass in a replica. */
export interface StrayInput {
  /** The shard this replica runs (undefined: the default shard). */
  shard: string | undefined;
  /** Whether the cluster has a status (no shard wrote one: it has no children, or they were made with its label). */
  hasStatus: boolean;
  /** The shard that wrote its status last (`status.shard`). */
  statusShard: string | undefined;
  /** The Machines its status names, both planes. */
  statusMachines: number;
  /** Its configurations this replica's cache holds. */
  cachedConfigs: number;
}

/**
 * Whether a cluster may have children this shard's caches do not hold (labelled for another shard, or made before
 * NICO labelled children with the shard): it moved here (its status was written by another shard), or its status
 * names more Machines than the cache holds configurations of it. NICO then reads its children by the cluster label
 * once and relabels them before a pass (controllers/cluster/adopt.ts).
 *
 * @example
 * ```ts
 * import { mayHoldStrays } from "./shards.ts";
 * mayHoldStrays({ shard: "b", hasStatus: true, statusShard: "a", statusMachines: 3, cachedConfigs: 0 }); // true
 * mayHoldStrays({ shard: "b", hasStatus: true, statusShard: "b", statusMachines: 3, cachedConfigs: 3 }); // false
 * ```
 */
export function mayHoldStrays(i: StrayInput): boolean {
  if (!i.hasStatus) return false;
  return i.statusShard !== i.shard || i.statusMachines > i.cachedConfigs;
}

/**
 * The leader Lease of a shard: the default shard keeps the base name (an unsharded NICO upgrades without a second
 * leader), a named shard appends its name.
 *
 * @example
 * ```ts
 * import { shardLeaseName } from "./shards.ts";
 * shardLeaseName("nico-leader", "edge-1"); // "nico-leader-edge-1"
 * shardLeaseName("nico-leader", undefined); // "nico-leader"
 * ```
 */
export function shardLeaseName(base: string, shard: string | undefined): string {
  return shard === undefined ? base : `${base}-${shard}`;
}

/** The shard a cluster's labels send it to (undefined: the default shard). */
export function shardOfLabels(labels: Record<string, string> | undefined): string | undefined {
  return namedShard(labels?.[SHARD_LABEL]);
}

/**
 * What is wrong with a cluster's shard label, for admission (undefined: nothing). `default` is refused: the default
 * shard takes clusters without the label, and no selector can also match `default`.
 */
export function shardLabelProblem(labels: Record<string, string> | undefined): string | undefined {
  const v = labels?.[SHARD_LABEL];
  if (v === undefined) return undefined;
  if (v === DEFAULT_SHARD || v === "") {
    return `metadata.labels[${SHARD_LABEL}]: to put a cluster in the default shard remove the label (got ${
      JSON.stringify(v)
    })`;
  }
  if (!SHARD_NAME_PATTERN.test(v)) {
    return `metadata.labels[${SHARD_LABEL}]: ${
      JSON.stringify(v)
    } is not a shard name (lower-case letters, digits and '-', ` +
      `at most 40, starting and ending with a letter or digit)`;
  }
  return undefined;
}

/** The parts of a leader Lease that say whether its shard runs. */
export interface ShardLease {
  spec?: { holderIdentity?: string; renewTime?: string; leaseDurationSeconds?: number };
}

/**
 * Why no NICO runs a shard, judged from its leader Lease (undefined: one does). A Lease not renewed for four lease
 * durations (clock skew between replicas is forgiven that much) is held by a replica that is gone.
 *
 * @example
 * ```ts
 * import { shardNotRunning } from "./shards.ts";
 * shardNotRunning(undefined, 0); // "does not exist"
 * ```
 */
export function shardNotRunning(lease: ShardLease | undefined, nowMs: number): string | undefined {
  if (!lease) return "does not exist";
  const spec = lease.spec ?? {};
  if (!spec.holderIdentity) return "is held by no replica";
  const renewed = spec.renewTime ? Date.parse(spec.renewTime) : NaN;
  const staleAfterMs = 4 * (spec.leaseDurationSeconds ?? 15) * 1000;
  if (!(nowMs - renewed <= staleAfterMs)) {
    return `was last renewed by ${spec.holderIdentity} at ${spec.renewTime ?? "(never)"}`;
  }
  return undefined;
}

/** The shards each listed namespace may use (`--namespace-shards`); a namespace not listed may use any. */
export type NamespaceShards = ReadonlyMap<string, ReadonlySet<string>>;

/**
 * Parses `--namespace-shards`: comma-separated `namespace:shard` pairs (a namespace may appear more than once).
 * Throws naming a bad entry.
 *
 * @example
 * ```ts
 * import { parseNamespaceShards } from "./shards.ts";
 * const m = parseNamespaceShards("team-a:edge-1, team-a:edge-2,team-b:edge-3");
 * [...m.get("team-a")!]; // ["edge-1", "edge-2"]
 * ```
 */
export function parseNamespaceShards(text: string): NamespaceShards {
  const out = new Map<string, Set<string>>();
  for (const entry of text.split(",").map((e) => e.trim()).filter((e) => e !== "")) {
    const [ns = "", shard = "", extra] = entry.split(":");
    if (extra !== undefined || !/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(ns) || !SHARD_NAME_PATTERN.test(shard)) {
      throw new Error(`${entry} is not namespace:shard`);
    }
    out.set(ns, (out.get(ns) ?? new Set()).add(shard));
  }
  return out;
}

/**
 * Why a cluster of `namespace` may not carry shard label `labels` under the operator's `allowed` map, or
 * `undefined`. The default shard (no label) is always allowed: removing the label is a way back.
 */
export function namespaceShardProblem(
  namespace: string,
  labels: Record<string, string> | undefined,
  allowed: NamespaceShards | undefined,
): string | undefined {
  const shard = labels?.[SHARD_LABEL];
  const mine = allowed?.get(namespace);
  if (shard === undefined || !mine || mine.has(shard)) return undefined;
  return `metadata.labels[${SHARD_LABEL}]: namespace ${namespace} may use the shards ${
    [...mine].join(", ")
  } (and the default, without the label), not ${shard}; the operator lists them in --namespace-shards`;
}
