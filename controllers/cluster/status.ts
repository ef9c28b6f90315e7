/**
 * Writing a cluster's status through the subresource, only when it changed.
 *
 * @module
 */
import { isDeepStrictEqual } from "node:util";
import type { KubernetesCluster, KubernetesClusterStatus } from "../../crds/kubernetescluster.ts";
import type { KubeClient } from "../../lib/kube/client.ts";
import { isNotFound } from "../../lib/kube/errors.ts";
import { KUBERNETES_CLUSTERS } from "../../crds/kubernetescluster.ts";
import { errorMessage } from "../../lib/runtime/log.ts";

/**
 * Merge-patches `status` when it differs from what `cluster` carries; fields
 * it lacks are removed. Answers the resourceVersion the write produced
 * (undefined when nothing was written).
 */
export async function writeStatus(
  client: KubeClient,
  cluster: KubernetesCluster,
  status: KubernetesClusterStatus,
): Promise<string | undefined> {
  if (isDeepStrictEqual(stripUndefined(status), stripUndefined(cluster.status ?? {}))) return undefined;
  const nulls: Record<string, null> = {};
  for (const k of Object.keys(cluster.status ?? {})) if (!(k in status)) nulls[k] = null;
  try {
    const written = await client.mergePatch<KubernetesCluster>(
      KUBERNETES_CLUSTERS,
      cluster.metadata.name,
      cluster.metadata.namespace,
      { status: { ...nulls, ...status } },
      "status",
    );
    return written.metadata.resourceVersion;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw new Error(`Cannot write status: ${errorMessage(err)}`, { cause: err });
  }
}

function stripUndefined<T>(v: T): T {
  return JSON.parse(JSON.stringify(v));
}
