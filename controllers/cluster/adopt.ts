/**
 * Children that follow their cluster between shards. Each shard caches in
 * full only its own clusters' NixosConfigurations and Secrets, selected by the
 * shard label NICO puts on them (core/contract/shards.ts). A cluster
 * relabelled into this shard arrives with children labelled for the shard it
 * left, which this shard's caches do not hold: a pass reading them would find
 * them missing, and create a configuration again, or stop with
 * `IdentityLost` for a Secret. So before a pass over a cluster that may have
 * such children (on its first pass in this replica: one moved here, or whose
 * status names more Machines than the cache holds configurations of, as after
 * an upgrade from a NICO that did not label them; at any time: one of its
 * configurations is in the other shards' cache), NICO reads its children once
 * by the cluster label (a narrowed read, not cached), relabels those it owns
 * that carry another shard's label, and starts the pass only once its caches
 * hold every one of them; until then it looks again soon (each relabel's
 * event wakes the cluster too). A child the old shard's last pass writes
 * after that is found by the create that conflicts with it (phases/apply.ts,
 * secrets.ts `createOnce`), read by name and relabelled there.
 *
 * @module
 */
import { NIXOS_CONFIGURATIONS } from "../../core/contract/nio.ts";
import type { NixosConfiguration } from "../../core/contract/nio.ts";
import { CLUSTER_LABEL } from "../../core/contract/labels.ts";
import { isOwnedBy } from "../../core/contract/owner.ts";
import { childInShard, mayHoldStrays } from "../../core/contract/shards.ts";
import type { KubeObject } from "../../lib/kube/client.ts";
import { type Resource, SECRETS } from "../../lib/kube/resources.ts";
import { followShard } from "./follow.ts";
import { BY_OWNER } from "./indexes.ts";
import type { ClusterContext } from "./scope.ts";
import type { Secret } from "../../lib/kube/meta.ts";

/** How soon to look again while the caches have not seen the relabelled children yet. */
export const ADOPT_REQUEUE_MS = 500;

/** The caches adoption checks. */
export interface AdoptCaches {
  configs: { get(namespace: string | undefined, name: string): NixosConfiguration | undefined };
  secrets: { get(namespace: string | undefined, name: string): Secret | undefined };
  /** The other shards' configurations (trimmed), indexed by controller uid: a stray child of ours shows there. */
  others?: { byIndex(name: string, value: string): unknown[] } | undefined;
}

/** Whether the cluster must adopt its children before this pass (see the module). */
function needed(x: ClusterContext, caches: AdoptCaches): boolean {
  const { cluster, memory } = x;
  const ns = cluster.metadata.namespace!;
  if (cluster.metadata.uid && (caches.others?.byIndex(BY_OWNER, cluster.metadata.uid).length ?? 0) > 0) return true;
  if (memory.adopted) return false;
  const ref = { name: cluster.metadata.name, namespace: ns, uid: cluster.metadata.uid };
  const status = cluster.status;
  const judged = mayHoldStrays({
    shard: x.deps.shard,
    hasStatus: status !== undefined,
    statusShard: status?.shard,
    statusMachines: new Set([...status?.controlPlane?.machines ?? [], ...status?.dataPlane?.machines ?? []]).size,
    cachedConfigs: x.cache.configs.filter((c) => isOwnedBy(c, ref)).length,
  });
  if (!judged) memory.adopted = true;
  return judged;
}

/**
 * Adopts the cluster's children into this shard when it may have strays (see the module): answers how soon to look
 * again when the caches do not hold them all yet, undefined when the pass may go on.
 */
export async function adoptChildren(x: ClusterContext, caches: AdoptCaches): Promise<number | undefined> {
  if (!needed(x, caches)) return undefined;
  const { cluster, log } = x;
  const client = x.deps.client;
  const ns = cluster.metadata.namespace!;
  const ref = { name: cluster.metadata.name, namespace: ns, uid: cluster.metadata.uid };
  const labelSelector = `${CLUSTER_LABEL}=${cluster.metadata.name}`;
  const kinds: [Resource, { get(ns: string, name: string): KubeObject | undefined }][] = [
    [NIXOS_CONFIGURATIONS, caches.configs],
    [SECRETS, caches.secrets],
  ];
  let relabelled = 0;
  let unseen = 0;
  for (const [r, cache] of kinds) {
    const { items } = await client.list<KubeObject>(r, { namespace: ns, labelSelector });
    for (const child of items.filter((o) => ref.uid !== undefined && isOwnedBy(o, ref as Required<typeof ref>))) {
      if (!childInShard(child.metadata.labels, cluster.metadata.labels)) {
        await followShard(client, r, child, cluster.metadata.labels);
        relabelled++;
      }
      if (cache.get(ns, child.metadata.name)?.metadata.uid !== child.metadata.uid) unseen++;
    }
  }
  if (relabelled) log.info("children relabelled for this shard", { relabelled, shard: x.deps.shard ?? "default" });
  if (unseen) return ADOPT_REQUEUE_MS;
  x.memory.adopted = true;
  return undefined;
}
