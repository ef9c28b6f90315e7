/**
 * An informer: reads one resource's state (streamed by a watch where the API
 * server offers it, else listed in pages: lib/runtime/initial.ts), then
 * watches it from that resourceVersion, keeps a local cache and tells
 * handlers what changed.
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
import { cacheable } from "./compact.ts";
import { type CacheEvent, diffSnapshot, type EventType } from "./snapshot.ts";
import { type IndexFunc, Store } from "./store.ts";
import { type ReadState, StateReader } from "./initial.ts";
import type { InformerOptions, InformerStats } from "./informer_types.ts";

/** Called for every change; `old` is the cached object for updates and deletes. */
export type EventHandler<T> = (type: EventType, obj: T, old?: T) => void;

export type { InformerOptions, InformerStats } from "./informer_types.ts";

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
  readonly #stats = { lists: 0, watches: 0, gone: 0, errors: 0, resyncs: 0 };
  readonly #reader: StateReader<T>;

  constructor(client: KubeClient, resource: Resource, opts: InformerOptions = {}) {
    this.#client = client;
    this.resource = resource;
    this.#opts = opts;
    this.#log = withFields(opts.logger ?? jsonLogger(), {
      informer: resource.plural,
      ...(opts.namespace ? { namespace: opts.namespace } : {}),
    });
    this.#syncedPromise = new Promise((resolve) => (this.#resolveSynced = resolve));
    this.#reader = new StateReader(client, resource, opts.initialState ?? "stream", this.#log);
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
    const { streamed, pages, streams } = this.#reader.stats;
    return { ...this.#stats, watches: this.#stats.watches + streams, streamed, pages };
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
          let streamed: ReadState<T> | undefined;
          if (needList) {
            streamed = await this.#relist(signal);
            // A list after an error does not reset the back-off: a server that lists but cannot watch is not hammered.
            if (!recovering) backoff = minBackoff;
            needList = false;
          }
          if (signal.aborted) {
            streamed?.done?.();
            break;
          }
          const started = performance.now();
          const events = await this.#watchOnce(signal, streamed);
          // A watch that streamed the state may end with it (the API server closes some at once): not a failure.
          if (events > 0 || streamed?.stream || performance.now() - started >= 500) {
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

  /** Reads the whole state and puts the cache right; answers the watch it came by, when it was streamed. */
  async #relist(signal: AbortSignal): Promise<ReadState<T>> {
    const opts = { ...this.#listOptions(), ...(this.#opts.pageSize ? { limit: this.#opts.pageSize } : {}) };
    const read = await this.#reader.read(opts, (o) => this.#trim(o), signal, this.#watchTimeout().timeoutSeconds);
    if (this.#abort?.signal.aborted) {
      read.done?.();
      await read.stream?.return(undefined);
      return {} as ReadState<T>;
    }
    this.#stats.lists++;
    const { items, resourceVersion } = read.state;
    const { next, events } = diffSnapshot(this.#cache, [...items.values()]);
    // The store takes the differences (the indexes with them); unchanged objects keep their cached copy.
    for (const e of events) {
      if (e.type === "delete") this.#cache.delete(objectKey(e.obj));
      else this.#cache.set(next.get(objectKey(e.obj))!);
    }
    this.#resourceVersion = resourceVersion;
    this.#log.debug("listed", {
      items: items.size,
      resourceVersion,
      changes: events.length,
      paged: this.#reader.paged,
    });
    for (const e of events) this.#emit(e);
    if (!this.#synced) {
      this.#synced = true;
      this.#resolveSynced();
      this.#scheduleResync();
    }
    return read;
  }

  /** A watch's `timeoutSeconds`: the base, plus up to the same again as jitter. */
  #watchTimeout(): { timeoutSeconds: number } {
    const base = this.#opts.watchTimeoutSeconds ?? 300;
    return { timeoutSeconds: Math.max(1, Math.floor(base * (1 + Math.random()))) };
  }

  /** One watch (or the rest of the one the state was streamed by), until it ends; answers how many events it had. */
  async #watchOnce(stop: AbortSignal, streamed?: ReadState<T>): Promise<number> {
    const { timeoutSeconds } = this.#watchTimeout();
    const open = streamed?.stream;
    // A watchdog for connections that die silently: the server should have closed by then.
    const watchdog = new AbortController();
    const timer = setTimeout(() => watchdog.abort(), (timeoutSeconds + 30) * 1000);
    let count = 0;
    if (!open) this.#stats.watches++;
    this.#log.debug("watching", { resourceVersion: this.#resourceVersion, timeoutSeconds });
    try {
      const stream = open ?? this.#client.watch<T>(this.resource, {
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
      if ((watchdog.signal.aborted || streamed?.deadline?.aborted) && !stop.aborted) return count;
      throw err;
    } finally {
      clearTimeout(timer);
      streamed?.done?.();
    }
    return count;
  }

  #apply(event: WatchEvent<T>): void {
    const obj = this.#trim(event.object);
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

  /** What enters the cache for `obj` (./compact.ts). */
  #trim(obj: T): T {
    return cacheable(obj, this.#opts.trim);
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
