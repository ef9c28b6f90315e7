/**
 * Kubernetes Events (events.k8s.io/v1) about NICO's objects, recorded the
 * way Kubernetes' own controllers do: the first occurrence creates an Event;
 * the same (object, type, reason, action, note) again within
 * {@link SERIES_WINDOW_MS} patches that Event's `series` (count and
 * lastObservedTime) instead of creating another object. Recording never
 * blocks or fails a reconcile: {@link EventRecorder.post} queues the Event
 * and returns; it is written in the background, and one that cannot be
 * written is reported to `onError` and dropped.
 *
 * @module
 */
import type { KubeClient, KubeObject } from "./kube/client.ts";
import { isNotFound } from "./kube/errors.ts";
import { microTime } from "./kube/meta.ts";
import { EVENTS } from "./kube/resources.ts";

export type EventType = "Normal" | "Warning";

export interface EventRecorder {
  /**
   * Queues an Event and returns at once (fire and forget): it is written in the background, so a reconcile never
   * waits for it, and a write that fails goes to `onError`, never to the caller. {@link flush} waits for it.
   */
  post(regarding: KubeObject, type: EventType, reason: string, note: string, action?: string): void;
  /** Waits for every Event still being written (at shutdown, or a test that reads the Events back). */
  flush(): Promise<void>;
}

/** Repeats within this long of the last one join its series; later ones start a new Event (API server TTL is 1 h). */
export const SERIES_WINDOW_MS = 30 * 60_000;
/** Series remembered at most; the least recently used are forgotten first. */
const MAX_SERIES = 4096;

interface Series {
  name: string;
  namespace: string;
  count: number;
  last: number;
}

/** One occurrence to record: about what, of which type, why, and what was done. */
interface Occurrence {
  regarding: KubeObject;
  type: EventType;
  reason: string;
  note: string;
  action: string;
}

/** Who writes the Events, and the series each (object, type, reason, action, note) is counted in. */
interface Writer {
  client: KubeClient;
  controller: string;
  instance: string;
  /** By key, least recently used first. */
  series: Map<string, Series>;
}

/** Writes Events as `controller` from `instance` (usually the pod name). */
export function eventRecorder(
  client: KubeClient,
  controller: string,
  instance: string,
  onError: (err: unknown) => void = () => {},
): EventRecorder {
  const w: Writer = { client, controller, instance, series: new Map() };
  const pending = new Set<Promise<void>>();
  /** One write at a time per series key, so a repeat waits for the Event it counts on. */
  const chains = new Map<string, Promise<void>>();
  return {
    post(regarding, type, reason, note, action = reason) {
      const m = regarding.metadata;
      const key = JSON.stringify([
        regarding.kind,
        m.namespace,
        m.name,
        m.uid,
        type,
        reason,
        action,
        note.slice(0, 1024),
      ]);
      const previous = chains.get(key) ?? Promise.resolve();
      const p: Promise<void> = previous
        .then(() => write(w, key, { regarding, type, reason, note, action }))
        .catch(onError)
        .finally(() => {
          pending.delete(p);
          if (chains.get(key) === p) chains.delete(key);
        });
      chains.set(key, p);
      pending.add(p);
    },
    async flush() {
      while (pending.size) await Promise.all([...pending]);
    },
  };
}

/** Creates a new Event; answers where it is. */
async function create(w: Writer, o: Occurrence): Promise<{ name: string; namespace: string }> {
  const { regarding, type, reason, note, action } = o;
  const { name, namespace, uid, resourceVersion } = regarding.metadata;
  const created = await w.client.create(EVENTS, {
    metadata: {
      name: `${name}.${Date.now().toString(16)}${crypto.randomUUID().slice(0, 4)}`,
      namespace: namespace ?? "default",
    },
    eventTime: microTime(new Date()),
    reportingController: w.controller,
    reportingInstance: w.instance,
    action,
    reason,
    note: note.slice(0, 1024),
    type,
    regarding: { apiVersion: regarding.apiVersion, kind: regarding.kind, name, namespace, uid, resourceVersion },
  } as KubeObject);
  return { name: created.metadata.name!, namespace: created.metadata.namespace ?? namespace ?? "default" };
}

/** Counts a repeat in its series' Event, or creates a new Event when the series is unknown, old or gone. */
async function write(w: Writer, key: string, o: Occurrence): Promise<void> {
  const { series } = w;
  const now = Date.now();
  const known = series.get(key);
  series.delete(key); // re-inserted below: Map order is recency order
  if (known && now - known.last < SERIES_WINDOW_MS) {
    const next = { ...known, count: known.count + 1, last: now };
    try {
      await w.client.mergePatch(EVENTS, known.name, known.namespace, {
        series: { count: next.count, lastObservedTime: microTime(new Date(now)) },
      });
      series.set(key, next);
      return;
    } catch (err) {
      if (!isNotFound(err)) throw err; // gone (TTL or deleted): start a new Event below
    }
  }
  const made = await create(w, o);
  series.set(key, { ...made, count: 1, last: now });
  while (series.size > MAX_SERIES) series.delete(series.keys().next().value!);
}
