/**
 * Phase (NIO v1 only): why the failing runs of this cluster's nodes failed,
 * read from their Pods, for the readiness of each node.
 *
 * @module
 */
import type { ClusterScope } from "../scope.ts";

/** Records in `s.out.runFailures` the reason of every failing run of this cluster's configurations. */
export async function observeRuns(s: ClusterScope): Promise<void> {
  if (s.deps.nio !== "v1") return;
  const configs = s.ours.map((c) => c.metadata.name);
  s.out.runFailures = await s.deps.runFailures.reasons(s.deps.client, s.namespace, configs, s.cache.jobs);
}
