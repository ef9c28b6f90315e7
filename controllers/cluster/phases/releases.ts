/**
 * Phase: claims on Machines that are neither members nor still being
 * cleaned up by NIO are removed, once NIO is done with them (see
 * controllers/cluster/release.ts); what a release waits for is a condition.
 *
 * @module
 */
import { CLUSTER_LABEL } from "../../../core/contract/labels.ts";
import { condition, type ConditionInput, listNames } from "../../../core/status/conditions.ts";
import { releaseWhenDone, stillUsed } from "../release.ts";
import type { ClusterScope } from "../scope.ts";
import { DRAIN_REQUEUE_MS, type Requeue } from "../requeue.ts";
import { postEvent } from "../../events.ts";

/** What the releases phase did. */
export interface ReleasesOutcome {
  /** Look again soon while a release waits for NIO. */
  requeue?: Requeue | undefined;
  /** The `MachinesReleasing` condition while a release waits. */
  condition?: ConditionInput | undefined;
}

/** Releases this cluster's claims it no longer needs (nothing while paused). */
export async function reconcileReleases(s: ClusterScope): Promise<ReleasesOutcome> {
  if (!s.writes.releases) return {};
  const members = new Set(s.members);
  const busy = new Set(s.ours.map((c) => c.spec.machineRef.name));
  const released: string[] = [];
  const waiting: string[] = [];
  for (const m of s.cache.machines) {
    const n = m.metadata.name;
    if (m.metadata.labels?.[CLUSTER_LABEL] !== s.name) continue;
    if (members.has(n) || busy.has(n)) {
      stillUsed(s.memory, m);
      continue;
    }
    const r = await releaseWhenDone(s, m, s.now);
    if (r.released) released.push(n);
    if (r.waiting) waiting.push(r.waiting);
  }
  if (released.length) {
    postEvent(s.deps.recorder, s.cluster, "MachinesReleased", `released ${listNames(released)}`);
  }
  if (!waiting.length) return {};
  return {
    requeue: { after: DRAIN_REQUEUE_MS, why: "a release waits for NIO" },
    condition: condition(
      "MachinesReleasing",
      "True",
      "WaitingForNIO",
      `a Machine goes back to the pool only when NIO is done with it: ${waiting.join("; ")}`,
    ),
  };
}
