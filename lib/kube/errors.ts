/** Errors from the Kubernetes API, with the checks callers need. */

/** A non-2xx answer from the API server, carrying its `Status` reason. */
export class ApiError extends Error {
  override readonly name = "ApiError";
  constructor(
    readonly status: number,
    readonly reason: string,
    message: string,
    readonly method: string,
    readonly path: string,
    /** The Status's `details.causes`, when the server gave any (an eviction names the budget that refused it). */
    readonly causes: readonly { reason?: string; message?: string; field?: string }[] = [],
  ) {
    super(`${method} ${path}: ${status} ${reason}: ${message}`);
  }
}

/**
 * A write this client refused to send: its write gate was closed (the
 * replica may no longer be the leader). Nothing reached the API server.
 */
export class WriteRefusedError extends Error {
  override readonly name = "WriteRefusedError";
  constructor(readonly method: string, readonly path: string) {
    super(`${method} ${path}: not sent: this replica may no longer be the leader`);
  }
}

function statusOf(err: unknown): number | undefined {
  return err instanceof ApiError ? err.status : undefined;
}

/** The object does not exist. */
export function isNotFound(err: unknown): boolean {
  return statusOf(err) === 404;
}

/** A resourceVersion precondition failed, or a create found the name taken. */
export function isConflict(err: unknown): boolean {
  return statusOf(err) === 409;
}

/** A create found the name taken. */
export function isAlreadyExists(err: unknown): boolean {
  return err instanceof ApiError && err.status === 409 && err.reason === "AlreadyExists";
}

/** A watch or list asked for a resourceVersion the server no longer has. */
export function isGone(err: unknown): boolean {
  return statusOf(err) === 410;
}

/** The request was well formed but refused: a schema or CEL rule, or a failed JSON-patch `test`. */
export function isUnprocessable(err: unknown): boolean {
  return statusOf(err) === 422;
}
