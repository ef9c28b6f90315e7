/** The cache diff of a relist, keys, the logger and the controller with directly enqueued keys (pure). */
import assert from "node:assert/strict";
import {
  type CacheEvent,
  Controller,
  diffSnapshot,
  ExponentialBackoff,
  jsonLogger,
  keyOf,
  silentLogger,
  splitKey,
  TerminalError,
  untilAborted,
} from "../../lib/runtime/mod.ts";
import { eventually } from "../../testing/helpers.ts";
import { type ConfigMap, outcomesRecorder, pending, turn } from "../runtime_kit.ts";

function cm(name: string, rv: string, uid = `uid-${name}`, ns = "ns"): ConfigMap {
  return { metadata: { name, namespace: ns, resourceVersion: rv, uid }, data: { rv } };
}

function describe(events: CacheEvent<ConfigMap>[]): string[] {
  return events.map((e) =>
    `${e.type} ${e.obj.metadata.name}@${e.obj.metadata.resourceVersion}${
      e.old ? ` old@${e.old.metadata.resourceVersion}` : ""
    }`
  );
}

Deno.test("relist diff: synthetic events turn the cache into the fresh list", async (t) => {
  const cache = (...items: ConfigMap[]) => new Map(items.map((i) => [keyOf(i.metadata.namespace, i.metadata.name), i]));
  const cases: { name: string; cache: Map<string, ConfigMap>; list: ConfigMap[]; events: string[] }[] = [
    {
      name: "first list: all adds",
      cache: cache(),
      list: [cm("a", "1"), cm("b", "2")],
      events: ["add a@1", "add b@2"],
    },
    { name: "nothing changed: no events", cache: cache(cm("a", "1")), list: [cm("a", "1")], events: [] },
    {
      name: "changed resourceVersion: update",
      cache: cache(cm("a", "1")),
      list: [cm("a", "5")],
      events: ["update a@5 old@1"],
    },
    {
      name: "missing: delete with the last known state",
      cache: cache(cm("a", "1"), cm("b", "2")),
      list: [cm("b", "2")],
      events: ["delete a@1 old@1"],
    },
    {
      name: "recreated under the same name: delete then add",
      cache: cache(cm("a", "1", "u1")),
      list: [cm("a", "7", "u2")],
      events: ["delete a@1 old@1", "add a@7"],
    },
    {
      name: "everything at once, deletes first",
      cache: cache(cm("gone", "1"), cm("same", "2"), cm("moved", "3")),
      list: [cm("new", "9"), cm("same", "2"), cm("moved", "8")],
      events: ["delete gone@1 old@1", "add new@9", "update moved@8 old@3"],
    },
    { name: "everything deleted", cache: cache(cm("a", "1")), list: [], events: ["delete a@1 old@1"] },
    {
      name: "same name in two namespaces are two keys",
      cache: cache(cm("a", "1", "u1", "x")),
      list: [cm("a", "1", "u1", "x"), cm("a", "2", "u2", "y")],
      events: ["add a@2"],
    },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      const before = new Map(c.cache);
      const { next, events } = diffSnapshot(c.cache, c.list);
      assert.deepEqual(describe(events), c.events);
      assert.deepEqual([...next.values()], c.list, "the next cache holds exactly the list");
      assert.deepEqual(c.cache, before, "the old cache is not modified");
    });
  }
});

// ---------------------------------------------------------------- keys and log

Deno.test("keys: objectKey/keyOf/splitKey round-trip", () => {
  assert.equal(keyOf("ns", "a"), "ns/a");
  assert.equal(keyOf(undefined, "node-1"), "node-1");
  assert.deepEqual(splitKey("ns/a"), { namespace: "ns", name: "a" });
  assert.deepEqual(splitKey("node-1"), { name: "node-1" });
});

Deno.test("log: JSON lines, levels, errors as messages, Secret payloads redacted", () => {
  const lines: string[] = [];
  const log = jsonLogger({ level: "info", fields: { controller: "c" }, write: (l) => lines.push(l), now: () => 0 });
  log.debug("hidden");
  log.info("hello", { key: "ns/a", error: new Error("boom") });
  log.error("oops", {
    obj: { kind: "Secret", metadata: { name: "s" }, data: { password: "aHVudGVyMg==" }, stringData: { x: "y" } },
  });
  assert.equal(lines.length, 2);
  assert.deepEqual(JSON.parse(lines[0]!), {
    ts: "1970-01-01T00:00:00.000Z",
    level: "info",
    msg: "hello",
    controller: "c",
    key: "ns/a",
    error: { name: "Error", message: "boom" },
  });
  assert.ok(!lines[1]!.includes("aHVudGVyMg=="), lines[1]!);
  assert.ok(!lines[1]!.includes('"x"'), lines[1]!);
  assert.equal(JSON.parse(lines[1]!).obj.data, "[redacted]");
});

// ---------------------------------------------------------------- controller (pure)

Deno.test("controller: reconciles every key, a failing one with growing backoff until it succeeds", async () => {
  const calls = new Map<string, number[]>();
  const rec = outcomesRecorder();
  const ctrl = new Controller(
    {
      name: "t",
      workers: 2,
      logger: silentLogger,
      // 100 ms doubling: wide enough that a starved event loop (tens of ms late) cannot make 400 ms look shorter than 100.
      rateLimiter: new ExponentialBackoff({ baseMs: 100 }),
      hooks: rec.hooks,
    },
    async (key) => {
      const times = calls.get(key) ?? [];
      times.push(performance.now());
      calls.set(key, times);
      await turn();
      if (key === "ns/flaky" && times.length <= 3) throw new Error(`attempt ${times.length} failed`);
    },
  );
  const stop = new AbortController();
  for (const k of ["ns/a", "ns/b", "ns/flaky"]) ctrl.enqueue(k);
  const run = ctrl.run(stop.signal);
  await eventually(
    "flaky succeeds",
    () => rec.outcomes.some(([o, k]) => o === "success" && k === "ns/flaky"),
    30_000,
    5,
  );
  stop.abort();
  await run;
  assert.equal(calls.get("ns/a")?.length, 1);
  assert.equal(calls.get("ns/b")?.length, 1);
  const flaky = calls.get("ns/flaky")!;
  assert.equal(flaky.length, 4);
  const gaps = flaky.slice(1).map((t, i) => t - flaky[i]!);
  // 100, 200, 400 ms of backoff (plus the reconcile each time).
  assert.ok(gaps[0]! >= 99 && gaps[1]! >= 199 && gaps[2]! >= 399, `gaps ${gaps.map(Math.round)}`);
  assert.ok(gaps[2]! > gaps[0]!, `backoff did not grow: ${gaps.map(Math.round)}`);
  assert.equal(ctrl.queue.retries("ns/flaky"), 0, "success forgets the backoff");
  assert.deepEqual(rec.outcomes.filter(([, k]) => k === "ns/flaky").map(([o]) => o), [
    "error",
    "error",
    "error",
    "success",
  ]);
  assert.equal(ctrl.queue.stats().retries, 3);
});

Deno.test("controller: a TerminalError is not retried; requeueAfter comes back later", async () => {
  const calls: string[] = [];
  const rec = outcomesRecorder();
  let requeues = 0;
  const ctrl = new Controller(
    { name: "t", logger: silentLogger, rateLimiter: new ExponentialBackoff({ baseMs: 1 }), hooks: rec.hooks },
    (key) => {
      calls.push(key);
      if (key === "ns/bad") return Promise.reject(new TerminalError("spec can never work"));
      if (key === "ns/poll" && requeues++ === 0) return Promise.resolve({ requeueAfter: 30 });
      return Promise.resolve();
    },
  );
  const stop = new AbortController();
  ctrl.enqueue("ns/bad");
  ctrl.enqueue("ns/poll");
  const t0 = performance.now();
  const run = ctrl.run(stop.signal);
  await eventually("poll requeued", () => calls.filter((k) => k === "ns/poll").length === 2, 5_000, 2);
  const elapsed = performance.now() - t0;
  // Nothing queued, running or scheduled: a retry of ns/bad (due after 1 ms) would keep the queue busy.
  await eventually(
    "the queue to be idle",
    () => {
      const q = ctrl.queue.stats();
      return q.depth === 0 && q.processing === 0 && q.delayed === 0;
    },
    5_000,
    2,
  );
  stop.abort();
  await run;
  assert.deepEqual(calls.filter((k) => k === "ns/bad"), ["ns/bad"]);
  assert.ok(elapsed >= 28, `requeueAfter 30 ms came after ${elapsed} ms`);
  assert.equal(ctrl.queue.retries("ns/bad"), 0);
  assert.equal(ctrl.queue.stats().retries, 0, "neither key went through the rate limiter");
  assert.deepEqual(rec.outcomes.map(([o, k]) => `${k}:${o}`).sort(), [
    "ns/bad:terminal",
    "ns/poll:requeue",
    "ns/poll:success",
  ]);
});

Deno.test("controller: shutdown lets in-flight reconciles finish and takes no new keys", async () => {
  const started: string[] = [];
  let finished = false;
  let abortedSignal = false;
  let finish!: () => void;
  const slow = new Promise<void>((r) => (finish = r));
  const ctrl = new Controller({ name: "t", logger: silentLogger, workers: 1 }, async (key, signal) => {
    started.push(key);
    await slow; // the test lets it finish
    abortedSignal = signal.aborted;
    finished = true;
  });
  const stop = new AbortController();
  ctrl.enqueue("ns/slow");
  ctrl.enqueue("ns/next");
  const run = ctrl.run(stop.signal);
  await eventually("the slow reconcile", () => started.length === 1, 2_000, 2);
  stop.abort();
  ctrl.enqueue("ns/after-stop");
  assert.ok(await pending(run), "run resolved before the in-flight reconcile finished");
  finish();
  await run;
  assert.equal(finished, true);
  assert.equal(abortedSignal, false, "a reconcile that finishes in time is not aborted");
  assert.deepEqual(started, ["ns/slow"], "no key is started after shutdown");
  assert.equal(ctrl.inFlight, 0);
});

Deno.test("controller: shutdown is bounded and aborts reconciles that overrun", async () => {
  let sawAbort = false;
  const ctrl = new Controller({ name: "t", logger: silentLogger, shutdownTimeoutMs: 50 }, async (_key, signal) => {
    await untilAborted(signal);
    sawAbort = signal.aborted;
  });
  const stop = new AbortController();
  ctrl.enqueue("ns/stuck");
  const run = ctrl.run(stop.signal);
  await eventually("the stuck reconcile", () => ctrl.inFlight === 1, 2_000, 2);
  const t0 = performance.now();
  stop.abort();
  await run;
  const took = performance.now() - t0;
  assert.ok(took >= 45 && took < 1_000, `shutdown took ${took} ms`);
  await eventually("the reconcile sees the abort", () => sawAbort, 1_000, 2);
  assert.equal(ctrl.inFlight, 0);
});

Deno.test("controller: workers run different keys in parallel, never one key twice", async () => {
  let active = 0;
  let maxActive = 0;
  const perKey = new Map<string, number>();
  let maxPerKey = 0;
  let total = 0;
  const ctrl = new Controller({ name: "t", logger: silentLogger, workers: 3 }, async (key) => {
    total++;
    active++;
    perKey.set(key, (perKey.get(key) ?? 0) + 1);
    maxActive = Math.max(maxActive, active);
    maxPerKey = Math.max(maxPerKey, perKey.get(key)!);
    if (total < 30) ctrl.enqueue(key); // re-added while in flight
    await turn();
    perKey.set(key, perKey.get(key)! - 1);
    active--;
  });
  const stop = new AbortController();
  for (const k of ["a", "b", "c", "d"]) ctrl.enqueue(k);
  const run = ctrl.run(stop.signal);
  await eventually("30 reconciles", () => total >= 30 && ctrl.inFlight === 0 && ctrl.queue.len() === 0, 5_000, 5);
  stop.abort();
  await run;
  assert.equal(maxPerKey, 1);
  assert.equal(maxActive, 3);
});

Deno.test("controller: run refuses a second start", async () => {
  const ctrl = new Controller({ name: "t", logger: silentLogger }, () => Promise.resolve());
  const stop = new AbortController();
  const run = ctrl.run(stop.signal);
  await assert.rejects(ctrl.run(stop.signal), /already running/);
  stop.abort();
  await run;
});
