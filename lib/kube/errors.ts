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
  ) {
    super(`${method} ${path}: ${status} ${reason}: ${message}`);
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

/** The API server refused the object (schema, CEL rule or admission). */
export function isInvalid(err: unknown): boolean {
  const s = statusOf(err);
  return s === 422 || s === 400 ||
    (err instanceof ApiError && err.reason === "Forbidden" && /admission webhook/.test(err.message));
}
