/**
 * Kubernetes Events (events.k8s.io/v1) about NICO's objects. Recording never
 * fails a reconcile: an Event that cannot be written is logged and dropped.
 *
 * @module
 */
import type { KubeClient, KubeObject } from "./kube/client.ts";
import { microTime } from "./kube/meta.ts";
import { EVENTS } from "./kube/resources.ts";

export type EventType = "Normal" | "Warning";

export interface EventRecorder {
  /** Records an Event in the background: a reconcile never waits for it. */
  event(regarding: KubeObject, type: EventType, reason: string, note: string, action?: string): Promise<void>;
  /** Waits for every Event still being written (at shutdown). */
  flush(): Promise<void>;
}

/** Writes Events as `controller` from `instance` (usually the pod name). */
export function eventRecorder(
  client: KubeClient,
  controller: string,
  instance: string,
  onError: (err: unknown) => void = () => {},
): EventRecorder {
  const pending = new Set<Promise<void>>();
  const write = async (regarding: KubeObject, type: EventType, reason: string, note: string, action: string) => {
    const { name, namespace, uid, resourceVersion } = regarding.metadata;
    try {
      await client.create(EVENTS, {
        metadata: {
          name: `${name}.${Date.now().toString(16)}${crypto.randomUUID().slice(0, 4)}`,
          namespace: namespace ?? "default",
        },
        eventTime: microTime(new Date()),
        reportingController: controller,
        reportingInstance: instance,
        action,
        reason,
        note: note.slice(0, 1024),
        type,
        regarding: { apiVersion: regarding.apiVersion, kind: regarding.kind, name, namespace, uid, resourceVersion },
      } as KubeObject);
    } catch (err) {
      onError(err);
    }
  };
  return {
    event(regarding, type, reason, note, action = reason) {
      const p: Promise<void> = write(regarding, type, reason, note, action).finally(() => pending.delete(p));
      pending.add(p);
      return Promise.resolve();
    },
    async flush() {
      while (pending.size) await Promise.all([...pending]);
    },
  };
}
