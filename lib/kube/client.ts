/**
 * A narrow, typed Kubernetes client: plain REST over Deno's fetch, with the
 * connection settings and credentials of {@link ./kubeconfig.ts}.
 *
 * @module
 */
import { isNotFound, WriteRefusedError } from "./errors.ts";
import { type KubeConfig, loadKubeConfig, type LoadOptions } from "./kubeconfig.ts";
import { apiVersionOf, type Resource, resourcePath } from "./resources.ts";
import { transportOf, transports } from "./transport.ts";
import { either, failedAnswer, parseAnswer, watchEvents } from "./stream.ts";
import { retryAfterMs, TokenBucket } from "./throttle.ts";
import { sleep } from "../runtime/sleep.ts";
import type { Query, RequestOptions } from "./request.ts";
export { type KubeConfig, loadKubeConfig } from "./kubeconfig.ts";

export type * from "./types.ts";
export { TokenBucket } from "./throttle.ts";
import type {
  CallOptions,
  ClientOptions,
  HttpMethod,
  KubeObject,
  ListOptions,
  ListResult,
  ThrottleInfo,
  WatchEvent,
  WatchOptions,
  WriteOptions,
} from "./types.ts";

const JSON_TYPE = "application/json";

export class KubeClient {
  readonly server: string;
  readonly fieldManager: string;
  readonly #kc: KubeConfig;
  readonly #userAgent: string;
  readonly #timeoutMs: number;
  readonly #signal: AbortSignal | undefined;
  readonly #mayWrite: (() => boolean) | undefined;
  readonly #bucket: TokenBucket | undefined;
  readonly #retries429: number;
  /** Quote answers in errors (a trusted server). */
  readonly #quote: boolean;
  readonly #beforeRequest: ClientOptions["beforeRequest"];
  /** Who is told of waits and of writes leaving. */
  readonly #hooks: Pick<ClientOptions, "onThrottle" | "onWrite">;

  constructor(kc: KubeConfig, options: ClientOptions = {}) {
    this.#kc = kc;
    this.server = kc.server.replace(/\/+$/, "");
    this.fieldManager = options.fieldManager ?? "nico";
    this.#userAgent = options.userAgent ?? "nico";
    this.#timeoutMs = options.timeoutMs ?? 30_000;
    this.#mayWrite = options.mayWrite;
    this.#signal = options.signal;
    const limit = options.rateLimit;
    this.#bucket = limit instanceof TokenBucket ? limit : limit ? new TokenBucket(limit.qps, limit.burst) : undefined;
    this.#retries429 = options.retries429 ?? 5;
    this.#quote = !options.untrusted;
    this.#beforeRequest = options.beforeRequest;
    this.#hooks = { onThrottle: options.onThrottle, onWrite: options.onWrite };
  }

  /** Whether this client's own signal (see {@link ClientOptions.signal}) has aborted. */
  get aborted(): boolean {
    return this.#signal?.aborted ?? false;
  }

  /** A client for the kubeconfig at `path` (or the default locations). */
  static load(path?: string, options: ClientOptions & Omit<LoadOptions, "path"> = {}): KubeClient {
    return new KubeClient(loadKubeConfig({ ...options, path }), options);
  }

  /**
   * A copy that writes under another field manager or user agent, whose
   * requests `signal` also aborts, or behind a write gate. Gates add up: a
   * copy never writes where this client would not (a leader's fence holds
   * for every client derived from it).
   */
  with(options: ClientOptions): KubeClient {
    const [mine, theirs] = [this.#mayWrite, options.mayWrite];
    const mayWrite = mine && theirs ? () => mine() && theirs() : mine ?? theirs;
    return new KubeClient(this.#kc, {
      fieldManager: options.fieldManager ?? this.fieldManager,
      userAgent: options.userAgent ?? this.#userAgent,
      timeoutMs: options.timeoutMs ?? this.#timeoutMs,
      signal: either(this.#signal, options.signal),
      ...(mayWrite ? { mayWrite } : {}),
      ...(options.rateLimit ?? this.#bucket ? { rateLimit: options.rateLimit ?? this.#bucket! } : {}),
      retries429: options.retries429 ?? this.#retries429,
      untrusted: options.untrusted ?? !this.#quote,
      beforeRequest: options.beforeRequest ?? this.#beforeRequest,
      onThrottle: options.onThrottle ?? this.#hooks.onThrottle,
      onWrite: options.onWrite ?? this.#hooks.onWrite,
    });
  }

  /** Waits `ms` for `source`, telling `onThrottle`; throws if the request's signal aborts meanwhile. */
  async #wait(source: ThrottleInfo["source"], method: HttpMethod, path: string, ms: number, signal?: AbortSignal) {
    if (ms <= 0) return;
    this.#hooks.onThrottle?.({ source, method, path, waitMs: ms });
    const all = either(this.#signal, signal);
    await sleep(ms, all);
    all?.throwIfAborted();
  }

  async #send(method: HttpMethod, path: string, opts: RequestOptions, retried = false, tries = 0): Promise<Response> {
    if (this.#bucket) await this.#wait("client", method, path, this.#bucket.reserve(), opts.signal);
    const url = new URL(this.server + path);
    for (const [k, v] of Object.entries(opts.query ?? {})) {
      if (v !== undefined) url.searchParams.set(k, String(v));
    }
    const headers: Record<string, string> = { "Accept": JSON_TYPE, "User-Agent": this.#userAgent };
    let body: string | undefined;
    if (opts.body !== undefined) {
      body = typeof opts.body === "string" ? opts.body : JSON.stringify(opts.body);
      headers["Content-Type"] = opts.contentType ?? JSON_TYPE;
    }
    await this.#beforeRequest?.(url);
    const credential = await this.#kc.credentials.get();
    if (credential.authorization) headers["Authorization"] = credential.authorization;
    // Last thing before the request leaves: nothing awaited in between.
    if (method !== "GET" && this.#mayWrite && !this.#mayWrite()) throw new WriteRefusedError(method, path);
    if (method !== "GET") this.#hooks.onWrite?.(method, path);
    const response = await fetch(url, {
      method,
      headers,
      body: body ?? null,
      redirect: "manual",
      client: transportOf(this.#kc).client(credential.clientCert ?? this.#kc.clientCert),
      signal: either(this.#signal, opts.signal) ?? null,
    });
    if (response.status === 401 && !retried && this.#kc.credentials.invalidate()) {
      // Expired or rotated credentials: fetch fresh ones once, then give up.
      await response.body?.cancel();
      return await this.#send(method, path, opts, true, tries);
    }
    if (response.status === 429 && tries < this.#retries429 && response.headers.has("retry-after")) {
      // Throttled (API Priority and Fairness, max-in-flight) before anything was done: wait as asked, then again.
      // A 429 without Retry-After is an answer, not throttling (an eviction a PodDisruptionBudget refuses).
      await response.body?.cancel();
      // At least as long as asked, plus up to a second, so a burst that was refused together does not return together.
      const ms = retryAfterMs(response.headers.get("retry-after")) + Math.random() * 1_000;
      await this.#wait("server", method, path, Math.round(ms), opts.signal);
      return await this.#send(method, path, opts, retried, tries + 1);
    }
    const failed = await failedAnswer(response, method, url.pathname, this.#quote);
    if (failed) throw failed;
    return response;
  }

  /** One request; the JSON answer, parsed. */
  async request<T>(method: HttpMethod, path: string, opts: RequestOptions = {}): Promise<T> {
    const signal = either(opts.signal, AbortSignal.timeout(this.#timeoutMs));
    const response = await this.#send(method, path, { ...opts, signal });
    return parseAnswer<T>(await response.text(), method, path, this.#quote);
  }

  /** Closes the connections of this client and of every client made from it with {@link with}; later requests reopen. */
  close(): Promise<void> {
    return Promise.resolve(transports.get(this.#kc)?.close());
  }

  /** A plain-text endpoint such as `/readyz` or `/metrics`. */
  async getText(path: string, signal?: AbortSignal): Promise<string> {
    const response = await this.#send("GET", path, {
      signal: either(signal, AbortSignal.timeout(this.#timeoutMs)),
    });
    return await response.text();
  }

  /** The object, or `undefined` when it does not exist. */
  async get<T extends KubeObject>(
    r: Resource,
    name: string,
    namespace?: string,
    opts: CallOptions = {},
  ): Promise<T | undefined> {
    try {
      return await this.request<T>("GET", resourcePath(r, namespace, name), { signal: opts.signal });
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  /** Every object matching the options, following `continue` tokens. */
  async list<T extends KubeObject>(r: Resource, opts: ListOptions = {}): Promise<ListResult<T>> {
    const items: T[] = [];
    let token: string | undefined;
    let resourceVersion = "";
    do {
      const page = await this.request<{ items: T[]; metadata: { resourceVersion: string; continue?: string } }>(
        "GET",
        resourcePath(r, opts.namespace),
        {
          query: { labelSelector: opts.labelSelector, fieldSelector: opts.fieldSelector, limit: 500, continue: token },
          signal: opts.signal,
        },
      );
      const kind = r.kind;
      const apiVersion = apiVersionOf(r);
      for (const item of page.items) items.push({ ...item, apiVersion, kind });
      resourceVersion = page.metadata.resourceVersion;
      token = page.metadata.continue || undefined;
    } while (token);
    return { items, resourceVersion };
  }

  create<T extends KubeObject>(r: Resource, obj: T, opts: WriteOptions = {}): Promise<T> {
    return this.request<T>("POST", resourcePath(r, obj.metadata.namespace), {
      body: { apiVersion: apiVersionOf(r), kind: r.kind, ...obj },
      query: this.#writeQuery(opts),
      signal: opts.signal,
    });
  }

  /** PUT: fails with 409 when `metadata.resourceVersion` is stale. */
  replace<T extends KubeObject>(r: Resource, obj: T, opts: WriteOptions = {}): Promise<T> {
    return this.request<T>("PUT", resourcePath(r, obj.metadata.namespace, obj.metadata.name), {
      body: { apiVersion: apiVersionOf(r), kind: r.kind, ...obj },
      query: this.#writeQuery(opts),
      signal: opts.signal,
    });
  }

  /** PUT to the status subresource: fails with 409 when `metadata.resourceVersion` is stale. */
  replaceStatus<T extends KubeObject>(r: Resource, obj: T, opts: CallOptions = {}): Promise<T> {
    return this.request<T>("PUT", resourcePath(r, obj.metadata.namespace, obj.metadata.name, "status"), {
      body: { apiVersion: apiVersionOf(r), kind: r.kind, ...obj },
      query: this.#writeQuery({}),
      signal: opts.signal,
    });
  }

  /** JSON merge patch (RFC 7386), of the object or of a subresource. */
  mergePatch<T extends KubeObject>(
    r: Resource,
    name: string,
    namespace: string | undefined,
    patch: unknown,
    subresource?: "status",
    opts: CallOptions = {},
  ): Promise<T> {
    return this.request<T>("PATCH", resourcePath(r, namespace, name, subresource), {
      body: patch,
      contentType: "application/merge-patch+json",
      query: this.#writeQuery({}),
      signal: opts.signal,
    });
  }

  /** JSON patch (RFC 6902); a `test` operation makes it conditional. */
  jsonPatch<T extends KubeObject>(
    r: Resource,
    name: string,
    namespace: string | undefined,
    ops: unknown[],
    opts: CallOptions = {},
  ): Promise<T> {
    return this.request<T>("PATCH", resourcePath(r, namespace, name), {
      body: ops,
      contentType: "application/json-patch+json",
      query: this.#writeQuery({}),
      signal: opts.signal,
    });
  }

  /** Server-side apply under this client's field manager. */
  apply<T extends KubeObject>(
    r: Resource,
    obj: T,
    opts: WriteOptions & { force?: boolean; subresource?: "status" } = {},
  ): Promise<T> {
    return this.request<T>(
      "PATCH",
      resourcePath(r, obj.metadata.namespace, obj.metadata.name, opts.subresource),
      {
        body: { apiVersion: apiVersionOf(r), kind: r.kind, ...obj },
        contentType: "application/apply-patch+yaml",
        query: { ...this.#writeQuery(opts), force: opts.force ?? true },
        signal: opts.signal,
      },
    );
  }

  /**
   * Deletes an object. Answers `false` when it was already gone.
   * With `uid`/`resourceVersion` the delete only happens to that exact object.
   */
  async delete(
    r: Resource,
    name: string,
    namespace?: string,
    opts: CallOptions & {
      uid?: string;
      resourceVersion?: string;
      propagationPolicy?: "Background" | "Foreground" | "Orphan";
    } = {},
  ): Promise<boolean> {
    const preconditions = opts.uid || opts.resourceVersion
      ? {
        ...(opts.uid ? { uid: opts.uid } : {}),
        ...(opts.resourceVersion ? { resourceVersion: opts.resourceVersion } : {}),
      }
      : undefined;
    try {
      await this.request("DELETE", resourcePath(r, namespace, name), {
        body: {
          apiVersion: "v1",
          kind: "DeleteOptions",
          ...(preconditions ? { preconditions } : {}),
          ...(opts.propagationPolicy ? { propagationPolicy: opts.propagationPolicy } : {}),
        },
        signal: opts.signal,
      });
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      throw err;
    }
  }

  /**
   * Watches a collection from `resourceVersion`, with bookmarks. Ends when
   * the server closes the stream; throws an {@link ApiError} with status 410
   * when the resourceVersion is too old (the caller relists).
   */
  async *watch<T extends KubeObject>(r: Resource, opts: WatchOptions = {}): AsyncGenerator<WatchEvent<T>> {
    const signal = either(this.#signal, opts.signal);
    const response = await this.#send("GET", resourcePath(r, opts.namespace), {
      query: {
        watch: true,
        allowWatchBookmarks: true,
        resourceVersion: opts.resourceVersion,
        labelSelector: opts.labelSelector,
        fieldSelector: opts.fieldSelector,
        timeoutSeconds: opts.timeoutSeconds,
      },
      signal: opts.signal,
    });
    yield* watchEvents<WatchEvent<T>>(response, signal, resourcePath(r, opts.namespace));
  }

  #writeQuery(opts: WriteOptions): Query {
    return { fieldManager: this.fieldManager, ...(opts.dryRun ? { dryRun: "All" } : {}) };
  }
}
