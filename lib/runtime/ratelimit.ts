/**
 * Rate limiters deciding how long a failed key waits before its retry,
 * modelled on client-go's `workqueue` rate limiters.
 *
 * @module
 */

/** Decides retry delays per key. */
export interface RateLimiter {
  /** The delay before the next retry of `key`, in milliseconds; counts as one retry. */
  when(key: string): number;
  /** Forgets `key`: its next failure starts from the base delay again. */
  forget(key: string): void;
  /** How many times `key` has been rate limited since it was last forgotten. */
  retries(key: string): number;
}

/** Options of {@link ExponentialBackoff}. */
export interface ExponentialBackoffOptions {
  /** Delay of the first retry, in milliseconds (default 5). */
  baseMs?: number;
  /** Largest delay, in milliseconds (default 1000 s). */
  maxMs?: number;
}

/** Per-key exponential backoff: `base * 2^failures`, capped at `max`. */
export class ExponentialBackoff implements RateLimiter {
  readonly baseMs: number;
  readonly maxMs: number;
  readonly #failures = new Map<string, number>();

  constructor(opts: ExponentialBackoffOptions = {}) {
    this.baseMs = opts.baseMs ?? 5;
    this.maxMs = opts.maxMs ?? 1_000_000;
  }

  when(key: string): number {
    const exp = this.#failures.get(key) ?? 0;
    this.#failures.set(key, exp + 1);
    const delay = this.baseMs * 2 ** exp;
    return Number.isFinite(delay) && delay < this.maxMs ? delay : this.maxMs;
  }

  forget(key: string): void {
    this.#failures.delete(key);
  }

  retries(key: string): number {
    return this.#failures.get(key) ?? 0;
  }
}

/** Options of {@link TokenBucket}. */
export interface TokenBucketOptions {
  /** Tokens added per second (default 10). */
  qps?: number;
  /** Bucket size (default 100). */
  burst?: number;
  /** Clock in milliseconds (default `performance.now`). */
  now?: () => number;
}

/**
 * An overall limit shared by all keys: each retry takes a token; when the
 * bucket is empty the retry is scheduled for when its token will exist
 * (like `rate.Limiter.Reserve` in Go).
 */
export class TokenBucket implements RateLimiter {
  readonly qps: number;
  readonly burst: number;
  readonly #now: () => number;
  #tokens: number;
  #last: number;

  constructor(opts: TokenBucketOptions = {}) {
    this.qps = opts.qps ?? 10;
    this.burst = opts.burst ?? 100;
    this.#now = opts.now ?? (() => performance.now());
    this.#tokens = this.burst;
    this.#last = this.#now();
  }

  when(_key: string): number {
    const now = this.#now();
    this.#tokens = Math.min(this.burst, this.#tokens + ((now - this.#last) / 1000) * this.qps);
    this.#last = now;
    this.#tokens -= 1;
    return this.#tokens >= 0 ? 0 : (-this.#tokens / this.qps) * 1000;
  }

  forget(_key: string): void {}

  retries(_key: string): number {
    return 0;
  }
}

/** The longest delay of several limiters; every limiter sees every retry. */
export class MaxOf implements RateLimiter {
  readonly #limiters: RateLimiter[];

  constructor(...limiters: RateLimiter[]) {
    this.#limiters = limiters;
  }

  when(key: string): number {
    let max = 0;
    for (const l of this.#limiters) max = Math.max(max, l.when(key));
    return max;
  }

  forget(key: string): void {
    for (const l of this.#limiters) l.forget(key);
  }

  retries(key: string): number {
    let max = 0;
    for (const l of this.#limiters) max = Math.max(max, l.retries(key));
    return max;
  }
}

/**
 * client-go's default controller rate limiter: per-key exponential backoff
 * (5 ms doubling, capped at 1000 s) and an overall 10 qps / burst 100 bucket.
 */
export function defaultRateLimiter(
  opts: { backoff?: ExponentialBackoffOptions; bucket?: TokenBucketOptions } = {},
): RateLimiter {
  return new MaxOf(new ExponentialBackoff(opts.backoff), new TokenBucket(opts.bucket));
}
