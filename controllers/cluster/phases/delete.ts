/**
 * Phase: a cluster being deleted. Its configurations go first (NIO cleans
 * the machines up); once NIO removed them all, the claims are released,
 * NICO's Secrets deleted and the finalizer removed.
 *
 * @module
 */
import type { KubernetesCluster } from "../../../crds/kubernetescluster.ts";
import { SECRETS } from "../../../lib/kube/resources.ts";
import { KUBERNETES_CLUSTERS } from "../../../crds/kubernetescluster.ts";
import { NIXOS_CONFIGURATIONS } from "../../../core/contract/nio.ts";
import { CLUSTER_LABEL, FINALIZER } from "../../../core/contract/labels.ts";
import { listNames } from "../../../core/status/conditions.ts";
import { ownedSecretNames } from "../../../core/contract/names.ts";
import type { Machine, NixosConfiguration } from "../../../core/contract/nio.ts";
import { type ClusterRef, isOwnedBy } from "../../../core/machines/selection.ts";
import type { Logger } from "../../../lib/runtime/log.ts";
import { releaseWhenDone } from "../release.ts";
import type { ClusterCache, ClusterDeps } from "../scope.ts";
import { ownsSecret, type Secret } from "../secrets.ts";

/**
 * What deletion is waiting for: the configurations NIO has yet to remove, then the Machines NIO is not done
 * with (both empty: the finalizer is gone).
 */
export interface DeleteOutcome {
  remaining: string[];
  /** Why Machines are not released yet (see core/machines/release.ts). */
  waiting?: string[];
}

/** One step of deleting `cluster`. */
export async function reconcileDelete(
  deps: ClusterDeps,
  cluster: KubernetesCluster,
  cache: ClusterCache,
  log: Logger,
): Promise<DeleteOutcome> {
  const { client, recorder } = deps;
  const ns = cluster.metadata.namespace!;
  const name = cluster.metadata.name;
  const ref: ClusterRef = { name, namespace: ns, uid: cluster.metadata.uid };
  const ours = cache.configs.filter((c: NixosConfiguration) => isOwnedBy(c, ref));
  for (const c of ours) {
    if (c.metadata.deletionTimestamp) continue;
    if (await client.delete(NIXOS_CONFIGURATIONS, c.metadata.name, ns, { uid: c.metadata.uid! })) {
      log.info("deleted configuration", { configuration: c.metadata.name });
    }
  }
  if (ours.length) {
    log.info("deleting: waiting for NIO", { remaining: ours.length });
    return { remaining: ours.map((c) => c.metadata.name) };
  }

  const released: string[] = [];
  const waiting: string[] = [];
  const claimed = cache.machines.filter((m: Machine) => m.metadata.labels?.[CLUSTER_LABEL] === name);
  for (const m of claimed) {
    const r = await releaseWhenDone(deps, cluster, cache, m, new Date(), log);
    if (r.released) released.push(m.metadata.name);
    if (r.waiting) waiting.push(r.waiting);
  }
  if (released.length) recorder.post(cluster, "Normal", "MachinesReleased", `released ${listNames(released)}`);
  if (waiting.length) {
    log.info("deleting: waiting for NIO to be done with Machines", { machines: waiting.length });
    return { remaining: [], waiting };
  }

  for (const secretName of ownedSecretNames(name)) {
    const s = cache.secret(secretName) ?? await client.get<Secret>(SECRETS, secretName, ns);
    if (s && ownsSecret(s, cluster)) await client.delete(SECRETS, secretName, ns, { uid: s.metadata.uid! });
  }

  const fresh = await client.get<KubernetesCluster>(KUBERNETES_CLUSTERS, name, ns);
  if (!fresh) return { remaining: [] };
  const finalizers = fresh.metadata.finalizers ?? [];
  await client.jsonPatch(KUBERNETES_CLUSTERS, name, ns, [
    { op: "test", path: "/metadata/finalizers", value: finalizers },
    { op: "replace", path: "/metadata/finalizers", value: finalizers.filter((f) => f !== FINALIZER) },
  ]);
  deps.revisionTracker?.release(`${ns}/${name}`);
  log.info("released every machine and removed the finalizer", { released: released.length });
  return { remaining: [] };
}
