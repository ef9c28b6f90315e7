/**
 * A controller: informers enqueue keys, workers reconcile them.
 *
 * Level-triggered: events only say which keys to look at; the reconciler
 * reads the current state itself (usually from an informer's cache).
 *
 * @module
 */
import type { KubeObject } from "../kube/client.ts";
import type { Informer } from "./informer.ts";
import { objectKey } from "./keys.ts";
import { errorMessage, jsonLogger, type Logger, withFields } from "./log.ts";
import { type QueueHooks, WorkQueue } from "./queue.ts";
import type { RateLimiter } from "./ratelimit.ts";
import { sleep, untilAborted } from "./sleep.ts";
import type { EventType } from "./snapshot.ts";

/** Thrown by a reconciler for a failure retrying cannot fix: logged, not retried. */
export class TerminalError extends Error {
  override readonly name = "TerminalError";
}

/** What a reconcile asks for: nothing, or another look after `requeueAfter` milliseconds. */
export type ReconcileResult = { requeueAfter?: number } | void;

/**
 * Brings the object behind `key` to its desired state. `signal` aborts at
 * forced shutdown: pass it to every request (`client.with({ signal })`).
 * `log` carries the key and the reconcile ID the runtime minted for this pass.
 */
export type Reconciler = (key: string, signal: AbortSignal, log: Logger) => Promise<ReconcileResult>;

/** How one reconcile ended. */
export type ReconcileOutcome = "success" | "requeue" | "error" | "terminal";

/** Maps an informer event to the keys to reconcile (none, one or several). */
export type KeyMapper<T> = (obj: T, type: EventType, old: T | undefined) => string | readonly string[] | undefined;

/** How the events of one watched informer enqueue keys. */
export interface WatchOptions<T> {
  /**
   * Wait this long before queueing a key: events that arrive meanwhile for
   * the same key (a child's progress, then its owner's write-back) make one
   * reconcile, not one each. A key already waiting is not delayed further.
   */
  coalesceMs?: number;
  /** Events for which this answers true enqueue nothing (such as the controller's own status writes). */
  skip?: (obj: T, type: EventType, old: T | undefined) => boolean;
}

/** Observations for metrics; durations are in seconds. */
export interface ControllerHooks {
  /** A reconcile ended. */
  reconciled?(outcome: ReconcileOutcome, seconds: number, key: string): void;
  /** Hooks of the controller's queue. */
  queue?: QueueHooks;
}

/** Options of {@link Controller}. */
export interface ControllerOptions {
  /** Name in logs and metrics. */
  name: string;
  /** Concurrent reconciles (default 1); one key is never reconciled twice at once. */
  workers?: number;
  /**
   * How long in-flight reconciles may take to finish after `run`'s signal
   * aborts (default 30 s); then their signal aborts, and `run` waits at most
   * a second more for them to notice.
   */
  shutdownTimeoutMs?: number;
  rateLimiter?: RateLimiter;
  logger?: Logger;
  hooks?: ControllerHooks;
}

/** How long `run` waits for aborted reconciles to end after the grace period. */
const ABORT_GRACE_MS = 1000;

/** Owns a work queue and its workers, fed by informers. */
export class Controller {
  readonly name: string;
  readonly queue: WorkQueue;
  readonly #reconcile: Reconciler;
  readonly #workers: number;
  readonly #shutdownTimeoutMs: number;
  readonly #log: Logger;
  readonly #hooks: ControllerHooks;
  readonly #informers: Informer<KubeObject>[] = [];
  readonly #unsubscribe: (() => void)[] = [];
  #started = false;
  #inFlight = 0;

  constructor(opts: ControllerOptions, reconcile: Reconciler) {
    this.name = opts.name;
    this.#reconcile = reconcile;
    this.#workers = Math.max(1, Math.floor(opts.workers ?? 1));
    this.#shutdownTimeoutMs = opts.shutdownTimeoutMs ?? 30_000;
    this.#log = withFields(opts.logger ?? jsonLogger(), { controller: opts.name });
    this.#hooks = opts.hooks ?? {};
    this.queue = new WorkQueue({
      ...(opts.rateLimiter ? { rateLimiter: opts.rateLimiter } : {}),
      ...(opts.hooks?.queue ? { hooks: opts.hooks.queue } : {}),
    });
  }

  /**
   * Enqueues the keys `map` returns for each event of `informer` (default:
   * the object's own key). Call before {@link run}; `run` waits for the
   * informer to sync, and starts it (and stops it afterwards) if nobody has.
   */
  watch<T extends KubeObject>(
    informer: Informer<T>,
    map: KeyMapper<T> = (obj) => objectKey(obj),
    opts: WatchOptions<T> = {},
  ): this {
    if (this.#started) throw new Error(`controller ${this.name}: watch() must be called before run()`);
    this.#informers.push(informer as unknown as Informer<KubeObject>);
    this.#unsubscribe.push(informer.onEvent((type, obj, old) => {
      let keys: string | readonly string[] | undefined;
      try {
        keys = map(obj, type, old);
      } catch (err) {
        this.#log.error("mapping an event to keys failed", {
          event: type,
          key: objectKey(obj),
          error: errorMessage(err),
        });
        return;
      }
      if (keys === undefined) return;
      if (opts.skip?.(obj, type, old)) return;
      const add = opts.coalesceMs
        ? (k: string) => this.queue.addSoon(k, opts.coalesceMs!)
        : (k: string) => this.queue.add(k);
      if (typeof keys === "string") add(keys);
      else for (const k of keys) add(k);
    }));
    return this;
  }

  /** Enqueues a key directly. */
  enqueue(key: string): void {
    this.queue.add(key);
  }

  /** Reconciles currently running. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /**
   * Waits for every informer to sync, then reconciles until `signal` aborts.
   * Shutdown stops intake, gives in-flight reconciles `shutdownTimeoutMs` to
   * finish (then aborts their signal) and resolves.
   */
  async run(signal: AbortSignal): Promise<void> {
    if (this.#started) throw new Error(`controller ${this.name} is already running`);
    this.#started = true;
    const owned = this.#informers.filter((i) => !i.running);
    for (const informer of owned) informer.start(signal);
    const force = new AbortController();
    try {
      this.#log.info("waiting for informers to sync", { informers: this.#informers.length });
      await untilAborted(signal, Promise.all(this.#informers.map((i) => i.synced())));
      if (signal.aborted) return;
      this.#log.info("starting workers", { workers: this.#workers });
      const workers: Promise<void>[] = [];
      for (let i = 0; i < this.#workers; i++) workers.push(this.#worker(force.signal));
      await untilAborted(signal);

      this.queue.shutDown();
      const finished = Promise.all(workers).then(() => true);
      const timeout = new AbortController();
      const inTime = await Promise.race([finished, sleep(this.#shutdownTimeoutMs, timeout.signal).then(() => false)]);
      timeout.abort();
      if (!inTime) {
        this.#log.error("reconciles did not finish in time, aborting them", {
          inFlight: this.#inFlight,
          timeoutMs: this.#shutdownTimeoutMs,
        });
        force.abort();
        const late = new AbortController();
        await Promise.race([finished, sleep(ABORT_GRACE_MS, late.signal)]);
        late.abort();
      }
      this.#log.info("stopped");
    } finally {
      this.queue.shutDown();
      for (const off of this.#unsubscribe.splice(0)) off();
      await Promise.all(owned.map((i) => i.stop()));
    }
  }

  async #worker(force: AbortSignal): Promise<void> {
    while (true) {
      const key = await this.queue.get();
      if (key === undefined) return;
      try {
        await this.#process(key, force);
      } finally {
        this.queue.done(key);
      }
    }
  }

  async #process(key: string, force: AbortSignal): Promise<void> {
    const started = performance.now();
    let outcome: ReconcileOutcome;
    const log = withFields(this.#log, { key, reconcileID: crypto.randomUUID().slice(0, 8) });
    this.#inFlight++;
    try {
      const result = await this.#reconcile(key, force, log);
      this.queue.forget(key);
      const after = result?.requeueAfter;
      // The latest pass's wish replaces an earlier one's (a settled key is not revisited on a stale timer).
      if (after !== undefined && after > 0) {
        this.queue.lookAgain(key, after);
        outcome = "requeue";
      } else {
        this.queue.lookAgain(key, undefined);
        outcome = "success";
      }
      log.debug("reconciled", { outcome, ...(outcome === "requeue" ? { requeueAfterMs: after } : {}) });
    } catch (err) {
      if (err instanceof TerminalError) {
        this.queue.forget(key);
        outcome = "terminal";
        log.error("reconcile failed permanently, not retrying", { error: errorMessage(err) });
      } else {
        outcome = "error";
        log.error("reconcile failed, retrying", {
          error: errorMessage(err),
          retries: this.queue.retries(key) + 1,
        });
        this.queue.addRateLimited(key);
      }
    } finally {
      this.#inFlight--;
    }
    try {
      this.#hooks.reconciled?.(outcome, (performance.now() - started) / 1000, key);
    } catch (err) {
      this.#log.error("reconciled hook failed", { error: errorMessage(err) });
    }
  }
}
