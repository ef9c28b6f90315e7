/** The options and counters of an informer (lib/runtime/informer.ts). */
import type { KubeObject } from "../kube/client.ts";
import type { Logger } from "./log.ts";
import type { InitialState } from "./initial.ts";

/** Options of an informer. */
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
  /**
   * Drops more of each object than `metadata.managedFields` before it enters the cache: what no reader reads. It
   * answers the object to cache (build a new one rather than `delete` a field: ./compact.ts), or nothing when it
   * changed the object in place.
   */
  trim?: (obj: KubeObject) => KubeObject | void;
  /** How the state is read (default `stream`, which falls back to `pages` where the server does not offer it). */
  initialState?: InitialState;
  /** Objects per page of a paged list (default 500). */
  pageSize?: number;
}

/** Counters of an {@link Informer}. */
export interface InformerStats {
  /** Full states read (the first one, then one per relist), streamed or listed. */
  lists: number;
  /** Of those, how many came streamed by a watch (`sendInitialEvents`). */
  streamed: number;
  /** Pages read by paged lists. */
  pages: number;
  /** Watches opened. */
  watches: number;
  /** Watches that ended with 410 Gone. */
  gone: number;
  /** Failed lists and watches, other than 410. */
  errors: number;
  /** Resyncs done. */
  resyncs: number;
}
