/** Informers and controllers against a real kube-apiserver: 410s, compaction, failing lists and watches. */
import assert from "node:assert/strict";
import { ApiError } from "../../lib/kube/errors.ts";
import { Controller, Informer, silentLogger, splitKey, TerminalError } from "../../lib/runtime/mod.ts";
import { eventually } from "../../testing/helpers.ts";
import {
  cacheState,
  ConfigMap,
  configMap,
  CONFIGMAPS,
  env,
  outcomesRecorder,
  recordEvents,
  ScriptedClient,
  serverState,
  started,
} from "../runtime_kit.ts";

Deno.test("envtest: a 410 thrown by a watch relists, and unchanged objects give no event", async () => {
  const cp = await env.get();
  const ns = await cp.namespace("gone2");
  await cp.client.create(CONFIGMAPS, configMap(ns, "keep", "1"));
  await cp.client.create(CONFIGMAPS, configMap(ns, "change", "1"));
  const client = ScriptedClient.from(cp.kubeconfigPath);
  let release!: () => void;
  client.hold = new Promise((r) => (release = r));
  client.watchFailures = [new ApiError(410, "Expired", "too old resource version", "WATCH", "/api/v1/configmaps")];
  const informer = new Informer<ConfigMap>(client, CONFIGMAPS, {
    namespace: ns,
    logger: silentLogger,
    initialState: "pages",
  });
  const events = recordEvents(informer);
  {
    await using _ = started(informer);
    await informer.synced();
    await eventually("the held watch", () => client.watches.length === 1, 30_000);
    events.length = 0;
    await cp.client.mergePatch(CONFIGMAPS, "change", ns, { data: { v: "2" } });
    await cp.client.create(CONFIGMAPS, configMap(ns, "new", "1"));
    client.hold = undefined;
    release();
    await eventually("the relist", () => informer.stats().lists === 2, 30_000);
    await cp.client.delete(CONFIGMAPS, "keep", ns);
    await eventually("the delete after the relist", () => events.includes("delete keep 1"), 30_000);
  }
  assert.deepEqual(events, ["update change 2 was 1", "add new 1", "delete keep 1"]);
  assert.equal(informer.stats().gone, 1);
  assert.deepEqual(cacheState(informer, ns), await serverState(cp.client, CONFIGMAPS, ns));
});

Deno.test("envtest: list and watch errors are retried with capped backoff", async () => {
  const cp = await env.get();
  const ns = await cp.namespace("err");
  const client = ScriptedClient.from(cp.kubeconfigPath);
  const boom = () => new ApiError(500, "InternalError", "injected", "GET", "/api/v1/configmaps");
  client.listFailures = [boom(), new TypeError("fetch failed")];
  client.watchFailures = [boom(), boom(), boom(), boom(), boom(), boom(), new TypeError("socket hang up")];
  const informer = new Informer<ConfigMap>(client, CONFIGMAPS, {
    namespace: ns,
    logger: silentLogger,
    minBackoffMs: 10,
    maxBackoffMs: 40,
    initialState: "pages",
  });
  const events = recordEvents(informer);
  {
    await using _ = started(informer);
    await informer.synced();
    assert.equal(client.lists, 3, "two failed lists, then one that worked");
    await eventually("the watch to come up", () => client.watches.length >= 8, 30_000);
    await cp.client.create(CONFIGMAPS, configMap(ns, "a", "1"));
    await eventually("the add", () => events.length >= 1, 30_000);
  }
  assert.deepEqual(events, ["add a 1"]);
  assert.equal(informer.stats().errors, 9);
  const gaps = client.watches.slice(1, 8).map((w, i) => w.at - client.watches[i]!.at);
  // The backoff after the list succeeded starts at 10 ms and doubles to the 40 ms cap.
  const want = [10, 20, 40, 40, 40, 40, 40];
  gaps.forEach((g, i) =>
    assert.ok(g >= want[i]! - 2 && g < want[i]! + 250, `gap ${i}: ${Math.round(g)} ms, want about ${want[i]}`)
  );
});

Deno.test("envtest: resync re-emits every cached object as an update without calling the API", async () => {
  const cp = await env.get();
  const ns = await cp.namespace("resync");
  await cp.client.create(CONFIGMAPS, configMap(ns, "a", "1"));
  await cp.client.create(CONFIGMAPS, configMap(ns, "b", "1"));
  const client = ScriptedClient.from(cp.kubeconfigPath);
  const informer = new Informer<ConfigMap>(client, CONFIGMAPS, {
    namespace: ns,
    resyncMs: 100,
    logger: silentLogger,
    initialState: "pages",
  });
  const events = recordEvents(informer);
  {
    await using _ = started(informer);
    await informer.synced();
    await eventually("two resyncs", () => informer.stats().resyncs >= 2, 30_000);
  }
  const resyncs = informer.stats().resyncs;
  assert.deepEqual(events.slice(0, 2).sort(), ["add a 1", "add b 1"]);
  assert.deepEqual(
    events.slice(2).sort(),
    Array(resyncs).fill(["update a 1 was 1", "update b 1 was 1"]).flat().sort(),
  );
  assert.equal(client.lists, 1);
  assert.equal(client.watches.length, 1);
});

Deno.test("envtest: a controller reconciles from its informer, retries errors but not TerminalError, and stops", async () => {
  const cp = await env.get();
  const ns = await cp.namespace("ctrl");
  const informer = new Informer<ConfigMap>(cp.client, CONFIGMAPS, { namespace: ns, logger: silentLogger });
  const calls = new Map<string, (string | undefined)[]>();
  const rec = outcomesRecorder();
  const ctrl = new Controller(
    { name: "configmaps", workers: 2, logger: silentLogger, hooks: rec.hooks },
    (key) => {
      const { namespace, name } = splitKey(key);
      const obj = informer.get(namespace, name);
      const seen = calls.get(key) ?? [];
      seen.push(obj?.data?.["v"]);
      calls.set(key, seen);
      if (name === "flaky" && seen.length <= 2) return Promise.reject(new Error("not yet"));
      if (name === "broken") return Promise.reject(new TerminalError("cannot work"));
      return Promise.resolve();
    },
  ).watch(informer);
  await cp.client.create(CONFIGMAPS, configMap(ns, "before", "1"));
  const stop = new AbortController();
  const run = ctrl.run(stop.signal);
  const key = (name: string) => `${ns}/${name}`;
  try {
    await informer.synced();
    for (const name of ["ok", "flaky", "broken"]) await cp.client.create(CONFIGMAPS, configMap(ns, name, "1"));
    await eventually("flaky reconciled", () => calls.get(key("flaky"))?.length === 3, 30_000);
    await eventually("ok and before reconciled", () => calls.has(key("ok")) && calls.has(key("before")), 30_000);
    await cp.client.mergePatch(CONFIGMAPS, "ok", ns, { data: { v: "2" } });
    await eventually("ok reconciled again", () => calls.get(key("ok"))?.at(-1) === "2", 30_000);
    await cp.client.delete(CONFIGMAPS, "before", ns);
    await eventually("the delete reconciled", () => calls.get(key("before"))?.length === 2, 30_000);
    // Nothing queued, running or scheduled for later: no reconcile can come without a new event.
    await eventually(
      "the queue to be idle",
      () => {
        const q = ctrl.queue.stats();
        return q.depth === 0 && q.processing === 0 && q.delayed === 0;
      },
      30_000,
      10,
    );
  } finally {
    stop.abort();
    await run;
  }
  assert.deepEqual(calls.get(key("before")), ["1", undefined], "the reconcile of a deleted object sees it gone");
  assert.deepEqual(calls.get(key("broken")), ["1"], "a TerminalError is not retried");
  assert.deepEqual(calls.get(key("flaky")), ["1", "1", "1"]);
  assert.deepEqual(calls.get(key("ok")), ["1", "2"]);
  assert.deepEqual(rec.outcomes.filter(([, k]) => k === key("flaky")).map(([o]) => o), ["error", "error", "success"]);
  assert.equal(informer.running, false, "the controller stops the informer it started");
  assert.equal(ctrl.queue.shuttingDown, true);
});
