/**
 * Waiting on an object by watching it: each version the API server sends is
 * checked as it comes, so a wait ends as soon as what it waits for is
 * written, and costs one request per version instead of one per poll.
 *
 * @module
 */
import type { KubeClient, KubeObject } from "../lib/kube/client.ts";
import type { Resource } from "../lib/kube/resources.ts";

/** Where and what to wait for. */
export interface WatchUntil<T> {
  resource: Resource;
  namespace: string;
  name: string;
  /** Says what is waited for, in the timeout's message. */
  what: string;
  pred: (o: T) => unknown;
  timeoutMs: number;
  /** Each version seen (undefined: the object is gone), for a caller that reports the last one on a timeout. */
  seen?: (o: T | undefined) => void;
}

/**
 * Waits until `pred` holds for the object, from its current version on (a list, then a watch from there; a watch
 * the server ends, or one too old to resume, starts over with a list); answers that version.
 *
 * @example
 * ```ts ignore
 * const c = await watchUntil(client, { resource: KUBERNETES_CLUSTERS, namespace: ns, name: "c", what: "Ready",
 *   pred: (c) => c.status?.phase === "Ready", timeoutMs: 60_000 });
 * ```
 */
export async function watchUntil<T extends KubeObject>(client: KubeClient, w: WatchUntil<T>): Promise<T> {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), w.timeoutMs);
  const fieldSelector = `metadata.name=${w.name}`;
  let lastError: unknown;
  try {
    while (!abort.signal.aborted) {
      try {
        const list = await client.list<T>(w.resource, { namespace: w.namespace, fieldSelector, signal: abort.signal });
        const now = list.items[0];
        w.seen?.(now);
        if (now && w.pred(now)) return now;
        const events = client.watch<T>(w.resource, {
          namespace: w.namespace,
          fieldSelector,
          resourceVersion: list.resourceVersion,
          signal: abort.signal,
        });
        for await (const ev of events) {
          if (ev.type === "BOOKMARK") continue;
          const o = ev.type === "DELETED" ? undefined : ev.object;
          w.seen?.(o);
          if (o && w.pred(o)) return o;
        }
      } catch (err) {
        if (abort.signal.aborted) break;
        lastError = err; // a watch too old to resume (410), or the connection broke: list again
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  } finally {
    clearTimeout(timer);
    abort.abort();
  }
  throw new Error(`Timed out after ${w.timeoutMs} ms waiting for ${w.what}${lastError ? `: ${lastError}` : ""}`);
}
