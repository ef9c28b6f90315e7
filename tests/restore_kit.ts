/** Fixtures of the restore planner's tests (core/etcd/restore.ts). */
import type { BackupLookup, RestoreFacts, RestoreNode, RestorePlan } from "../core/etcd/restore.ts";
import type { RestoreRequest, RestoreStatus } from "../crds/restore.ts";

export const NOW = new Date("2026-06-01T12:00:00Z");
export const REQ: RestoreRequest = { requestId: "r1", backup: "latest", rewindHealthy: false };
export const FOUND = {
  kind: "found",
  key: "c/2026-06-01.db",
  sha256: "ab".repeat(32),
  revision: 41,
} satisfies BackupLookup;
export const DOWN = { answers: false, quorum: false, summary: "0/3 voters healthy" };
export const HEALTHY = { answers: true, quorum: true, summary: "3/3 voters healthy" };
export const MARK = "/nico.homystack.com/restore/r1";
export const MINORITY = { answers: true, quorum: false, summary: "1/3 voters healthy" };

export function node(name: string, o: Partial<RestoreNode> = {}): RestoreNode {
  return { name, configured: true, applied: true, member: false, ...o };
}
export const carrying = (role: "restore" | "rejoin", o: Partial<RestoreNode> = {}) => ({
  role: { role, requestId: "r1" },
  ...o,
});

export function record(step: RestoreStatus["step"], o: Partial<RestoreStatus> = {}): RestoreStatus {
  const reason = { Resolving: "Resolving", SafetySnapshot: "TakingSafetySnapshot", Restoring: "RestoringBootstrap" }[
    step as string
  ] ?? step;
  return { requestId: "r1", step, reason, message: "", startedAt: NOW.toISOString(), backup: FOUND.key, ...o };
}

export function facts(o: Partial<RestoreFacts> = {}): RestoreFacts {
  return {
    request: REQ,
    record: undefined,
    now: NOW,
    provisioned: true,
    etcd: DOWN,
    bootstrap: "cp-1",
    nodes: [node("cp-1"), node("cp-2"), node("cp-3")],
    ...o,
  };
}

/** The plan in one line: step/reason, what the shell does, the roles, the Event, whether changes are held. */
export function line(p: RestorePlan): string {
  const roles = [...p.roles].map(([n, r]) => `${n}=${r}`).join(",");
  return [
    p.record ? `${p.record.step}/${p.record.reason}` : "none",
    p.act ?? "-",
    roles || "-",
    p.event ? `${p.event.type}:${p.event.reason}` : "-",
    p.active ? "hold" : "free",
  ].join(" ");
}
