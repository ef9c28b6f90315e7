/**
 * Known failures a user can fix, and how the reconciler tells them apart
 * from unexpected errors. Each becomes a `Ready=False` condition (reason and
 * a message saying what to do) and a Warning Event.
 *
 * @module
 */
import type { Problem } from "../../core/status/cluster.ts";
import type { StallReason } from "../../crds/conditions/mod.ts";
import { errorMessage } from "../../lib/runtime/log.ts";

/** A failure the user must fix (a foreign object in the way, …): shown in status, not retried hot. */
export class ClusterProblem extends Error {
  override readonly name = "ClusterProblem";
  /** CamelCase reason for the `Ready` and `Stalled` conditions and the Warning Event (crds/conditions). */
  readonly reason: StallReason;

  constructor(reason: StallReason, message: string, options?: ErrorOptions) {
    super(message, options);
    this.reason = reason;
  }
}

/** Reason of `Ready` when a reconcile failed in a way NICO did not foresee. */
export const RECONCILE_ERROR = "ReconcileError";

/** The status view of a thrown error: a {@link ClusterProblem} as is, anything else as `ReconcileError`. */
export function problemOf(err: unknown): Problem {
  if (err instanceof ClusterProblem) return { reason: err.reason, message: err.message, blocking: true };
  return { reason: RECONCILE_ERROR, message: errorMessage(err), blocking: false };
}

/**
 * Lets a Warning through once per cluster, reason and message, then again
 * only after `intervalMs`: a stuck cluster does not flood its Events.
 */
export class WarningLimiter {
  readonly #last = new Map<string, { what: string; at: number }>();
  readonly #intervalMs: number;

  constructor(intervalMs = 10 * 60_000) {
    this.#intervalMs = intervalMs;
  }

  /** Whether to record this Warning for `key` now. */
  allow(key: string, reason: string, message: string, now: number): boolean {
    const what = `${reason}\n${message}`;
    const last = this.#last.get(key);
    if (last && last.what === what && now - last.at < this.#intervalMs) return false;
    this.#last.set(key, { what, at: now });
    return true;
  }

  /** Forgets `key` (its problem is gone, or the cluster is). */
  clear(key: string): void {
    this.#last.delete(key);
  }
}
