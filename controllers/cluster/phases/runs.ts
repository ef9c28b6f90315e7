/**
 * Phase (NIO v1 only): why the failing runs of this cluster's nodes failed,
 * read from their Pods, for the readiness of each node.
 *
 * @module
 */
import type { ClusterScope } from "../scope.ts";

/** The reason of every failing run of this cluster's configurations, by Job name (none with the older NIO). */
export async function observeRuns(s: ClusterScope): Promise<Map<string, string> | undefined> {
  if (s.deps.nio !== "v1") return undefined;
  const configs = s.ours.map((c) => c.metadata.name);
  return await s.memory.runFailures.reasons(s.deps.client, s.namespace, configs, s.cache.jobs);
}
