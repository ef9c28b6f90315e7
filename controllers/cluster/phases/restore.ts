/**
 * Phase: a restore of etcd (`spec.etcd.restore`), a step of its own in
 * pass.ts before the rollout is planned. It gathers the restore planner's
 * facts (core/etcd/restore.ts), carries out the planner's one act per step
 * (the backup looked up, the safety snapshot taken, the URL presigned into
 * the Secret `<cluster>-etcd-restore`, or the instruction taken back) and
 * plans again on its result, so a pass goes as far as the facts allow. It
 * answers `status.restore`, the `Restoring` condition, the nodes' restore
 * parts for the rendering (core/render/restore.ts) and whether a restore
 * runs: then the rollout plan is the restore's own
 * (core/rollout/restorehold.ts) and the drains, etcd's membership changes,
 * remediation and the pre-change backups are not asked.
 *
 * @module
 */
import type { RestoreStatus } from "../../../crds/restore.ts";
import { RESTORE_REQUEST_ANNOTATION } from "../../../core/contract/labels.ts";
import { backupMember } from "../../../core/backup/member.ts";
import { memberOn, quorumFacts } from "../../../core/etcd/members.ts";
import {
  finished,
  NONE,
  planRestore,
  type RestoreEvent,
  type RestoreFacts,
  type RestoreNode,
  type RestorePlan,
} from "../../../core/etcd/restore.ts";
import { askedRestore, clusterNixOf } from "../../../core/render/clusternix.ts";
import { nodeAddress } from "../../../core/render/desired.ts";
import type { DesiredRestore } from "../../../core/render/restore.ts";
import { heldForRestore, restoreRollout } from "../../../core/rollout/restorehold.ts";
import type { RolloutPlan } from "../../../core/rollout/plan.ts";
import { restoreCondition } from "../../../core/status/restore.ts";
import type { ConditionInput } from "../../../core/status/conditions.ts";
import { etcdClientCertificate } from "../etcd/trust.ts";
import { postEvent } from "../../events.ts";
import {
  expiresSoon,
  lookAtRestored,
  lookupBackup,
  presignInstruction,
  restoreSecret,
  type SnapshotSource,
  withdrawInstruction,
} from "../restore/io.ts";
import { forgetSafety, safetySnapshot } from "../restore/safety.ts";
import type { Requeue } from "../requeue.ts";
import type { ClusterScope } from "../scope.ts";
import { type EtcdView, gatherMembers, type Identity, type PassView } from "../view.ts";

/** What the restore phase answers. */
export interface RestoreOutcome {
  /** The planner's last answer this pass. */
  plan: RestorePlan;
  /** The control-plane nodes as the restore saw them. */
  nodes: RestoreNode[];
  /** The nodes' restore parts for the rendering (absent: none carries one). */
  desired?: DesiredRestore | undefined;
  condition?: ConditionInput | undefined;
  requeue?: Requeue | undefined;
  /**
   * A cluster never brought up whose restore (the request still in its spec) did not succeed: nothing is brought
   * up empty in its place; says why.
   */
  unrestored?: string | undefined;
}

/** What the phase is given by the phases before it. */
export interface RestoreInput {
  identity: Identity;
  etcd: EtcdView | undefined;
  /** What node reports are made from (phases/runs.ts, workload.ts). */
  view: Omit<PassView, "written" | "wantedSpec" | "etcd">;
}

/** Acts carried out in one pass at most (lookup, safety snapshot, presign). */
const MAX_ACTS = 3;

/** Drives a restore asked for or under way; undefined when none ever was. */
export async function reconcileRestore(s: ClusterScope, i: RestoreInput): Promise<RestoreOutcome | undefined> {
  const request = s.spec.etcd?.restore;
  const record = s.cluster.status?.restore;
  forgetSafety(s, record);
  if (!request && !record) return undefined;
  if (finished(record) && (!request || request.requestId === record!.requestId)) {
    // Nothing asked since the last one ended: nothing to look at (its record and condition stand).
    const plan = { record, active: false, roles: NONE };
    return { plan, nodes: [], condition: restoreCondition(record), unrestored: unrestored(s, record) };
  }
  const base = await factsOf(s, i, record);
  let facts: RestoreFacts = base;
  let plan = planRestore(facts);
  const events: RestoreEvent[] = plan.event ? [plan.event] : [];
  for (let n = 0; n < MAX_ACTS && plan.act && plan.act !== "withdraw"; n++) {
    const learned = await act(s, i, plan);
    if (Object.keys(learned).length === 0) break; // under way beside the pass (the safety snapshot)
    facts = { ...facts, record: plan.record, ...learned };
    plan = planRestore(facts);
    if (plan.event) events.push(plan.event);
  }
  // Taken back when the Secret held it as the pass began or this pass presigned it (a pass whose status write was
  // lost may presign again before it ends the restore): a Secret left behind would hold a live URL to the backup.
  if (plan.act === "withdraw" && (base.instruction ?? facts.instruction) !== undefined) await withdrawInstruction(s);
  if (plan.active && plan.record?.step === "Restoring") await renew(s, plan.record);
  for (const e of events) postEvent(s.deps.recorder, s.cluster, e.reason, e.message);
  const rec = plan.record;
  const desired = rec && plan.roles.size && rec.backup && rec.sha256
    ? { requestId: rec.requestId, backup: rec.backup, sha256: rec.sha256, roles: plan.roles }
    : undefined;
  return {
    plan,
    nodes: [...facts.nodes],
    desired,
    condition: restoreCondition(rec),
    requeue: plan.act === "lookAgain"
      ? { after: 1_000, why: "etcd is looked at again before a restore request is judged" }
      : plan.active
      ? { after: 5_000, why: "a restore of etcd runs" }
      : undefined,
    unrestored: plan.active ? undefined : unrestored(s, rec),
  };
}

/** The rollout plan while a restore runs (undefined: none runs, the planner's stands). */
export function restorePlan(r: RestoreOutcome | undefined, members: readonly string[]): RolloutPlan | undefined {
  if (r?.unrestored) return heldForRestore(r.unrestored, members);
  if (!r?.plan.active || !r.plan.record) return undefined;
  return restoreRollout(r.plan.record.requestId, r.plan.roles, r.nodes);
}

/** Why a cluster asked to come up from a backup is not brought up at all (undefined: it may be). */
function unrestored(s: ClusterScope, record: RestoreStatus | undefined): string | undefined {
  const request = s.spec.etcd?.restore;
  if (!record || !request || record.step === "Succeeded") return undefined;
  if (s.cluster.status?.initialization?.provisioned === true) return undefined;
  return `the cluster is to come up from a backup, and restore ${record.requestId} ended ${record.step} ` +
    `(${record.reason}): nothing is brought up empty in its place; fix spec.etcd.restore and give it a new ` +
    "requestId, or remove spec.etcd.restore to bring up an empty cluster";
}

/** Carries out the planner's act; answers the facts it learned. */
async function act(s: ClusterScope, i: RestoreInput, plan: RestorePlan): Promise<Partial<RestoreFacts>> {
  const req = s.spec.etcd?.restore;
  const rec = plan.record!;
  if (plan.act === "lookAgain") {
    s.memory.etcd?.refresh();
    return {};
  }
  if (plan.act === "lookupBackup") {
    return { backup: req ? await lookupBackup(s, req) : { kind: "missing", message: "the request was withdrawn" } };
  }
  if (plan.act === "safetySnapshot") {
    if (!req) return { safety: { error: "the request was withdrawn" } };
    // Beside the pass; the mark goes in before the snapshot: the restore is proven by a member that answers without it.
    const safety = await safetySnapshot(s, req, () => answering(s, i));
    return safety ? { safety } : {};
  }
  const why = await presignInstruction(s, rec.requestId, rec.from, rec.backup ?? "");
  if (why) {
    postEvent(s.deps.recorder, s.cluster, "RestoreUrlFailed", `restore ${rec.requestId}: ${why}`);
    return {};
  }
  return { instruction: rec.requestId };
}

/** Presigns the URL again while the bootstrap node has not applied and it expires soon. */
async function renew(s: ClusterScope, rec: RestoreStatus): Promise<void> {
  const secret = await restoreSecret(s);
  if (secret?.metadata.annotations?.[RESTORE_REQUEST_ANNOTATION] !== rec.requestId) return;
  if (!expiresSoon(s, secret)) return;
  const why = await presignInstruction(s, rec.requestId, rec.from, rec.backup ?? "");
  if (why) postEvent(s.deps.recorder, s.cluster, "RestoreUrlFailed", `restore ${rec.requestId}: ${why}`);
}

/** A member that answers and NICO's credentials for it, or why there is none. */
async function answering(s: ClusterScope, i: RestoreInput): Promise<SnapshotSource | { why: string }> {
  const ca = i.identity.etcd?.ca;
  const sight = i.etcd?.sight;
  if (!ca || sight?.kind !== "seen") return { why: "no etcd member answers any more" };
  const choice = backupMember(sight.members);
  const endpoint = choice.member && s.memory.etcd?.endpointOf(choice.member.id);
  if (!endpoint) return { why: choice.why ?? "no etcd member answers any more" };
  return { ca, client: await etcdClientCertificate(ca), endpoint };
}

/** The planner's facts as this pass sees them (the store's answers come from {@link act}). */
async function factsOf(s: ClusterScope, i: RestoreInput, record: RestoreStatus | undefined): Promise<RestoreFacts> {
  const sight = i.etcd?.sight;
  const members = sight?.kind === "seen" ? sight.members : [];
  const q = quorumFacts(members);
  const leader = members.some((m) => m.leader);
  const summary = sight?.kind === "seen"
    ? `${q.healthyVoters}/${q.voters} voters healthy${leader ? "" : ", no leader"}`
    : sight?.why ?? "etcd is not looked at";
  const seenAt = sight?.kind === "seen" || sight?.kind === "unreachable" ? sight.at : undefined;
  const bootstrap = s.bootstrap ?? "";
  const nodes = restoreNodes(s, i);
  const secret = record || s.spec.etcd?.restore ? await restoreSecret(s) : undefined;
  const b = memberOn(members, nodeAddress(s.machines.get(bootstrap), bootstrap));
  const bootstrapEndpoint = b && s.memory.etcd?.endpointOf(b.id);
  const ca = i.identity.etcd?.ca;
  const seen = record?.step === "Restoring" && b?.healthy && bootstrapEndpoint && ca
    ? await lookAtRestored({ ca, client: await etcdClientCertificate(ca), endpoint: bootstrapEndpoint }, record.marker)
    : {};
  return {
    request: s.spec.etcd?.restore,
    record,
    now: s.now,
    provisioned: s.cluster.status?.initialization?.provisioned === true,
    etcd: {
      answers: members.some((m) => m.healthy),
      quorum: q.voters > 0 && q.healthyVoters >= q.quorum && leader,
      summary,
      seenAt,
    },
    instruction: secret?.metadata.annotations?.[RESTORE_REQUEST_ANNOTATION],
    bootstrap,
    nodes,
    revision: seen.revision,
    marked: seen.marked,
    urlLifetime: s.deps.restoreUrlLifetime,
  };
}

/** The control-plane nodes of the spec as a restore sees them: their part, NIO's apply, their etcd member. */
function restoreNodes(s: ClusterScope, i: RestoreInput): RestoreNode[] {
  const sight = i.etcd?.sight;
  const members = sight?.kind === "seen" ? sight.members : [];
  const reports = new Map(
    gatherMembers(s, { ...i.view, written: new Map(), wantedSpec: new Map() }).map((m) => [m.facts.machine, m]),
  );
  return s.selection.controlPlane.members.map((name) => {
    const m = reports.get(name);
    const cfg = m?.config;
    const asked = cfg ? askedRestore(clusterNixOf(cfg)) : undefined;
    const r = m?.report;
    const member = memberOn(members, nodeAddress(s.machines.get(name), name));
    return {
      name,
      ...(asked ? { role: asked } : {}),
      configured: cfg !== undefined,
      applied: r ? r.applied ?? r.state === "Ready" : false,
      ...(r?.state === "Failed" ? { failed: r.detail } : {}),
      member: member !== undefined && member.healthy && !member.isLearner,
    };
  });
}
