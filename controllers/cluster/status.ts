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

/** Merge-patches `status` when it differs from what `cluster` carries; fields it lacks are removed. */
export async function writeStatus(
  client: KubeClient,
  cluster: KubernetesCluster,
  status: KubernetesClusterStatus,
): Promise<void> {
  if (isDeepStrictEqual(stripUndefined(status), stripUndefined(cluster.status ?? {}))) return;
  const nulls: Record<string, null> = {};
  for (const k of Object.keys(cluster.status ?? {})) if (!(k in status)) nulls[k] = null;
  try {
    await client.mergePatch(
      KUBERNETES_CLUSTERS,
      cluster.metadata.name,
      cluster.metadata.namespace,
      { status: { ...nulls, ...status } },
      "status",
    );
  } catch (err) {
    if (isNotFound(err)) return;
    throw new Error(`Cannot write status: ${errorMessage(err)}`, { cause: err });
  }
}

function stripUndefined<T>(v: T): T {
  return JSON.parse(JSON.stringify(v));
}
