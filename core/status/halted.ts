/**
 * When a halted rollout is worth a Warning Event: the `Stalled` condition
 * turned True, or names a new reason, in this pass.
 *
 * @module
 */

/** A condition, as far as this needs it. */
interface Cond {
  type: string;
  status: string;
  reason?: string | undefined;
  message?: string | undefined;
}

/**
 * The `Stalled` condition (reason and message: `VersionSkew`, `NodeFailed`, ...) when it turns True or names a new
 * reason between `before` and `after`; undefined otherwise. The Event it calls for is told once per halt.
 */
export function haltedNow(
  before: readonly Cond[] | undefined,
  after: readonly Cond[] | undefined,
): { reason: string; message: string } | undefined {
  const now = after?.find((c) => c.type === "Stalled");
  if (now?.status !== "True" || !now.reason) return undefined;
  const was = before?.find((c) => c.type === "Stalled");
  if (was?.status === "True" && was.reason === now.reason) return undefined;
  return { reason: now.reason, message: now.message ?? "" };
}
