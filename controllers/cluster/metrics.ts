/**
 * The cluster gauges, set from the cache at scrape time: `nico_clusters` by
 * phase (every phase starts at zero, so a dashboard sees `Updating` even
 * when no cluster is updating) and `nico_nodes` by cluster, plane and state.
 *
 * @module
 */
import { type KubernetesCluster, PHASES } from "../../crds/kubernetescluster.ts";
import type { Metrics } from "../../lib/metrics.ts";

/** Sets `nico_clusters` and `nico_nodes` from `clusters`. */
export function observeClusters(metrics: Metrics, clusters: KubernetesCluster[]): void {
  metrics.clusters.reset();
  metrics.nodes.reset();
  for (const phase of PHASES) metrics.clusters.set({ phase }, 0);
  for (const c of clusters) {
    metrics.clusters.inc({ phase: c.status?.phase ?? "Provisioning" });
    for (const plane of ["controlPlane", "dataPlane"] as const) {
      const p = c.status?.[plane];
      if (!p) continue;
      const base = { namespace: c.metadata.namespace ?? "", cluster: c.metadata.name, plane };
      metrics.nodes.set({ ...base, state: "ready" }, p.ready);
      metrics.nodes.set({ ...base, state: "not_ready" }, p.total - p.ready);
    }
  }
}
