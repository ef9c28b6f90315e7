/**
 * Events on a real API server: identical Events about one object become one
 * Event whose series counts them (as Kubernetes' own recorders do), while a
 * different note is a new Event, and a series whose Event is gone starts over.
 */
import assert from "node:assert/strict";
import { eventRecorder } from "../../lib/events.ts";
import type { KubeObject } from "../../lib/kube/client.ts";
import { EVENTS, SECRETS } from "../../lib/kube/resources.ts";
import { sharedControlPlane } from "../../testing/helpers.ts";

const env = sharedControlPlane();

interface Ev extends KubeObject {
  note: string;
  series?: { count: number; lastObservedTime: string };
}

Deno.test("N identical Events make one Event object with series count N; another note is another Event", async () => {
  const cp = await env.get();
  const ns = await cp.namespace("ev");
  const secret = await cp.client.create<KubeObject>(SECRETS, { metadata: { name: "s", namespace: ns } });
  const errors: unknown[] = [];
  const recorder = eventRecorder(cp.client, "nico.homystack.com/nico", "test", (e) => errors.push(e));
  const n = 7;
  for (let i = 0; i < n; i++) recorder.post(secret, "Warning", "ApplyFailed", "machine m-1 failed");
  recorder.post(secret, "Warning", "ApplyFailed", "machine m-2 failed");
  await recorder.flush();
  assert.deepEqual(errors, []);

  const { items } = await cp.client.list<Ev>(EVENTS, { namespace: ns });
  assert.equal(items.length, 2, items.map((e) => e.note).join(", "));
  const m1 = items.find((e) => e.note === "machine m-1 failed")!;
  assert.equal(m1.series?.count, n);
  assert.equal(items.find((e) => e.note === "machine m-2 failed")!.series, undefined);
  // The core/v1 view (kubectl describe shows "xN over ...") carries the same series.
  const core = await cp.client.request<{ series?: { count: number } }>(
    "GET",
    `/api/v1/namespaces/${ns}/events/${m1.metadata.name}`,
  );
  assert.equal(core.series?.count, n);

  // The Event expired or was deleted: the next repeat starts a new one.
  await cp.client.delete(EVENTS, m1.metadata.name!, ns);
  recorder.post(secret, "Warning", "ApplyFailed", "machine m-1 failed");
  await recorder.flush();
  const after = (await cp.client.list<Ev>(EVENTS, { namespace: ns })).items.filter((e) =>
    e.note === "machine m-1 failed"
  );
  assert.equal(after.length, 1);
  assert.equal(after[0]!.series, undefined);
  assert.deepEqual(errors, []);
});
