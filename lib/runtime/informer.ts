/**
 * An informer: lists one resource, then watches it from the list's
 * resourceVersion, keeps a local cache and tells handlers what changed.
 *
 * - A watch the server ends (its `timeoutSeconds` elapsed) is resumed from
 *   the last resourceVersion seen, bookmarks included.
 * - A 410 Gone relists and emits synthetic events for the differences.
 * - Any other error is logged and retried with capped exponential backoff;
 *   the informer never stops on its own.
 * - Every `resyncMs` each cached object is re-emitted as an `update`
 *   without calling the API server.
 *
 * @module
 */
import type { KubeClient, KubeObject, WatchEvent } from "../kube/client.ts";
import { isGone } from "../kube/errors.ts";
import type { Resource } from "../kube/resources.ts";
import { errorMessage, jsonLogger, type Logger, withFields } from "./log.ts";
import { keyOf, objectKey } from "./keys.ts";
import { sleep } from "./sleep.ts";
import { type CacheEvent, diffSnapshot, type EventType } from "./snapshot.ts";
import { type IndexFunc, Store } from "./store.ts";

/** Called for every change; `old` is the cached object for updates and deletes. */
export type EventHandler<T> = (type: EventType, obj: T, old?: T) => void;

/** Options of {@link Informer}. */
export interface InformerOptions {
  /** Only this namespace (default: all namespaces). */
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  /** Interval of the cache resync, in milliseconds (default 10 min; 0 turns it off). */
  resyncMs?: number;
  /** Base `timeoutSeconds` of each watch; each watch adds up to the same again as jitter (default 300). */
  watchTimeoutSeconds?: number;
  /** First retry delay after an error, in milliseconds (default 500). */
  minBackoffMs?: number;
  /** Largest retry delay, in milliseconds (default 30 s). */
  maxBackoffMs?: number;
  logger?: Logger;
  /** Drops more of each object than `metadata.managedFields` before it enters the cache: what no reader reads. */
  trim?: (obj: KubeObject) => void;
}

/** Counters of an {@link Informer}. */
export interface InformerStats {
  /** Successful lists (the first one, then one per relist). */
  lists: number;
  /** Watches opened. */
  watches: number;
  /** Watches that ended with 410 Gone. */
  gone: number;
  /** Failed lists and watches, other than 410. */
  errors: number;
  /** Resyncs done. */
  resyncs: number;
}

/** A client-side cache of one resource, kept current by list and watch. */
export class Informer<T extends KubeObject = KubeObject> {
  readonly resource: Resource;
  readonly #client: KubeClient;
  readonly #opts: InformerOptions;
  readonly #log: Logger;
  readonly #cache = new Store<T>();
  readonly #handlers = new Set<EventHandler<T>>();
  #resourceVersion = "";
  #synced = false;
  #resolveSynced!: () => void;
  readonly #syncedPromise: Promise<void>;
  #abort: AbortController | undefined;
  #loop: Promise<void> | undefined;
  #resyncTimer: ReturnType<typeof setTimeout> | undefined;
  #unlink: (() => void) | undefined;
  readonly #stats: InformerStats = { lists: 0, watches: 0, gone: 0, errors: 0, resyncs: 0 };

  constructor(client: KubeClient, resource: Resource, opts: InformerOptions = {}) {
    this.#client = client;
    this.resource = resource;
    this.#opts = opts;
    this.#log = withFields(opts.logger ?? jsonLogger(), {
      informer: resource.plural,
      ...(opts.namespace ? { namespace: opts.namespace } : {}),
    });
    this.#syncedPromise = new Promise((resolve) => (this.#resolveSynced = resolve));
  }

  /** Adds a handler; returns a function that removes it. Handlers must not throw or block. */
  onEvent(handler: EventHandler<T>): () => void {
    this.#handlers.add(handler);
    return () => this.#handlers.delete(handler);
  }

  /** Whether the first list has filled the cache. */
  hasSynced(): boolean {
    return this.#synced;
  }

  /** Resolves once the first list has filled the cache. */
  synced(): Promise<void> {
    return this.#syncedPromise;
  }

  /** Whether {@link start} was called and {@link stop} not yet. */
  get running(): boolean {
    return this.#abort !== undefined && !this.#abort.signal.aborted;
  }

  /** The last resourceVersion seen (list, event or bookmark). */
  get resourceVersion(): string {
    return this.#resourceVersion;
  }

  /** Counters, for metrics and tests. */
  stats(): InformerStats {
    return { ...this.#stats };
  }

  /** A cached object (treat it as read-only). */
  get(namespace: string | undefined, name: string): T | undefined {
    return this.#cache.get(keyOf(this.resource.namespaced ? namespace : undefined, name));
  }

  /** Cached objects, optionally of one namespace (an index lookup, not a scan). */
  list(namespace?: string): T[] {
    return this.#cache.list(namespace);
  }

  /** Adds a named index (lib/runtime/store.ts), kept on every event and relist; built at once from the cache. */
  addIndex(name: string, fn: IndexFunc<T>): this {
    this.#cache.addIndex(name, fn);
    return this;
  }
  hasIndex(name: string): boolean {
    return this.#cache.hasIndex(name);
  }
  /** Cached objects the index `name` holds under `value` (a lookup). */
  byIndex(name: string, value: string): T[] {
    return this.#cache.byIndex(name, value);
  }

  /** Cached objects whose label `key` equals `value`, optionally of one namespace (a scan). */
  byLabel(key: string, value: string, namespace?: string): T[] {
    return this.filter((o) =>
      o.metadata.labels?.[key] === value && (namespace === undefined || o.metadata.namespace === namespace)
    );
  }

  /** Cached objects matching `pred` (a scan of the whole cache). */
  filter(pred: (obj: T) => boolean): T[] {
    const out: T[] = [];
    for (const obj of this.#cache.values()) if (pred(obj)) out.push(obj);
    return out;
  }

  /**
   * Starts listing and watching in the background; aborting `signal` stops
   * it like {@link stop}. An informer runs once: calling `start` again, even
   * after `stop`, does nothing.
   */
  start(signal?: AbortSignal): void {
    if (this.#abort) return;
    const abort = new AbortController();
    this.#abort = abort;
    if (signal) {
      if (signal.aborted) abort.abort();
      const onAbort = () => abort.abort();
      signal.addEventListener("abort", onAbort, { once: true });
      this.#unlink = () => signal.removeEventListener("abort", onAbort);
    }
    this.#loop = this.#run(abort.signal);
  }

  /**
   * Stops: aborts the watch in flight, clears timers and waits for the loop
   * to end. A list in flight is not abortable (`KubeClient.list` takes no
   * signal) and is awaited, bounded by the client's request timeout.
   */
  async stop(): Promise<void> {
    this.#abort?.abort();
    this.#unlink?.();
    this.#unlink = undefined;
    this.#clearResync();
    await this.#loop;
  }

  async #run(signal: AbortSignal): Promise<void> {
    const minBackoff = this.#opts.minBackoffMs ?? 500;
    const maxBackoff = this.#opts.maxBackoffMs ?? 30_000;
    let backoff = minBackoff;
    let needList = true;
    let recovering = false;
    try {
      while (!signal.aborted) {
        try {
          if (needList) {
            await this.#relist();
            // A list after an error does not reset the back-off: a server that lists but cannot watch is not hammered.
            if (!recovering) backoff = minBackoff;
            needList = false;
          }
          if (signal.aborted) break;
          const started = performance.now();
          const events = await this.#watchOnce(signal);
          if (events > 0 || performance.now() - started >= 500) {
            backoff = minBackoff;
            recovering = false;
          } else {
            // The server closed an empty watch at once: do not spin.
            await sleep(backoff, signal);
            backoff = Math.min(backoff * 2, maxBackoff);
          }
        } catch (err) {
          if (signal.aborted) break;
          if (isGone(err)) {
            this.#stats.gone++;
            this.#log.info("watch expired, relisting", { resourceVersion: this.#resourceVersion });
            needList = true;
            continue;
          }
          this.#stats.errors++;
          this.#log.error(needList ? "list failed" : "watch failed", { error: errorMessage(err), retryInMs: backoff });
          // The server went away: what it serves when it is back may not continue this resourceVersion (a restored
          // etcd, a new one); a list puts the cache right either way.
          needList = true;
          recovering = true;
          await sleep(backoff, signal);
          backoff = Math.min(backoff * 2, maxBackoff);
        }
      }
    } finally {
      this.#clearResync();
    }
  }

  async #relist(): Promise<void> {
    const { items, resourceVersion } = await this.#client.list<T>(this.resource, this.#listOptions());
    for (const item of items) this.#trim(item);
    if (this.#abort?.signal.aborted) return;
    this.#stats.lists++;
    const { next, events } = diffSnapshot(this.#cache, items);
    // The store takes the differences (the indexes with them); unchanged objects keep their cached copy.
    for (const e of events) {
      if (e.type === "delete") this.#cache.delete(objectKey(e.obj));
      else this.#cache.set(next.get(objectKey(e.obj))!);
    }
    this.#resourceVersion = resourceVersion;
    this.#log.debug("listed", { items: items.length, resourceVersion, changes: events.length });
    for (const e of events) this.#emit(e);
    if (!this.#synced) {
      this.#synced = true;
      this.#resolveSynced();
      this.#scheduleResync();
    }
  }

  /** One watch, until the server closes it; answers how many events it carried. */
  async #watchOnce(stop: AbortSignal): Promise<number> {
    const base = this.#opts.watchTimeoutSeconds ?? 300;
    const timeoutSeconds = Math.max(1, Math.floor(base * (1 + Math.random())));
    // A watchdog for connections that die silently: the server should have closed by then.
    const watchdog = new AbortController();
    const timer = setTimeout(() => watchdog.abort(), (timeoutSeconds + 30) * 1000);
    let count = 0;
    this.#stats.watches++;
    this.#log.debug("watching", { resourceVersion: this.#resourceVersion, timeoutSeconds });
    try {
      const stream = this.#client.watch<T>(this.resource, {
        ...this.#listOptions(),
        resourceVersion: this.#resourceVersion,
        timeoutSeconds,
        signal: AbortSignal.any([stop, watchdog.signal]),
      });
      for await (const event of stream) {
        count++;
        this.#apply(event);
      }
    } catch (err) {
      if (watchdog.signal.aborted && !stop.aborted) return count;
      throw err;
    } finally {
      clearTimeout(timer);
    }
    return count;
  }

  #apply(event: WatchEvent<T>): void {
    this.#trim(event.object);
    const obj = event.object;
    const rv = obj.metadata?.resourceVersion;
    if (event.type === "BOOKMARK") {
      if (rv) this.#resourceVersion = rv;
      return;
    }
    const key = objectKey(obj);
    const old = this.#cache.get(key);
    if (event.type === "DELETED") {
      this.#cache.delete(key);
      this.#emit({ type: "delete", obj, ...(old ? { old } : {}) });
    } else {
      this.#cache.set(obj);
      this.#emit(old ? { type: "update", obj, old } : { type: "add", obj });
    }
    if (rv) this.#resourceVersion = rv;
  }

  #emit(e: CacheEvent<T>): void {
    for (const handler of this.#handlers) {
      try {
        handler(e.type, e.obj, e.old);
      } catch (err) {
        this.#log.error("event handler failed", { event: e.type, key: objectKey(e.obj), error: errorMessage(err) });
      }
    }
  }

  #scheduleResync(): void {
    const every = this.#opts.resyncMs ?? 600_000;
    if (!(every > 0) || this.#abort?.signal.aborted) return;
    this.#resyncTimer = setTimeout(() => {
      this.#resyncTimer = undefined;
      this.#stats.resyncs++;
      for (const obj of [...this.#cache.values()]) this.#emit({ type: "update", obj, old: obj });
      this.#scheduleResync();
    }, every);
  }

  #clearResync(): void {
    if (this.#resyncTimer !== undefined) clearTimeout(this.#resyncTimer);
    this.#resyncTimer = undefined;
  }

  /** Before an object enters the cache: managedFields (nobody reads them from it, about a third of its memory) and `trim`. */
  #trim(obj: KubeObject): void {
    delete (obj.metadata as { managedFields?: unknown }).managedFields;
    this.#opts.trim?.(obj);
  }

  #listOptions(): { namespace?: string; labelSelector?: string; fieldSelector?: string } {
    const { namespace, labelSelector, fieldSelector } = this.#opts;
    return {
      ...(namespace !== undefined ? { namespace } : {}),
      ...(labelSelector !== undefined ? { labelSelector } : {}),
      ...(fieldSelector !== undefined ? { fieldSelector } : {}),
    };
  }
}
