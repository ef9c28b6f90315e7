/**
 * The shards check of a scale run (`--shards S`): read back from the API server, independently of NICO's own
 * figures, whether every Machine is booked once and every cluster was reconciled by the shard its label names.
 *
 * @module
 */
import type { KubernetesCluster } from "../../crds/kubernetescluster.ts";
import { KUBERNETES_CLUSTERS } from "../../crds/kubernetescluster.ts";
import type { KubeClient } from "../../lib/kube/client.ts";
import { EVENTS } from "../../lib/kube/resources.ts";
import { MACHINES, NIXOS_CONFIGURATIONS } from "../../core/contract/nio.ts";
import type { Machine, NixosConfiguration } from "../../core/contract/nio.ts";
import { CLUSTER_LABEL, SHARD_LABEL } from "../../core/contract/labels.ts";
import { DEFAULT_SHARD } from "../../core/contract/shards.ts";

export interface ShardFigures {
  shards: number;
  clusters: number;
  /** Clusters per shard, by status.shard (the shard that last reconciled each). */
  clustersByShard: Record<string, number>;
  /** Clusters whose status.shard is not the shard their label names (or that no shard has written). */
  misplaced: string[];
  /** Machines targeted by configurations of more than one cluster, or claimed by one cluster and targeted for another. */
  doubleBooked: string[];
  machinesClaimed: number;
  /** ShardChanged Events: a cluster reconciled by one shard, then by another. */
  shardChangedEvents: number;
}

/** Reads the namespaces `nss` and answers the figures; `shards` is the run's number of NICO processes. */
export async function checkShards(bench: KubeClient, nss: Set<string>, shards: number): Promise<ShardFigures> {
  const clusters: KubernetesCluster[] = [];
  const machines: Machine[] = [];
  const configs: NixosConfiguration[] = [];
  let shardChangedEvents = 0;
  for (const namespace of nss) {
    clusters.push(...(await bench.list<KubernetesCluster>(KUBERNETES_CLUSTERS, { namespace })).items);
    machines.push(...(await bench.list<Machine>(MACHINES, { namespace })).items);
    configs.push(...(await bench.list<NixosConfiguration>(NIXOS_CONFIGURATIONS, { namespace })).items);
    const events = await bench.list(EVENTS, { namespace });
    shardChangedEvents += events.items.filter((e) => (e as { reason?: string }).reason === "ShardChanged").length;
  }
  const clustersByShard: Record<string, number> = {};
  const misplaced: string[] = [];
  for (const c of clusters) {
    const key = `${c.metadata?.namespace}/${c.metadata?.name}`;
    const wanted = c.metadata?.labels?.[SHARD_LABEL] ?? DEFAULT_SHARD;
    const wrote = c.status?.observedGeneration ? c.status.shard ?? DEFAULT_SHARD : undefined;
    clustersByShard[wrote ?? "(none)"] = (clustersByShard[wrote ?? "(none)"] ?? 0) + 1;
    if (wrote !== wanted) misplaced.push(key);
  }
  const targets = new Map<string, Set<string>>();
  for (const cfg of configs) {
    const key = `${cfg.metadata?.namespace}/${cfg.spec.machineRef.name}`;
    const set = targets.get(key) ?? new Set();
    set.add(cfg.metadata?.labels?.[CLUSTER_LABEL] ?? "(unlabelled)");
    targets.set(key, set);
  }
  const doubleBooked: string[] = [];
  let machinesClaimed = 0;
  for (const m of machines) {
    const key = `${m.metadata?.namespace}/${m.metadata?.name}`;
    const claim = m.metadata?.labels?.[CLUSTER_LABEL];
    if (claim) machinesClaimed++;
    const t = targets.get(key);
    if (t && (t.size > 1 || (claim !== undefined && !t.has(claim)))) doubleBooked.push(key);
  }
  return {
    shards,
    clusters: clusters.length,
    clustersByShard,
    misplaced,
    doubleBooked,
    machinesClaimed,
    shardChangedEvents,
  };
}
