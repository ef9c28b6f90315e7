/**
 * A child of a cluster follows it between shards: its shard label is its cluster's (core/contract/shards.ts).
 * Apart from adopt.ts so that writers of children (secrets.ts) can use it without importing a pass's scope.
 *
 * @module
 */
import { SHARD_LABEL } from "../../core/contract/labels.ts";
import { childInShard, childShardLabels } from "../../core/contract/shards.ts";
import type { KubeClient, KubeObject } from "../../lib/kube/client.ts";
import type { Resource } from "../../lib/kube/resources.ts";

/** The merge patch that gives a child its cluster's shard label (or takes it away: the default shard). */
export function shardLabelPatch(clusterLabels: Record<string, string> | undefined): unknown {
  return { metadata: { labels: { [SHARD_LABEL]: childShardLabels(clusterLabels)[SHARD_LABEL] ?? null } } };
}

/**
 * Relabels the child `obj` when its shard label is not its cluster's; answers the child as the server has it.
 * Used by adoption and by a create that found its child already there.
 */
export async function followShard<T extends KubeObject>(
  client: KubeClient,
  r: Resource,
  obj: T,
  clusterLabels: Record<string, string> | undefined,
): Promise<T> {
  if (childInShard(obj.metadata.labels, clusterLabels)) return obj;
  return await client.mergePatch<T>(r, obj.metadata.name, obj.metadata.namespace, shardLabelPatch(clusterLabels));
}
