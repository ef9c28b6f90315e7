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

/** The labels of a child with its cluster's shard label (without one, for the default shard); others' kept. */
export function withClusterShard(
  labels: Record<string, string> | undefined,
  clusterLabels: Record<string, string> | undefined,
): Record<string, string> {
  const out = { ...labels };
  const shard = childShardLabels(clusterLabels)[SHARD_LABEL];
  if (shard === undefined) delete out[SHARD_LABEL];
  else out[SHARD_LABEL] = shard;
  return out;
}

/**
 * Relabels the child `obj` when its shard label is not its cluster's; answers the child as the server has it. An
 * update of the object as read (the verb NICO already has on its children; a conflict is a race, looked at again).
 * Used by adoption and by a create that found its child already there.
 */
export async function followShard<T extends KubeObject>(
  client: KubeClient,
  r: Resource,
  obj: T,
  clusterLabels: Record<string, string> | undefined,
): Promise<T> {
  if (childInShard(obj.metadata.labels, clusterLabels)) return obj;
  const { status: _status, ...rest } = obj as T & { status?: unknown };
  const { managedFields: _mf, ...metadata } = obj.metadata as T["metadata"] & { managedFields?: unknown };
  const labels = withClusterShard(obj.metadata.labels, clusterLabels);
  return await client.replace<T>(r, { ...rest, metadata: { ...metadata, labels } } as T);
}
