/**
 * Phase: claims on Machines that are neither members nor still being
 * cleaned up by NIO are removed.
 *
 * @module
 */
import { CLUSTER_LABEL } from "../../../core/labels.ts";
import { listNames } from "../../../core/conditions.ts";
import { releaseMachine } from "../claims.ts";
import type { ClusterScope } from "../scope.ts";

/** Releases this cluster's claims it no longer needs (nothing while paused); answers their names. */
export async function reconcileReleases(s: ClusterScope): Promise<string[]> {
  if (s.paused) return [];
  const members = new Set(s.members);
  const busy = new Set(s.ours.map((c) => c.spec.machineRef.name));
  const released: string[] = [];
  for (const m of s.cache.machines) {
    const n = m.metadata.name;
    if (m.metadata.labels?.[CLUSTER_LABEL] !== s.name || members.has(n) || busy.has(n)) continue;
    if (await releaseMachine(s.deps.client, m, s.name)) released.push(n);
  }
  if (released.length) {
    await s.deps.recorder.event(s.cluster, "Normal", "MachinesReleased", `released ${listNames(released)}`);
  }
  return released;
}
