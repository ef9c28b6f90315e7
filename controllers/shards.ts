/**
 * Clusters no shard reconciles: labelled `nico.homystack.com/shard=<name>`
 * for a shard whose leader Lease is missing or abandoned. The default
 * shard's leader looks every so often and says so in a Warning Event on
 * each such cluster (repeats join the Event's series): the cluster itself
 * shows nothing, as nobody writes its status.
 *
 * @module
 */
import { KUBERNETES_CLUSTERS, type KubernetesCluster } from "../crds/kubernetescluster.ts";
import { SHARD_LABEL } from "../core/contract/labels.ts";
import { shardLeaseName, shardNotRunning, shardOfLabels } from "../core/contract/shards.ts";
import type { EventRecorder } from "../lib/events.ts";
import type { KubeClient } from "../lib/kube/client.ts";
import { LEASES } from "../lib/kube/resources.ts";
import type { Lease } from "../lib/leader.ts";
import { errorMessage, type Logger } from "../lib/runtime/log.ts";
import { sleep } from "../lib/runtime/sleep.ts";
import { postEvent } from "./events.ts";

/** How often the default shard's leader looks for clusters of shards nobody runs. */
export const SHARD_CHECK_INTERVAL_MS = 60_000;

export interface UnownedOptions {
  client: KubeClient;
  recorder: EventRecorder;
  log: Logger;
  /** Where the shards' leader Leases are, and the base of their names. */
  leaseNamespace: string;
  leaseName: string;
  /** Only this namespace's clusters (default: all). */
  namespace?: string | undefined;
  intervalMs?: number;
  /** Told the count after each look (the `nico_clusters_unowned` gauge). */
  onCount?: ((clusters: number) => void) | undefined;
}

/** One look: a Warning Event on each cluster of a shard that no NICO runs; answers how many it found. */
export async function reportUnowned(o: UnownedOptions, now = Date.now()): Promise<number> {
  const clusters = await o.client.list<KubernetesCluster>(KUBERNETES_CLUSTERS, {
    labelSelector: SHARD_LABEL,
    ...(o.namespace ? { namespace: o.namespace } : {}),
  });
  const leases = new Map<string, Lease | undefined>();
  let found = 0;
  for (const c of clusters.items) {
    const shard = shardOfLabels(c.metadata.labels);
    if (shard === undefined || c.metadata.deletionTimestamp) continue;
    const name = shardLeaseName(o.leaseName, shard);
    if (!leases.has(name)) leases.set(name, await o.client.get<Lease>(LEASES, name, o.leaseNamespace));
    const why = shardNotRunning(leases.get(name), now);
    if (!why) continue;
    found++;
    postEvent(
      o.recorder,
      c,
      "ShardNotRunning",
      `labelled ${SHARD_LABEL}=${shard}, but no NICO runs shard ${shard} (its Lease ${o.leaseNamespace}/${name} ${why}): ` +
        `nothing reconciles this cluster; run nico run --shard ${shard} (the Helm chart's shards value), or relabel it`,
    );
  }
  return found;
}

/** Looks every `intervalMs` until `signal` aborts; a failed look is logged and tried again next time. */
export async function watchUnowned(o: UnownedOptions, signal: AbortSignal): Promise<void> {
  while (!signal.aborted) {
    try {
      const n = await reportUnowned(o);
      o.onCount?.(n);
      if (n) o.log.info("clusters of shards nobody runs", { clusters: n });
    } catch (err) {
      if (!signal.aborted) o.log.error("cannot look for clusters of shards nobody runs", { error: errorMessage(err) });
    }
    await sleep(o.intervalMs ?? SHARD_CHECK_INTERVAL_MS, signal);
  }
}
