/**
 * A work queue of string keys with client-go's guarantees: a waiting key is
 * queued once however often it is added, a key is handed to one worker at a
 * time, and failed keys come back after a rate-limited delay.
 *
 * @module
 */
import { defaultRateLimiter, type RateLimiter } from "./ratelimit.ts";

/** Observations for metrics; durations are in seconds. */
export interface QueueHooks {
  /** A key entered the queue (repeated adds of a waiting key are not counted). */
  add?(key: string): void;
  /** A key was re-added through {@link WorkQueue.addRateLimited}. */
  retry?(key: string): void;
  /** The number of keys waiting for a worker changed. */
  depth?(depth: number): void;
  /** How long a key waited in the queue before a worker took it. */
  queueDuration?(seconds: number): void;
  /** How long a worker held a key (from `get` to `done`). */
  workDuration?(seconds: number): void;
}

/** Options of {@link WorkQueue}. */
export interface WorkQueueOptions {
  /** Delays of {@link WorkQueue.addRateLimited} (default {@link defaultRateLimiter}). */
  rateLimiter?: RateLimiter;
  hooks?: QueueHooks;
  /** Clock in milliseconds for duration hooks (default `performance.now`). */
  now?: () => number;
}

/** Counters of a {@link WorkQueue}. */
export interface QueueStats {
  /** Keys that entered the queue, in total. */
  adds: number;
  /** Rate-limited re-adds, in total. */
  retries: number;
  /** Keys waiting for a worker. */
  depth: number;
  /** Keys held by workers. */
  processing: number;
  /** Keys scheduled by `addAfter`/`addRateLimited` that are not yet due. */
  delayed: number;
}

interface Delayed {
  at: number;
  timer: ReturnType<typeof setTimeout>;
}

/** A deduplicating, rate-limited, delaying work queue of keys. */
export class WorkQueue {
  readonly #limiter: RateLimiter;
  readonly #hooks: QueueHooks;
  readonly #now: () => number;
  /** Keys waiting for a worker, in order. */
  #queue: string[] = [];
  /** Keys that need processing: waiting, or re-added while being processed. */
  readonly #dirty = new Set<string>();
  /** Keys held by a worker. */
  readonly #processing = new Set<string>();
  readonly #enqueuedAt = new Map<string, number>();
  readonly #startedAt = new Map<string, number>();
  readonly #delayed = new Map<string, Delayed>();
  /** The "look again" of each key's latest reconcile (see {@link lookAgain}). */
  readonly #looks = new Map<string, ReturnType<typeof setTimeout>>();
  #waiters: ((key: string | undefined) => void)[] = [];
  #shuttingDown = false;
  #adds = 0;
  #retries = 0;

  constructor(opts: WorkQueueOptions = {}) {
    this.#limiter = opts.rateLimiter ?? defaultRateLimiter();
    this.#hooks = opts.hooks ?? {};
    this.#now = opts.now ?? (() => performance.now());
  }

  /** Queues `key` unless it is already waiting; a key being processed is queued again after `done`. */
  add(key: string): void {
    if (this.#shuttingDown || this.#dirty.has(key)) return;
    this.#dirty.add(key);
    this.#adds++;
    this.#hooks.add?.(key);
    if (this.#processing.has(key)) return;
    this.#push(key);
  }

  /** Queues `key` after `ms` milliseconds; an earlier pending schedule of the same key wins. */
  addAfter(key: string, ms: number): void {
    if (this.#shuttingDown) return;
    if (!(ms > 0)) {
      this.add(key);
      return;
    }
    const at = this.#now() + ms;
    const pending = this.#delayed.get(key);
    if (pending) {
      if (pending.at <= at) return;
      clearTimeout(pending.timer);
    }
    const timer = setTimeout(() => {
      this.#delayed.delete(key);
      this.add(key);
    }, ms);
    this.#delayed.set(key, { at, timer });
  }

  /**
   * Queues `key` after `ms` unless a pass of it is already due (queued, or
   * queued again behind the one running): that pass will see what caused
   * this call. Bursts of events make one pass.
   */
  addSoon(key: string, ms: number): void {
    if (this.#dirty.has(key)) return;
    this.addAfter(key, ms);
  }

  /**
   * Queues `key` after `ms` as its latest reconcile asked, replacing what an
   * earlier reconcile of it asked (`undefined`: cancels it): the latest pass
   * knows best, so a settled key is not looked at again a minute later
   * because a busy pass once said so. Event and retry delays are untouched.
   */
  lookAgain(key: string, ms: number | undefined): void {
    const previous = this.#looks.get(key);
    if (previous !== undefined) clearTimeout(previous);
    this.#looks.delete(key);
    if (this.#shuttingDown || ms === undefined) return;
    this.#looks.set(
      key,
      setTimeout(() => {
        this.#looks.delete(key);
        this.add(key);
      }, Math.max(0, ms)),
    );
  }

  /** Queues `key` after its rate-limited delay (per-key backoff, overall bucket). */
  addRateLimited(key: string): void {
    if (this.#shuttingDown) return;
    this.#retries++;
    this.#hooks.retry?.(key);
    this.addAfter(key, this.#limiter.when(key));
  }

  /** Resets the backoff of `key` (call it when `key` was processed successfully). */
  forget(key: string): void {
    this.#limiter.forget(key);
  }

  /** How often `key` was rate limited since it was last forgotten. */
  retries(key: string): number {
    return this.#limiter.retries(key);
  }

  /**
   * The next key, waiting for one if the queue is empty; `undefined` once the
   * queue is shut down. The caller must call {@link done} with the key.
   */
  get(): Promise<string | undefined> {
    if (this.#shuttingDown) return Promise.resolve(undefined);
    if (this.#queue.length > 0) return Promise.resolve(this.#take());
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  /** Marks `key` as processed; if it was added meanwhile it is queued again. */
  done(key: string): void {
    if (!this.#processing.delete(key)) return;
    const started = this.#startedAt.get(key);
    this.#startedAt.delete(key);
    if (started !== undefined) this.#hooks.workDuration?.((this.#now() - started) / 1000);
    if (this.#dirty.has(key) && !this.#shuttingDown) this.#push(key);
  }

  /** Keys waiting for a worker. */
  len(): number {
    return this.#queue.length;
  }

  /** Whether {@link shutDown} was called. */
  get shuttingDown(): boolean {
    return this.#shuttingDown;
  }

  /** Counters for metrics. */
  stats(): QueueStats {
    return {
      adds: this.#adds,
      retries: this.#retries,
      depth: this.#queue.length,
      processing: this.#processing.size,
      delayed: this.#delayed.size + this.#looks.size,
    };
  }

  /**
   * Stops intake: adds are ignored, delayed keys are dropped (no timer is
   * left behind) and every `get` answers `undefined`. Keys already handed to
   * workers may still be passed to `done`.
   */
  shutDown(): void {
    if (this.#shuttingDown) return;
    this.#shuttingDown = true;
    for (const d of this.#delayed.values()) clearTimeout(d.timer);
    this.#delayed.clear();
    for (const t of this.#looks.values()) clearTimeout(t);
    this.#looks.clear();
    this.#queue = [];
    this.#enqueuedAt.clear();
    this.#hooks.depth?.(0);
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const w of waiters) w(undefined);
  }

  #push(key: string): void {
    this.#queue.push(key);
    this.#enqueuedAt.set(key, this.#now());
    this.#hooks.depth?.(this.#queue.length);
    while (this.#waiters.length > 0 && this.#queue.length > 0) {
      const waiter = this.#waiters.shift()!;
      waiter(this.#take());
    }
  }

  #take(): string {
    const key = this.#queue.shift()!;
    const now = this.#now();
    const enqueued = this.#enqueuedAt.get(key);
    this.#enqueuedAt.delete(key);
    this.#dirty.delete(key);
    this.#processing.add(key);
    this.#startedAt.set(key, now);
    this.#hooks.depth?.(this.#queue.length);
    if (enqueued !== undefined) this.#hooks.queueDuration?.((now - enqueued) / 1000);
    return key;
  }
}
