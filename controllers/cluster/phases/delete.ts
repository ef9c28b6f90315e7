/**
 * Phase: a cluster being deleted. Its configurations go first (NIO cleans
 * the machines up); once NIO removed them all, the claims are released,
 * NICO's Secrets deleted and the finalizer removed.
 *
 * @module
 */
import type { KubernetesCluster } from "../../../crds/kubernetescluster.ts";
import { removeFinalizer } from "../../../lib/kube/patch.ts";
import { SECRETS } from "../../../lib/kube/resources.ts";
import { KUBERNETES_CLUSTERS } from "../../../crds/kubernetescluster.ts";
import { NIXOS_CONFIGURATIONS } from "../../../core/contract/nio.ts";
import { CLUSTER_LABEL, FINALIZER } from "../../../core/contract/labels.ts";
import { listNames } from "../../../core/status/conditions.ts";
import { ownedSecretNames } from "../../../core/contract/names.ts";
import type { Machine, NixosConfiguration } from "../../../core/contract/nio.ts";
import { type ClusterRef, isOwnedBy } from "../../../core/machines/selection.ts";
import { releaseWhenDone } from "../release.ts";
import { deleteArgoCdSecret } from "./argocd.ts";
import type { ClusterContext } from "../scope.ts";
import { ownsSecret, type Secret } from "../secrets.ts";
import { postEvent } from "../../events.ts";

/**
 * What deletion is waiting for: the configurations NIO has yet to remove, then the Machines NIO is not done
 * with (both empty: the finalizer is gone).
 */
export interface DeleteOutcome {
  remaining: string[];
  /** Why Machines are not released yet (see core/machines/release.ts). */
  waiting?: string[];
}

/**
 * One step of deleting the context's cluster. Once it answers nothing remaining, the finalizer is gone and the
 * caller forgets the cluster (controllers/cluster/memory.ts).
 */
export async function reconcileDelete(c: ClusterContext, now: Date): Promise<DeleteOutcome> {
  const { deps, cluster, cache, log } = c;
  const { client, recorder } = deps;
  const ns = cluster.metadata.namespace!;
  const name = cluster.metadata.name;
  const ref: ClusterRef = { name, namespace: ns, uid: cluster.metadata.uid };
  await deleteArgoCdSecret(c, now); // Argo CD stops deploying into it first
  const ours = cache.configs.filter((cfg: NixosConfiguration) => isOwnedBy(cfg, ref));
  for (const cfg of ours) {
    if (cfg.metadata.deletionTimestamp) continue;
    if (await client.delete(NIXOS_CONFIGURATIONS, cfg.metadata.name, ns, { uid: cfg.metadata.uid! })) {
      log.info("deleted configuration", { configuration: cfg.metadata.name });
    }
  }
  if (ours.length) {
    log.info("deleting: waiting for NIO", { remaining: ours.length });
    return { remaining: ours.map((cfg) => cfg.metadata.name) };
  }

  const released: string[] = [];
  const waiting: string[] = [];
  const claimed = cache.machines.filter((m: Machine) => m.metadata.labels?.[CLUSTER_LABEL] === name);
  for (const m of claimed) {
    const r = await releaseWhenDone(c, m, now);
    if (r.released) released.push(m.metadata.name);
    if (r.waiting) waiting.push(r.waiting);
  }
  if (released.length) postEvent(recorder, cluster, "MachinesReleased", `released ${listNames(released)}`);
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
  await client.jsonPatch(KUBERNETES_CLUSTERS, name, ns, removeFinalizer(fresh.metadata.finalizers ?? [], FINALIZER));
  log.info("released every machine and removed the finalizer", { released: released.length });
  return { remaining: [] };
}
