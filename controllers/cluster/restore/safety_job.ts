/**
 * The state of a restore's safety snapshot job (controllers/cluster/restore/safety.ts runs it), kept in the cluster's
 * memory between passes: its request, its result once it ended, and how to stop it.
 *
 * @module
 */

/** What a safety snapshot job ends with: the snapshot's key and the mark written before it, or why not. */
export type SafetyResult = { key: string; marker: string } | { error: string };

/** A safety snapshot job of one request. */
export class SafetyJob {
  readonly requestId: string;
  readonly #abort = new AbortController();
  /** Set when the job ended. */
  result: SafetyResult | undefined;

  constructor(requestId: string) {
    this.requestId = requestId;
  }

  get signal(): AbortSignal {
    return this.#abort.signal;
  }

  stop(): void {
    this.#abort.abort(new Error("the restore's safety snapshot was stopped"));
  }
}
