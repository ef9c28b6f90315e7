/**
 * An informer's initial state, without ever holding one large list: read in
 * pages (each page trimmed before the next is read), or streamed by a watch
 * that starts with every object and a bookmark marking the end
 * (`sendInitialEvents`, KEP-3157; client-go's `WatchList`), where the API
 * server offers it. A server that does not is recognised (it refuses the
 * parameter, or its watch says nothing of an end) and the informer falls back
 * to pages.
 *
 * @module
 */
import type { KubeClient, KubeObject, WatchEvent } from "../kube/client.ts";
import { ApiError, isGone } from "../kube/errors.ts";
import type { Resource } from "../kube/resources.ts";
import { INITIAL_EVENTS_END, type ListOptions } from "../kube/types.ts";
import { objectKey } from "./keys.ts";
import type { Logger } from "./log.ts";

/** How an informer reads its initial state (see the module). */
export type InitialState = "stream" | "pages";

/** A full state: every object by key, and the resourceVersion it is as of. */
export interface Snapshot<T> {
  items: Map<string, T>;
  resourceVersion: string;
}

/**
 * The server did not stream the initial state: list in pages instead, from now on when it refused the parameter
 * (`refused`), else this time only (a watch that ended before the end of its state).
 */
export class StreamNotOffered extends Error {
  override readonly name = "StreamNotOffered";
  constructor(message: string, readonly refused = true) {
    super(message);
  }
}

/** How many times a paged list starts again after its `continue` token expired, before the error is the caller's. */
const PAGED_RESTARTS = 3;

/**
 * Every object, a page of `limit` at a time, each trimmed as its page arrives. A `continue` token the server no longer
 * knows (410) starts the list again from the first page.
 */
export async function listInPages<T extends KubeObject>(
  client: KubeClient,
  resource: Resource,
  opts: ListOptions,
  trim: (o: T) => T,
): Promise<Snapshot<T> & { pages: number }> {
  for (let attempt = 0;; attempt++) {
    const items = new Map<string, T>();
    let resourceVersion = "";
    let pages = 0;
    try {
      for await (const page of client.listPages<T>(resource, opts)) {
        pages++;
        for (const listed of page.items) {
          const item = trim(listed);
          items.set(objectKey(item), item);
        }
        resourceVersion = page.resourceVersion;
      }
      return { items, resourceVersion, pages };
    } catch (err) {
      // A 410 on the first page is not an expired token: the caller's to handle.
      if (!isGone(err) || pages === 0 || attempt >= PAGED_RESTARTS) throw err;
    }
  }
}

/** The 4xx answers by which a server refuses `sendInitialEvents` (the WatchList feature off, or unknown). */
const REFUSALS = new Set([400, 403, 404, 405, 406, 415, 422, 501]);

/**
 * Opens a watch with the streamed initial state and reads it up to the bookmark that ends it: answers the state and
 * the same watch, to read on. Throws {@link StreamNotOffered} when the server refuses the parameter, sends a bookmark
 * that is not the end first, or ends the watch before the end; a 410 or a broken connection as they come.
 */
export async function streamInitial<T extends KubeObject>(
  client: KubeClient,
  resource: Resource,
  opts: ListOptions & { timeoutSeconds: number; signal: AbortSignal },
  trim: (o: T) => T,
): Promise<Snapshot<T> & { rest: AsyncGenerator<WatchEvent<T>> }> {
  const stream = client.watch<T>(resource, { ...opts, sendInitialEvents: true });
  const items = new Map<string, T>();
  while (true) {
    let next: IteratorResult<WatchEvent<T>>;
    try {
      next = await stream.next();
    } catch (err) {
      if (err instanceof ApiError && REFUSALS.has(err.status) && items.size === 0) {
        throw new StreamNotOffered(`the API server refused sendInitialEvents: ${err.message}`);
      }
      throw err;
    }
    if (next.done) throw new StreamNotOffered("the watch ended before its initial state did", false);
    const type = next.value.type;
    const object = trim(next.value.object);
    if (type === "BOOKMARK") {
      if (object.metadata.annotations?.[INITIAL_EVENTS_END] !== "true") {
        await stream.return(undefined);
        throw new StreamNotOffered("the API server sent a bookmark without the end of the initial state");
      }
      return { items, resourceVersion: object.metadata.resourceVersion ?? "", rest: stream };
    }
    if (type === "DELETED") items.delete(objectKey(object));
    else items.set(objectKey(object), object);
  }
}

/** What {@link StateReader.read} answers: the state, and the watch it was streamed by (to read on), if it was. */
export interface ReadState<T> {
  state: Snapshot<T>;
  stream?: AsyncGenerator<WatchEvent<T>> | undefined;
  /** Aborts the streamed watch when the server should have closed it (a connection that died silently). */
  deadline?: AbortSignal | undefined;
  /** Ends that deadline's timer: call it once the streamed watch is over. */
  done?: (() => void) | undefined;
}

/** Reads an informer's state, streamed while the server offers it, else in pages; counts what it read. */
export class StateReader<T extends KubeObject> {
  readonly stats = { streamed: 0, pages: 0, streams: 0 };
  #paged: boolean;

  constructor(
    readonly client: KubeClient,
    readonly resource: Resource,
    mode: InitialState,
    readonly log: Logger,
  ) {
    this.#paged = mode === "pages";
  }

  /** Whether it lists in pages (asked to, or the server refused the stream). */
  get paged(): boolean {
    return this.#paged;
  }

  async read(
    opts: ListOptions,
    trim: (o: T) => T,
    signal: AbortSignal,
    timeoutSeconds: number,
  ): Promise<ReadState<T>> {
    if (!this.#paged) {
      // The server closes the watch after timeoutSeconds; a connection that died silently is given up 30 s later.
      const deadline = new AbortController();
      const timer = setTimeout(() => deadline.abort(), (timeoutSeconds + 30) * 1000);
      Deno.unrefTimer(timer); // a watchdog: it never keeps a process alive
      const done = () => clearTimeout(timer);
      try {
        this.stats.streams++;
        const all = AbortSignal.any([signal, deadline.signal]);
        const s = await streamInitial<T>(this.client, this.resource, { ...opts, timeoutSeconds, signal: all }, trim);
        this.stats.streamed++;
        return { state: s, stream: s.rest, deadline: deadline.signal, done };
      } catch (err) {
        done();
        if (!(err instanceof StreamNotOffered)) throw err;
        this.log.info("the initial state did not come streamed; listing in pages", {
          reason: err.message,
          from: err.refused ? "now on" : "this time",
        });
        if (err.refused) this.#paged = true;
      }
    }
    const listed = await listInPages<T>(this.client, this.resource, opts, trim);
    this.stats.pages += listed.pages;
    return { state: listed };
  }
}
