/**
 * `Restoring` from the restore's record (`status.restore`): True while a
 * restore runs, False with how the last one ended, absent when none was
 * ever asked for. Pure.
 *
 * @module
 */
import type { RestoreStatus } from "../../crds/restore.ts";
import { FINISHED_STEPS } from "../../crds/restore.ts";
import { reasonSpec } from "../../crds/conditions/mod.ts";
import type { ConditionInput } from "./conditions.ts";

/**
 * The `Restoring` condition the record stands for (its reason is the record's).
 *
 * @example
 * ```ts
 * import { restoreCondition } from "./restore.ts";
 * const rec = { requestId: "r1", step: "Rejoining" as const, reason: "Rejoining", message: "cp-2 rejoins", startedAt: "" };
 * restoreCondition(rec)?.status; // "True"
 * restoreCondition(undefined); // undefined
 * ```
 */
export function restoreCondition(record: RestoreStatus | undefined): ConditionInput | undefined {
  if (!record) return undefined;
  const status = FINISHED_STEPS.includes(record.step) ? "False" : "True";
  if (!reasonSpec("Restoring", status, record.reason)) return undefined;
  const message = `restore ${record.requestId}: ${record.message}`;
  return { type: "Restoring", status, reason: record.reason, message } as ConditionInput;
}
