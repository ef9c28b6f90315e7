/** Abortable waits that leave no timer or listener behind. */

const MAX_TIMER_MS = 2 ** 31 - 1;

/** Resolves after `ms` (capped at about 24 days), or as soon as `signal` aborts; never rejects. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, Math.min(MAX_TIMER_MS, Math.max(0, ms)));
    signal?.addEventListener("abort", done, { once: true });
  });
}

/**
 * Resolves when `promise` settles or `signal` aborts, whichever comes first
 * (with no promise: only when `signal` aborts); never rejects.
 */
export function untilAborted(signal: AbortSignal, promise?: Promise<unknown>): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      signal.removeEventListener("abort", done);
      resolve();
    };
    signal.addEventListener("abort", done, { once: true });
    promise?.then(done, done);
  });
}
