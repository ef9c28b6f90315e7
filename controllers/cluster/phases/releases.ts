/**
 * Phase: claims on Machines that are neither members nor still being
 * cleaned up by NIO are removed, once NIO is done with them (see
 * controllers/cluster/release.ts); what a release waits for is a condition.
 *
 * @module
 */
import { CLUSTER_LABEL } from "../../../core/labels.ts";
import { listNames } from "../../../core/conditions.ts";
import { releaseWhenDone, stillUsed } from "../release.ts";
import type { ClusterScope } from "../scope.ts";

/** Releases this cluster's claims it no longer needs (nothing while paused); answers their names. */
export async function reconcileReleases(s: ClusterScope): Promise<string[]> {
  if (!s.writes.releases) return [];
  const members = new Set(s.members);
  const busy = new Set(s.ours.map((c) => c.spec.machineRef.name));
  const released: string[] = [];
  const waiting: string[] = [];
  for (const m of s.cache.machines) {
    const n = m.metadata.name;
    if (m.metadata.labels?.[CLUSTER_LABEL] !== s.name) continue;
    if (members.has(n) || busy.has(n)) {
      stillUsed(s.deps, m);
      continue;
    }
    const r = await releaseWhenDone(s.deps, s.cluster, s.cache, m, s.now, s.log);
    if (r.released) released.push(n);
    if (r.waiting) waiting.push(r.waiting);
  }
  if (released.length) {
    await s.deps.recorder.event(s.cluster, "Normal", "MachinesReleased", `released ${listNames(released)}`);
  }
  if (waiting.length) {
    s.out.requeueSoon = true;
    s.out.extra.push({
      type: "MachinesReleasing",
      status: "True",
      reason: "WaitingForNIO",
      message: `a Machine goes back to the pool only when NIO is done with it: ${waiting.join("; ")}`,
    });
  }
  return released;
}
