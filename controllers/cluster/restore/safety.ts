/**
 * A restore's safety snapshot, taken beside the passes as backups are
 * (controllers/cluster/backup/): the restore phase starts it and goes on; a
 * pass of the cluster never waits for a database to stream. The job marks
 * etcd first (core/etcd/restore_record.ts `restoreMarker`: the restore is
 * later proven by a member that answers without the mark), then snapshots
 * it into the store, and wakes the cluster when it ends; the next pass reads
 * its result. One job per cluster, for one request; a job of another request
 * (or of a forgotten cluster) is aborted.
 *
 * @module
 */
import type { RestoreRequest, RestoreStatus } from "../../../crds/restore.ts";
import { restoreMarker } from "../../../core/etcd/restore_record.ts";
import { errorMessage } from "../../../lib/runtime/log.ts";
import type { ClusterScope } from "../scope.ts";
import { markEtcd, type SnapshotSource, takeSafetySnapshot } from "./io.ts";
import { SafetyJob, type SafetyResult } from "./safety_job.ts";

/**
 * The safety snapshot of request `req` for this pass: its result once the job ended (kept until {@link forgetSafety}),
 * undefined while it runs; started now, from the member `source` names, when none runs. `source` is asked for only
 * when a job is to start (`why`: no member answers, which ends the step at once).
 */
export async function safetySnapshot(
  s: ClusterScope,
  req: RestoreRequest,
  source: () => Promise<SnapshotSource | { why: string }>,
): Promise<SafetyResult | undefined> {
  const job = s.memory.safety;
  if (job && job.requestId !== req.requestId) {
    job.stop();
    s.memory.safety = undefined;
  }
  // Kept until the record moves on (forgetSafety): a pass whose status write is lost asks again, and must get the
  // same snapshot, not a second one taken while the bootstrap node already restores.
  if (job?.requestId === req.requestId) return job.result;
  const from = await source();
  if ("why" in from) return { error: from.why };
  const started = new SafetyJob(req.requestId);
  s.memory.safety = started;
  void run(s, req, from, started);
  return undefined;
}

/** Marks etcd, takes the snapshot, records the result and wakes the cluster. */
async function run(s: ClusterScope, req: RestoreRequest, from: SnapshotSource, job: SafetyJob): Promise<void> {
  try {
    const marker = restoreMarker(req.requestId);
    const unmarked = await markEtcd(from, marker, s.now);
    if (unmarked) {
      job.result = { error: unmarked };
    } else {
      const taken = await takeSafetySnapshot(s, req, from, job.signal);
      job.result = "key" in taken ? { ...taken, marker } : taken;
    }
  } catch (err) {
    job.result = { error: errorMessage(err) };
  }
  if (job.signal.aborted) return;
  s.log.info("restore safety snapshot ended", { request: req.requestId, ok: "key" in job.result });
  s.deps.etcd?.onChange(s.memory.key);
}

/** Forgets the safety snapshot job (stopping it) once the restore's record moved past it, or ended. */
export function forgetSafety(s: ClusterScope, record: RestoreStatus | undefined): void {
  const job = s.memory.safety;
  if (!job) return;
  const waiting = record?.requestId === job.requestId && ["Resolving", "SafetySnapshot"].includes(record.step);
  if (waiting) return;
  job.stop();
  s.memory.safety = undefined;
}
