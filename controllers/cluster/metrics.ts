/**
 * The cluster gauges, set from the cache at scrape time: `nico_clusters` by
 * phase (every phase starts at zero, so a dashboard sees `Updating` even
 * when no cluster is updating), `nico_nodes` by cluster, plane and state,
 * `nico_cluster_condition` (one series per condition a cluster carries) and
 * `nico_cluster_kubeconfig_expiry_timestamp_seconds`. Every label is bounded:
 * clusters, planes, and the condition types and reasons of the registry
 * (crds/conditions/); never a node, a message or an error.
 *
 * @module
 */
import { type KubernetesCluster, PHASES } from "../../crds/kubernetescluster.ts";
import { reasonSpec, typeSpec } from "../../crds/conditions/mod.ts";
import { kubeconfigSecret } from "../../core/contract/names.ts";
import { readKubeconfig } from "../../core/render/kubeconfig.ts";
import type { Metrics } from "../../lib/metrics.ts";
import { certInfo } from "../../lib/pki.ts";
import { scheduleIntervalSeconds } from "../../core/backup/state.ts";
import { type Secret, secretValue } from "./secrets.ts";

/** The reason label of a reason the registry does not list for its type and status (an older NICO's). */
export const UNREGISTERED_REASON = "Unregistered";

/** When a cluster's kubeconfig client certificate expires, in Unix seconds; undefined: no readable one. */
export type KubeconfigExpiry = (cluster: KubernetesCluster) => number | undefined;

/** Sets the cluster gauges from `clusters`; `expiry` answers each one's kubeconfig expiry (absent: none is set). */
export function observeClusters(metrics: Metrics, clusters: KubernetesCluster[], expiry?: KubeconfigExpiry): void {
  metrics.clusters.reset();
  metrics.nodes.reset();
  metrics.clusterCondition.reset();
  metrics.kubeconfigExpiry.reset();
  for (const g of BACKUP_GAUGES) metrics[g].reset();
  for (const phase of PHASES) metrics.clusters.set({ phase }, 0);
  for (const c of clusters) {
    metrics.clusters.inc({ phase: c.status?.phase ?? "Provisioning" });
    const base = { namespace: c.metadata.namespace ?? "", cluster: c.metadata.name };
    for (const plane of ["controlPlane", "dataPlane"] as const) {
      const p = c.status?.[plane];
      if (!p) continue;
      metrics.nodes.set({ ...base, plane, state: "ready" }, p.ready);
      metrics.nodes.set({ ...base, plane, state: "not_ready" }, p.total - p.ready);
    }
    for (const cond of c.status?.conditions ?? []) {
      if (!typeSpec(cond.type)) continue;
      const reason = reasonSpec(cond.type, cond.status, cond.reason) ? cond.reason : UNREGISTERED_REASON;
      metrics.clusterCondition.set({ ...base, type: cond.type, status: cond.status, reason }, 1);
    }
    const at = expiry?.(c);
    if (at !== undefined) metrics.kubeconfigExpiry.set(base, at);
    observeBackups(metrics, c, base);
  }
}

const BACKUP_GAUGES = [
  "backupLastSuccess",
  "backupSince",
  "backupInterval",
  "backupDuration",
  "backupBytes",
  "backupFailures",
] as const;

/** The backup gauges of one cluster, from `spec.etcd.backup` and `status.etcd.backups` (labelled by cluster only). */
function observeBackups(metrics: Metrics, c: KubernetesCluster, base: { namespace: string; cluster: string }): void {
  const spec = c.spec?.etcd?.backup;
  const b = c.status?.etcd?.backups;
  if (!spec || !b) return;
  const seconds = (t: string | undefined) => (t ? Date.parse(t) / 1000 : NaN);
  const last = seconds(b.last?.time);
  if (!isNaN(last)) metrics.backupLastSuccess.set(base, last);
  if (!isNaN(seconds(b.since))) metrics.backupSince.set(base, seconds(b.since));
  const interval = spec.schedule ? scheduleIntervalSeconds(spec.schedule, new Date()) : undefined;
  if (interval !== undefined) metrics.backupInterval.set(base, interval);
  if (b.last?.seconds !== undefined) metrics.backupDuration.set(base, b.last.seconds);
  if (b.last) metrics.backupBytes.set(base, b.last.size);
  metrics.backupFailures.set(base, b.failures ?? 0);
}

/**
 * The expiry of each cluster's `<cluster>-kubeconfig` client certificate, from the Secrets `lookup` finds (the
 * informer's cache). A certificate is read once per version of its Secret; Secrets of clusters no longer asked
 * about are forgotten on the next call of {@link KubeconfigExpiries.prune}.
 *
 * @example
 * ```ts
 * import { KubeconfigExpiries } from "./metrics.ts";
 * const expiries = new KubeconfigExpiries(() => undefined);
 * expiries.of({ metadata: { name: "prod", namespace: "infra" } } as never); // undefined: no Secret yet
 * ```
 */
export class KubeconfigExpiries {
  readonly #lookup: (namespace: string, name: string) => Secret | undefined;
  readonly #known = new Map<string, { version: string; at: number | undefined }>();
  #asked = new Set<string>();

  constructor(lookup: (namespace: string, name: string) => Secret | undefined) {
    this.#lookup = lookup;
  }

  /** The expiry of `cluster`'s kubeconfig client certificate (Unix seconds); undefined when none can be read. */
  of(cluster: KubernetesCluster): number | undefined {
    const ns = cluster.metadata.namespace ?? "";
    const secret = this.#lookup(ns, kubeconfigSecret(cluster.metadata.name));
    const key = `${ns}/${cluster.metadata.name}`;
    this.#asked.add(key);
    if (!secret) return undefined;
    const version = `${secret.metadata.uid ?? ""}/${secret.metadata.resourceVersion ?? ""}`;
    const known = this.#known.get(key);
    if (known?.version === version) return known.at;
    const at = notAfterSeconds(secretValue(secret, "value"));
    this.#known.set(key, { version, at });
    return at;
  }

  /** Forgets the clusters not asked about since the last prune. */
  prune(): void {
    for (const key of this.#known.keys()) if (!this.#asked.has(key)) this.#known.delete(key);
    this.#asked = new Set();
  }
}

function notAfterSeconds(kubeconfig: string | undefined): number | undefined {
  const kc = kubeconfig === undefined ? undefined : readKubeconfig(kubeconfig);
  if (!kc) return undefined;
  try {
    return Math.floor(certInfo(kc.certPem).notAfter.getTime() / 1000);
  } catch {
    return undefined;
  }
}
