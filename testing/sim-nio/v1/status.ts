/**
 * The status NIO v1 writes on a NixosConfiguration (after `setPhase`):
 * `Ready` only in phase Ready, `Stalled` in Degraded **and** Blocked,
 * `Reconciling` otherwise, `Applied` once anything ever ran, `GitSynced` as
 * the NixCronJob says. Pure.
 *
 * @module
 */
import type { NixosConfiguration } from "../../../core/contract/nio.ts";
import { type CfgStatus, removeCondition, setCondition } from "../status.ts";

/** The NixCronJob's `GitSynced` condition, which NIO v1 copies onto the configuration when Ready or Converging. */
type Synced = { status: string; reason?: string; message?: string };

export type Phase =
  | { phase: "Ready"; applied: true; extra?: Record<string, unknown>; gitSynced?: Synced | undefined }
  | {
    phase: "Converging" | "Installing";
    message?: string;
    applied: boolean;
    extra?: Record<string, unknown>;
    gitSynced?: Synced | undefined;
  }
  | { phase: "Degraded"; message: string; applied: boolean; extra?: Record<string, unknown> }
  | { phase: "Blocked"; reason: "MachineInUse" | "MachineNotReady"; message: string; applied: false };

const REASON: Record<string, string> = {
  Ready: "Succeeded",
  Converging: "Converging",
  Installing: "Installing",
  Degraded: "ApplyFailed",
};
const MESSAGE: Record<string, string> = {
  Ready: "Day-2 convergence healthy; configuration applied",
  Converging: "Day-2 convergence in progress",
};

/** The whole status after setting `p` (keeping what NIO keeps: refs, times, retries). */
export function v1Status(current: NixosConfiguration["status"], generation: number, p: Phase, now: Date): CfgStatus {
  const reason = p.phase === "Blocked" ? p.reason : REASON[p.phase]!;
  const message = ("message" in p && p.message) || MESSAGE[p.phase] || p.phase;
  const ready = p.phase === "Ready";
  const stalled = p.phase === "Degraded" || p.phase === "Blocked";
  const cond = (type: string, status: string, r = reason) => ({
    type,
    status,
    reason: r,
    message,
    observedGeneration: generation,
  });
  let conditions = setCondition(current?.conditions, cond("Ready", ready ? "True" : "False"), now);
  conditions = stalled
    ? setCondition(conditions, cond("Stalled", "True"), now)
    : removeCondition(conditions, "Stalled");
  conditions = setCondition(conditions, cond("Reconciling", ready || stalled ? "False" : "True"), now);
  conditions = setCondition(
    conditions,
    cond("Applied", p.applied ? "True" : "False", p.applied ? "ConfigurationApplied" : "Waiting"),
    now,
  );
  const synced = "gitSynced" in p ? p.gitSynced : undefined;
  if (synced) {
    conditions = setCondition(conditions, {
      type: "GitSynced",
      status: synced.status,
      reason: synced.reason ?? "",
      message: synced.message ?? "",
      observedGeneration: generation,
    }, now);
  }
  const extra = "extra" in p ? p.extra ?? {} : {};
  const defined = Object.fromEntries(Object.entries(extra).filter(([, v]) => v !== undefined));
  return { ...current, ...defined, observedGeneration: generation, phase: p.phase, conditions };
}
