/**
 * The restore's node steps (core/etcd/restore.ts): the bootstrap node
 * restores the backup, then the other control-plane nodes rejoin one at a
 * time, each once the one before is a healthy member. Pure.
 *
 * @module
 */
import type { RestoreNodeStatus, RestoreStatus } from "../../crds/restore.ts";
import {
  end,
  enter,
  event,
  type RestoreFacts,
  type RestoreNode,
  type RestorePlan,
  type RestoreRole,
} from "./restore_record.ts";
import { expiredUrlHint } from "./restore_url.ts";

/** Whether the node's configuration carries `role` for the record's request. */
function carries(n: RestoreNode | undefined, role: RestoreRole, rec: RestoreStatus): boolean {
  return n?.role?.role === role && n.role.requestId === rec.requestId;
}

/** Whether the node did its part: it carries the role, NIO applied it, and its member is a healthy voter. */
function done(n: RestoreNode | undefined, role: RestoreRole, rec: RestoreStatus): boolean {
  return carries(n, role, rec) && n!.applied && n!.failed === undefined && n!.member;
}

/**
 * Whether the bootstrap node restored: it did its part, and where NICO marked etcd before the restore its member
 * answers without the marker. An apply NIO reports may be of the spec before the restore's (the older NIO's
 * `Applied` also holds for an apply that began before NICO's write), and a member that never stopped answers
 * healthy throughout a rewind: only the data tells.
 */
function restored(f: RestoreFacts, b: RestoreNode | undefined, rec: RestoreStatus): boolean {
  return done(b, "restore", rec) && (rec.marker === undefined || f.marked === false);
}

/** The control-plane nodes but the bootstrap node, in the order they rejoin (by name). */
function others(f: RestoreFacts): RestoreNode[] {
  return f.nodes.filter((n) => n.name !== f.bootstrap).sort((a, b) => a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
}

function nodeStatus(name: string, state: RestoreNodeStatus["state"], message?: string): RestoreNodeStatus {
  return message === undefined ? { name, state } : { name, state, message };
}

/** What the bootstrap node waits for, said plainly. */
function bootstrapWait(n: RestoreNode | undefined, rec: RestoreStatus): string {
  if (!carries(n, "restore", rec)) return "its configuration is being given the restore instruction";
  if (!n!.applied) return "NIO to apply its configuration (download, SHA-256 check, restore, start)";
  if (!n!.member) return "its etcd member to answer as a healthy member";
  return `its etcd member to answer with the backup's data (without ${rec.marker}, which NICO wrote before the restore)`;
}

/** The bootstrap node restored: the others rejoin. */
function toRejoining(f: RestoreFacts, rec: RestoreStatus): RestorePlan {
  const at = { ...rec, ...(f.revision === undefined ? {} : { revision: f.revision }) };
  const msg = `${f.bootstrap} restored ${rec.backup}` + (f.revision === undefined ? "" : ` (revision ${f.revision})`);
  const plan = rejoinStep(f, enter(at, "Rejoining", "Rejoining", msg, f.now));
  return { ...plan, event: plan.event ?? event("Normal", "EtcdRestored", `restore ${rec.requestId}: ${msg}`) };
}

/**
 * The bootstrap node's step: once the instruction is presigned its configuration carries role `restore`; when its
 * apply fails the restore fails (the instruction is withdrawn); once its member answers, the others rejoin.
 *
 * @example
 * ```ts
 * import { bootstrapStep } from "./restore_nodes.ts";
 * const rec = { requestId: "r1", step: "Restoring" as const, reason: "RestoringBootstrap", message: "", startedAt: "" };
 * const f = {
 *   request: undefined, record: rec, now: new Date(0), provisioned: true, instruction: "r1",
 *   etcd: { answers: false, quorum: false, summary: "" }, bootstrap: "cp-1",
 *   nodes: [{ name: "cp-1", configured: true, applied: false, member: false }],
 * };
 * [...bootstrapStep(f, rec).roles]; // [["cp-1", "restore"]]
 * ```
 */
export function bootstrapStep(f: RestoreFacts, rec: RestoreStatus): RestorePlan {
  const b = f.nodes.find((n) => n.name === f.bootstrap);
  // Restored (a pass whose status write was lost may see it so after the instruction was taken back): go on.
  if (restored(f, b, rec)) return toRejoining(f, rec);
  if (f.instruction !== rec.requestId) return { record: rec, active: true, roles: new Map(), act: "presign" };
  const rest = others(f).map((n) => nodeStatus(n.name, "Waiting"));
  if (carries(b, "restore", rec) && b!.failed !== undefined) {
    const why = `bootstrap node ${f.bootstrap} could not restore ${rec.backup}: ${b!.failed}` +
      `${expiredUrlHint(b!.failed, f.urlLifetime)}; the instruction is withdrawn and no other node was touched`;
    return end(f, rec, "Failed", "BootstrapRestoreFailed", why, [
      nodeStatus(f.bootstrap, "Failed", b!.failed),
      ...rest,
    ]);
  }
  const wait = bootstrapWait(b, rec);
  const record = { ...rec, nodes: [nodeStatus(f.bootstrap, "Restoring", wait), ...rest] };
  return { record, active: true, roles: new Map([[f.bootstrap, "restore"]]) };
}

/** A Normal Event for the nodes that became members since the record was written. */
function rejoined(rec: RestoreStatus, states: RestoreNodeStatus[]): RestorePlan["event"] {
  const before = new Map((rec.nodes ?? []).map((n) => [n.name, n.state]));
  const now = states.filter((n) => n.state === "Rejoined" && before.get(n.name) !== "Rejoined").map((n) => n.name);
  if (now.length === 0) return undefined;
  return event(
    "Normal",
    "EtcdMemberRejoined",
    `restore ${rec.requestId}: ${now.join(", ")} rejoined the restored cluster`,
  );
}

/**
 * The other control-plane nodes, one at a time: each in turn gets role `rejoin` (its old etcd data removed, it
 * joins the restored cluster) once the one before is a healthy member; a failed rejoin halts there. Every node a
 * member: the restore succeeded.
 *
 * @example
 * ```ts
 * import { rejoinStep } from "./restore_nodes.ts";
 * const rec = { requestId: "r1", step: "Rejoining" as const, reason: "Rejoining", message: "", startedAt: "" };
 * const node = (name: string, role?: "restore" | "rejoin") => ({
 *   name, configured: true, applied: true, member: role !== undefined,
 *   ...(role ? { role: { role, requestId: "r1" } } : {}),
 * });
 * const f = {
 *   request: undefined, record: rec, now: new Date(0), provisioned: true, instruction: "r1",
 *   etcd: { answers: true, quorum: true, summary: "" }, bootstrap: "cp-1",
 *   nodes: [node("cp-1", "restore"), node("cp-2", "rejoin"), node("cp-3")],
 * };
 * [...rejoinStep(f, rec).roles]; // [["cp-1", "restore"], ["cp-2", "rejoin"], ["cp-3", "rejoin"]]
 * ```
 */
export function rejoinStep(f: RestoreFacts, rec: RestoreStatus): RestorePlan {
  const roles = new Map<string, RestoreRole>([[f.bootstrap, "restore"]]);
  const states: RestoreNodeStatus[] = [nodeStatus(f.bootstrap, "Restored")];
  let turn: RestoreNode | undefined;
  for (const n of others(f)) {
    if (turn) {
      states.push(nodeStatus(n.name, "Waiting"));
      continue;
    }
    roles.set(n.name, "rejoin");
    if (done(n, "rejoin", rec)) states.push(nodeStatus(n.name, "Rejoined"));
    else turn = n;
  }
  if (!turn) {
    const msg = `restored ${rec.backup}` + (rec.revision === undefined ? "" : ` at revision ${rec.revision}`) +
      `; every control-plane node is a member again`;
    return end(f, rec, "Succeeded", "Restored", msg, states);
  }
  const failed = carries(turn, "rejoin", rec) ? turn.failed : undefined;
  if (failed !== undefined) {
    states.push(nodeStatus(turn.name, "Failed", failed));
    const msg = `${turn.name} failed to rejoin the restored cluster: ${failed}; waiting for it before the next node`;
    const halted = rec.reason === "RejoinHalted"
      ? { ...rec, message: msg }
      : enter(rec, "Rejoining", "RejoinHalted", msg, f.now);
    const ev = rec.reason === "RejoinHalted"
      ? undefined
      : event("Warning", "RestoreRejoinFailed", `restore ${rec.requestId}: ${msg}`);
    return { record: { ...halted, nodes: states }, active: true, roles, event: ev };
  }
  const wait = !carries(turn, "rejoin", rec)
    ? "its configuration is being given the rejoin instruction"
    : !turn.applied
    ? "NIO to apply its configuration (old etcd data removed, join)"
    : "its etcd member to answer as a healthy voter";
  states.push(nodeStatus(turn.name, "Rejoining", wait));
  const msg = `${turn.name} rejoins the restored cluster: waiting for ${wait}`;
  const moved = rec.reason === "Rejoining"
    ? { ...rec, message: msg }
    : enter(rec, "Rejoining", "Rejoining", msg, f.now);
  return { record: { ...moved, nodes: states }, active: true, roles, event: rejoined(rec, states) };
}
