/**
 * How fast the client talks to the API server: a token bucket on NICO's
 * side (a runaway loop cannot flood the API server), and the wait a `429`
 * asks for (API Priority and Fairness rejects with `Retry-After`).
 *
 * @module
 */

/**
 * A token bucket: up to `burst` requests at once, then `qps` a second.
 * {@link TokenBucket.reserve} takes a token now and answers how long to wait
 * for it, so waiters go in the order they came.
 *
 * @example
 * ```ts
 * import { TokenBucket } from "./throttle.ts";
 * let now = 0;
 * const bucket = new TokenBucket(10, 2, () => now);
 * bucket.reserve(); // 0
 * bucket.reserve(); // 0
 * bucket.reserve(); // 100: the third waits for a token
 * ```
 */
export class TokenBucket {
  #tokens: number;
  #last: number;
  constructor(readonly qps: number, readonly burst: number, private readonly now = () => performance.now()) {
    if (!(qps > 0) || !(burst >= 1)) throw new Error("a token bucket needs qps > 0 and burst >= 1");
    this.#tokens = burst;
    this.#last = now();
  }

  /** Takes a token; answers the milliseconds to wait before using it (0: go now). */
  reserve(): number {
    const t = this.now();
    this.#tokens = Math.min(this.burst, this.#tokens + ((t - this.#last) * this.qps) / 1000);
    this.#last = t;
    this.#tokens -= 1;
    return this.#tokens >= 0 ? 0 : Math.ceil((-this.#tokens * 1000) / this.qps);
  }
}

/** The longest wait a `Retry-After` may ask for; longer ones are cut to it. */
export const MAX_RETRY_AFTER_MS = 30_000;

/**
 * The wait a `429` asks for: `Retry-After` in seconds or as an HTTP date,
 * else 1 s; at most {@link MAX_RETRY_AFTER_MS}.
 *
 * @example
 * ```ts
 * import { retryAfterMs } from "./throttle.ts";
 * retryAfterMs("2"); // 2000
 * retryAfterMs(null); // 1000
 * retryAfterMs("3600"); // 30000
 * ```
 */
export function retryAfterMs(header: string | null, now = Date.now()): number {
  const value = header?.trim() ?? "";
  let ms = 1_000;
  if (/^\d+$/.test(value)) ms = Number(value) * 1000;
  else if (value && !Number.isNaN(Date.parse(value))) ms = Date.parse(value) - now;
  return Math.min(MAX_RETRY_AFTER_MS, Math.max(0, ms));
}
