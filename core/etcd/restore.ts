/**
 * The restore planner: from what NICO knows of a restore request
 * (`spec.etcd.restore`), its record (`status.restore`), etcd, the store and
 * the control-plane nodes, the next step. A state machine, one step per
 * look:
 *
 * 1. **Resolving**: the backup is looked up (the shell asks the store). A
 *    request is refused while etcd has a healthy quorum unless it says
 *    `rewindHealthy`, and when the backup does not exist; a store that does
 *    not answer fails it. Nothing is touched before this step ends.
 * 2. **SafetySnapshot**: where a member still answers, the shell snapshots
 *    etcd to the store first, so the restore can itself be undone.
 * 3. **Restoring**: the shell presigns a short-lived URL of the backup into
 *    a Secret; then the bootstrap node's configuration carries the restore
 *    instruction (role `restore`): its flake downloads the object, checks
 *    its SHA-256, restores it with a bumped revision and marked compaction
 *    for a membership of one, and starts. If its apply fails, the restore
 *    fails and the instruction is taken back; no other node was touched.
 * 4. **Rejoining**: the other control-plane nodes, one at a time in name
 *    order, get role `rejoin` (their old etcd data removed, they join the
 *    restored cluster), each once the one before is a healthy member.
 * 5. **Succeeded** once every control-plane node is a healthy member.
 *
 * While a restore runs every other change is held (`active`): workers are
 * left alone, nothing is created or removed but what the restore asks. A
 * request whose id the record names as finished never runs again.
 *
 * Pure; table-tested (tests/unit/restore_plan_test.ts).
 *
 * @module
 */
import type { RestoreStatus } from "../../crds/restore.ts";
import { bootstrapStep, rejoinStep } from "./restore_nodes.ts";
import { end, enter, event, finished, NONE, type RestoreFacts, type RestorePlan } from "./restore_record.ts";

export * from "./restore_record.ts";

/**
 * The next step of a restore (see the module's doc).
 *
 * @example
 * ```ts
 * import { planRestore } from "./restore.ts";
 * const plan = planRestore({
 *   request: { requestId: "r1", backup: "latest", rewindHealthy: false },
 *   record: undefined, now: new Date("2026-01-01T00:00:00Z"), provisioned: true,
 *   etcd: { answers: true, quorum: true, summary: "3/3 voters healthy" },
 *   bootstrap: "cp-1", nodes: [],
 * });
 * [plan.record?.step, plan.act]; // ["Resolving", "lookupBackup"]
 * ```
 */
export function planRestore(f: RestoreFacts): RestorePlan {
  const rec = f.record;
  const req = f.request;
  if (rec && !finished(rec)) {
    if (req?.requestId !== rec.requestId && !touched(rec)) {
      return end(f, rec, "Failed", "Cancelled", "the request was withdrawn before any node was changed");
    }
    return step(f, rec);
  }
  if (!req || req.requestId === rec?.requestId) return { record: rec, active: false, roles: NONE };
  const started: RestoreStatus = {
    requestId: req.requestId,
    step: "Resolving",
    reason: "Resolving",
    message: `looking up backup ${req.backup}${req.from ? ` of cluster ${req.from}` : ""}`,
    ...(req.from ? { from: req.from } : {}),
    startedAt: f.now.toISOString(),
    history: [],
  };
  const next = step(f, enter(started, "Resolving", "Resolving", started.message, f.now));
  return { ...next, event: next.event ?? event("Normal", "RestoreStarted", `restore ${req.requestId}: started`) };
}

/** Whether the restore changed a node already (from then on it runs to its end). */
function touched(rec: RestoreStatus): boolean {
  return rec.step === "Restoring" || rec.step === "Rejoining";
}

/** The next step of a restore under way. */
function step(f: RestoreFacts, rec: RestoreStatus): RestorePlan {
  if (rec.step === "SafetySnapshot" && f.nodes.some((n) => n.role?.requestId === rec.requestId)) {
    // A node carries this restore already: the record is from before a status write that was lost. It goes on.
    const why = "a node already carries this restore (the status NICO wrote after its safety snapshot was lost)";
    return bootstrapStep(f, enter(rec, "Restoring", "RestoringBootstrap", why, f.now));
  }
  switch (rec.step) {
    case "Resolving":
      return resolving(f, rec);
    case "SafetySnapshot":
      return safetySnapshot(f, rec);
    case "Restoring":
      return bootstrapStep(f, rec);
    case "Rejoining":
      return rejoinStep(f, rec);
    default:
      return { record: rec, active: false, roles: NONE };
  }
}

function resolving(f: RestoreFacts, rec: RestoreStatus): RestorePlan {
  const b = f.backup;
  if (!b) return { record: rec, active: true, roles: NONE, act: "lookupBackup" };
  if (b.kind === "missing") return end(f, rec, "Refused", "BackupNotFound", b.message);
  if (b.kind === "refused") return end(f, rec, "Refused", "SourceRefused", b.message);
  if (b.kind === "unreachable") return end(f, rec, "Failed", "StoreUnreachable", b.message);
  // Whether etcd is healthy (refused), answers (a safety snapshot) or not is judged on a look taken after the
  // request: an older one may predate the loss the request is about, or a recovery since.
  if (f.provisioned && f.etcd.seenAt && f.etcd.seenAt < new Date(rec.startedAt)) {
    const msg = `etcd's last look (${f.etcd.summary}) is older than this request: looking again before judging it`;
    return { record: { ...rec, message: msg }, active: true, roles: NONE, act: "lookAgain" };
  }
  if (f.provisioned && f.etcd.quorum && !f.request?.rewindHealthy) {
    const why = `etcd has a healthy quorum (${f.etcd.summary}): restoring ${b.key} would rewind every change made ` +
      "since it was taken; set rewindHealthy: true with a new requestId to do it anyway";
    return end(f, rec, "Refused", "HealthyQuorum", why);
  }
  const found: RestoreStatus = {
    ...rec,
    backup: b.key,
    sha256: b.sha256,
    ...(b.revision === undefined ? {} : { backupRevision: b.revision }),
  };
  if (f.provisioned && f.etcd.answers) {
    const msg = `etcd still answers: taking a safety snapshot before restoring ${b.key}`;
    const next = enter(found, "SafetySnapshot", "TakingSafetySnapshot", msg, f.now);
    return { record: next, active: true, roles: NONE, act: "safetySnapshot" };
  }
  const why = f.provisioned ? "no member answers, so no safety snapshot can be taken" : "a new cluster";
  return toRestoring(f, found, `${why}: restoring ${b.key} on ${f.bootstrap}`);
}

function safetySnapshot(f: RestoreFacts, rec: RestoreStatus): RestorePlan {
  const s = f.safety;
  if (!s) return { record: rec, active: true, roles: NONE, act: "safetySnapshot" };
  if ("error" in s) return end(f, rec, "Failed", "SafetySnapshotFailed", `safety snapshot failed: ${s.error}`);
  const next = { ...rec, safetySnapshot: s.key, marker: s.marker };
  const plan = toRestoring(f, next, `safety snapshot ${s.key} taken: restoring ${rec.backup} on ${f.bootstrap}`);
  return {
    ...plan,
    event: event("Normal", "SafetySnapshotTaken", `restore ${rec.requestId}: safety snapshot ${s.key}`),
  };
}

/** Into the bootstrap node's step: the instruction is presigned before any configuration carries it. */
function toRestoring(f: RestoreFacts, rec: RestoreStatus, message: string): RestorePlan {
  const next = enter(rec, "Restoring", "RestoringBootstrap", message, f.now);
  return { record: next, active: true, roles: NONE, act: "presign" };
}
