/**
 * The types of {@link ./client.ts}'s interface: objects, lists, watch events
 * and the options of the client and its verbs.
 *
 * @module
 */
import type { ObjectMeta } from "./meta.ts";
import type { TokenBucket } from "./throttle.ts";

/** HTTP methods the client sends. */
export type HttpMethod = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

/** Any Kubernetes object. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
}

export interface ListResult<T> {
  items: T[];
  resourceVersion: string;
}

export type WatchEventType = "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK";

export interface WatchEvent<T> {
  type: WatchEventType;
  object: T;
}

export interface ClientOptions {
  /** Sent as User-Agent; the API server's metrics and audit log show it. */
  userAgent?: string;
  /** Field manager for server-side apply and other writes. */
  fieldManager?: string;
  /** Deadline of one non-watch request, in milliseconds (default 30 s). */
  timeoutMs?: number;
  /**
   * Aborts every request of this client (for example a reconcile's
   * cancellation: `client.with({ signal })`), on top of each call's own.
   */
  signal?: AbortSignal | undefined;
  /**
   * Asked before every request that is not a GET; `false` refuses it with a
   * {@link WriteRefusedError} before anything is sent (fencing of a deposed leader).
   */
  mayWrite?: () => boolean;
  /**
   * Told the moment a write passed the gate and leaves (a process stopped right then sends it when it resumes:
   * the log says it was let through before).
   */
  onWrite?: ((method: HttpMethod, path: string) => void) | undefined;
  /**
   * A client-side rate limit, shared by this client and every client made
   * from it with `with()` (pass a {@link TokenBucket} to share one wider);
   * default none.
   */
  rateLimit?: { qps: number; burst: number } | TokenBucket;
  /**
   * Times a request answered `429` with a `Retry-After` (throttled by the API
   * server) is sent again after that wait (default 5); a `429` without one (an
   * eviction a PodDisruptionBudget refuses) is thrown at once.
   */
  retries429?: number;
  /** Told whenever a request waits: for the client's rate limit, or for a `429`'s `Retry-After`. */
  onThrottle?: ((info: ThrottleInfo) => void) | undefined;
  /**
   * The server is not the operator's (a workload cluster's API server, at an address a tenant may choose): an
   * answer that is not a Kubernetes `Status` is never quoted in an error, only its HTTP status. Redirects are
   * refused by every client either way.
   */
  untrusted?: boolean;
  /** Asked before each request leaves, with its URL; a throw refuses it (a check of where it goes). */
  beforeRequest?: ((url: URL) => Promise<void>) | undefined;
}

/** A wait before a request: the client's own rate limit, or the API server's `429`. */
export interface ThrottleInfo {
  source: "client" | "server";
  method: HttpMethod;
  path: string;
  waitMs: number;
}

/** What every verb accepts: a signal that aborts the request (shutdown, a cancelled reconcile). */
export interface CallOptions {
  signal?: AbortSignal | undefined;
}

export interface ListOptions extends CallOptions {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
}

export interface WatchOptions extends ListOptions {
  resourceVersion?: string;
  /** Ask the server to end the watch after this long (it is resumed by the caller). */
  timeoutSeconds?: number;
}

export interface WriteOptions extends CallOptions {
  dryRun?: boolean;
}
