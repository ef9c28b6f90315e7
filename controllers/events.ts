/**
 * The one way NICO records an Event: {@link postEvent} takes a registered
 * reason (crds/events.ts) and the type the registry gives it, so no Event
 * reason or type is a free string at a call site.
 *
 * @module
 */
import type { EventRecorder } from "../lib/events.ts";
import type { KubeObject } from "../lib/kube/client.ts";
import { type EventReason, eventSpec } from "../crds/events.ts";

/** Records an Event of `reason` (its type from the registry) about `regarding`; never blocks nor throws. */
export function postEvent(recorder: EventRecorder, regarding: KubeObject, reason: EventReason, note: string): void {
  recorder.post(regarding, eventSpec(reason)?.type ?? "Warning", reason, note);
}
