/**
 * The controller runtime: the work queue and rate limiters (pure), the
 * cache diff of a relist (pure), the controller with directly enqueued keys
 * (pure), and informers and controllers against a real kube-apiserver.
 */
import assert from "node:assert/strict";
import {
  KubeClient,
  type KubeObject,
  type ListOptions,
  type ListResult,
  loadKubeConfig,
  type WatchEvent,
  type WatchOptions,
} from "../lib/kube/client.ts";
import { ApiError } from "../lib/kube/errors.ts";
import type { Resource } from "../lib/kube/resources.ts";
import {
  type CacheEvent,
  Controller,
  defaultRateLimiter,
  diffSnapshot,
  ExponentialBackoff,
  Informer,
  jsonLogger,
  keyOf,
  MaxOf,
  type ReconcileOutcome,
  silentLogger,
  sleep,
  splitKey,
  TerminalError,
  TokenBucket,
  untilAborted,
  WorkQueue,
} from "../lib/runtime/mod.ts";
import { type ControlPlane, startControlPlane } from "../testing/envtest/controlplane.ts";
import { eventually } from "../testing/helpers.ts";

// ---------------------------------------------------------------- helpers

/** Whether `p` is still pending after the microtasks and timers of `ms`. */
async function pending(p: Promise<unknown>, ms = 5): Promise<boolean> {
  let settled = false;
  p.then(() => (settled = true), () => (settled = true));
  await sleep(ms);
  return !settled;
}

function fakeClock(start = 1_000) {
  let t = start;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

/** A queue whose rate limiter is a plain exponential backoff (no bucket). */
function queueWithBackoff(baseMs: number, maxMs = 1_000_000) {
  return new WorkQueue({ rateLimiter: new ExponentialBackoff({ baseMs, maxMs }) });
}

// ---------------------------------------------------------------- queue

Deno.test("queue: a waiting key is queued once", async () => {
  const q = new WorkQueue();
  q.add("ns/a");
  q.add("ns/a");
  q.add("ns/b");
  q.add("ns/a");
  assert.equal(q.len(), 2);
  assert.equal(q.stats().adds, 2);
  assert.equal(await q.get(), "ns/a");
  assert.equal(await q.get(), "ns/b");
  assert.equal(q.len(), 0);
  assert.equal(q.stats().processing, 2);
  q.done("ns/a");
  q.done("ns/b");
  assert.equal(q.stats().processing, 0);
  q.shutDown();
});

Deno.test("queue: a key being processed is not handed out again until done, then comes back once", async () => {
  const q = new WorkQueue();
  q.add("k");
  assert.equal(await q.get(), "k");
  q.add("k");
  q.add("k");
  assert.equal(q.len(), 0, "a key in processing is not queued");
  const second = q.get();
  assert.ok(await pending(second), "a second worker must not get the key while it is processed");
  q.done("k");
  assert.equal(await second, "k", "the dirty key is queued again after done");
  q.done("k");
  assert.ok(await pending(q.get().then((k) => k)), "the two re-adds made a single re-queue");
  q.shutDown();
});

Deno.test("queue: done without re-add does not requeue, and get waits for the next add", async () => {
  const q = new WorkQueue();
  q.add("x");
  assert.equal(await q.get(), "x");
  q.done("x");
  assert.equal(q.len(), 0);
  const next = q.get();
  assert.ok(await pending(next));
  q.add("y");
  assert.equal(await next, "y");
  q.done("y");
  q.shutDown();
});

Deno.test("queue: concurrent workers never process the same key at once", async () => {
  const q = new WorkQueue();
  const active = new Map<string, number>();
  let maxPerKey = 0;
  let maxOverall = 0;
  let overall = 0;
  const processed: string[] = [];
  const keys = ["a", "b", "c", "d"];
  const worker = async () => {
    while (true) {
      const key = await q.get();
      if (key === undefined) return;
      const n = (active.get(key) ?? 0) + 1;
      active.set(key, n);
      overall++;
      maxPerKey = Math.max(maxPerKey, n);
      maxOverall = Math.max(maxOverall, overall);
      processed.push(key);
      await sleep(3);
      // Re-adding while processing must not let another worker in.
      if (processed.length < 20) q.add(key);
      active.set(key, (active.get(key) ?? 1) - 1);
      overall--;
      q.done(key);
    }
  };
  const workers = [worker(), worker(), worker(), worker()];
  for (const k of keys) q.add(k);
  await eventually("20 keys processed", () => processed.length >= 20, 5_000, 5);
  await eventually("the queue drains", () => q.len() === 0 && q.stats().processing === 0, 5_000, 5);
  q.shutDown();
  await Promise.all(workers);
  assert.equal(maxPerKey, 1, "one key was processed by two workers at once");
  assert.ok(maxOverall > 1, `workers did not run in parallel (max ${maxOverall})`);
  for (const k of keys) assert.ok(processed.includes(k), `${k} was never processed`);
});

Deno.test("queue: addAfter delays a key and an earlier schedule wins", async () => {
  const q = new WorkQueue();
  q.addAfter("late", 40);
  q.addAfter("late", 10_000); // later: ignored, the 40 ms schedule stays
  q.addAfter("now", 0);
  assert.equal(q.len(), 1, "a zero delay adds at once");
  assert.equal(await q.get(), "now");
  assert.equal(q.stats().delayed, 1);
  const started = performance.now();
  const late = q.get();
  assert.ok(await pending(late, 15), "the delayed key came too early");
  assert.equal(await late, "late");
  const waited = performance.now() - started;
  assert.ok(waited >= 35 && waited < 5_000, `waited ${waited} ms`);
  q.addAfter("again", 10_000);
  q.addAfter("again", 10); // earlier: replaces the 10 s schedule
  assert.equal(await q.get(), "again");
  assert.equal(q.stats().delayed, 0);
  q.shutDown();
});

Deno.test("queue: addRateLimited backs off per key and forget resets it", async () => {
  const q = queueWithBackoff(20);
  const at = (key: string) => {
    const t0 = performance.now();
    q.addRateLimited(key);
    return q.get().then((k) => {
      assert.equal(k, key);
      q.done(key);
      return performance.now() - t0;
    });
  };
  const first = await at("k");
  const second = await at("k");
  const third = await at("k");
  assert.ok(first >= 18, `first retry after ${first} ms, expected about 20`);
  assert.ok(second >= 38, `second retry after ${second} ms, expected about 40`);
  assert.ok(third >= 78, `third retry after ${third} ms, expected about 80`);
  assert.equal(q.retries("k"), 3);
  assert.equal(q.stats().retries, 3);
  assert.equal(q.retries("other"), 0, "backoff is per key");
  q.forget("k");
  assert.equal(q.retries("k"), 0);
  const afterForget = await at("k");
  assert.ok(afterForget < 120, `after forget the delay starts from the base again (${afterForget} ms)`);
  q.shutDown();
});

Deno.test("queue: exponential backoff doubles from 5 ms and caps at 1000 s", async (t) => {
  const b = new ExponentialBackoff();
  const delays = Array.from({ length: 25 }, () => b.when("k"));
  const cases: [number, number][] = [
    [0, 5],
    [1, 10],
    [2, 20],
    [3, 40],
    [10, 5 * 1024],
    [17, 655_360],
    [18, 1_000_000],
    [24, 1_000_000],
  ];
  for (const [i, want] of cases) {
    await t.step(`retry ${i + 1} waits ${want} ms`, () => assert.equal(delays[i], want));
  }
  await t.step("no overflow after very many failures", () => {
    for (let i = 0; i < 2_000; i++) b.when("k");
    assert.equal(b.when("k"), 1_000_000);
  });
  await t.step("forget resets the key only", () => {
    b.when("other");
    b.forget("k");
    assert.equal(b.retries("k"), 0);
    assert.equal(b.when("k"), 5);
    assert.equal(b.retries("other"), 1);
    assert.equal(b.when("other"), 10);
  });
});

Deno.test("queue: the token bucket allows a burst of 100 then 10 per second", async (t) => {
  const clock = fakeClock();
  const bucket = new TokenBucket({ now: clock.now });
  await t.step("the first 100 retries are free", () => {
    for (let i = 0; i < 100; i++) assert.equal(bucket.when(`k${i}`), 0);
  });
  await t.step("then each retry waits 100 ms more", () => {
    assert.equal(Math.round(bucket.when("x")), 100);
    assert.equal(Math.round(bucket.when("y")), 200);
  });
  await t.step("tokens refill at 10 per second", () => {
    clock.advance(1_000); // +10 tokens: -2 -> 8
    for (let i = 0; i < 8; i++) assert.equal(bucket.when(`r${i}`), 0);
    assert.equal(Math.round(bucket.when("z")), 100);
  });
  await t.step("the default limiter takes the larger of backoff and bucket", () => {
    const c = fakeClock();
    const limiter = defaultRateLimiter({ bucket: { now: c.now } });
    for (let i = 0; i < 100; i++) assert.equal(limiter.when(`k${i}`), 5);
    assert.equal(Math.round(limiter.when("k0")), 100, "bucket empty: 100 ms beats 10 ms of backoff");
    c.advance(60_000);
    for (let i = 0; i < 9; i++) limiter.when("deep");
    assert.equal(limiter.when("deep"), 5 * 2 ** 9, "bucket full again: the backoff wins");
    assert.equal(limiter.retries("deep"), 10);
    limiter.forget("deep");
    assert.equal(limiter.retries("deep"), 0);
  });
  await t.step("MaxOf consults every limiter", () => {
    const a = new ExponentialBackoff({ baseMs: 1 });
    const b = new ExponentialBackoff({ baseMs: 3 });
    const m = new MaxOf(a, b);
    assert.equal(m.when("k"), 3);
    assert.equal(m.when("k"), 6);
    assert.equal(a.retries("k"), 2);
  });
});

Deno.test("queue: shutDown wakes waiting workers, drops delayed keys and stops intake", async () => {
  const q = new WorkQueue();
  const waiting = [q.get(), q.get()];
  q.addAfter("delayed", 60_000); // the test sanitizer fails if this timer survives
  q.addRateLimited("limited");
  q.shutDown();
  assert.deepEqual(await Promise.all(waiting), [undefined, undefined]);
  assert.equal(q.shuttingDown, true);
  q.add("late");
  q.addAfter("later", 1);
  q.addRateLimited("latest");
  assert.equal(q.len(), 0);
  assert.equal(q.stats().delayed, 0);
  assert.equal(await q.get(), undefined);
  q.shutDown(); // twice is fine
});

Deno.test("queue: a worker holding a key at shutdown can still call done", async () => {
  const q = new WorkQueue();
  q.add("k");
  q.add("j");
  assert.equal(await q.get(), "k");
  q.add("k");
  q.shutDown();
  q.done("k");
  assert.equal(q.stats().processing, 0);
  assert.equal(q.len(), 0, "nothing is queued after shutdown, not even a dirty key");
  assert.equal(await q.get(), undefined, "queued keys are not handed out after shutdown");
});

Deno.test("queue: hooks observe adds, retries, depth and durations", async () => {
  const seen = {
    adds: [] as string[],
    retries: [] as string[],
    depth: [] as number[],
    queued: [] as number[],
    work: [] as number[],
  };
  const clock = fakeClock();
  const q = new WorkQueue({
    now: clock.now,
    rateLimiter: new ExponentialBackoff({ baseMs: 1 }),
    hooks: {
      add: (k) => seen.adds.push(k),
      retry: (k) => seen.retries.push(k),
      depth: (d) => seen.depth.push(d),
      queueDuration: (s) => seen.queued.push(s),
      workDuration: (s) => seen.work.push(s),
    },
  });
  q.add("a");
  q.add("a");
  q.add("b");
  clock.advance(250);
  assert.equal(await q.get(), "a");
  clock.advance(1_500);
  q.done("a");
  q.addRateLimited("a");
  await eventually("the retry", () => q.len() === 2, 2_000, 2);
  assert.deepEqual(seen.adds, ["a", "b", "a"]);
  assert.deepEqual(seen.retries, ["a"]);
  assert.deepEqual(seen.depth, [1, 2, 1, 2]);
  assert.deepEqual(seen.queued, [0.25]);
  assert.deepEqual(seen.work, [1.5]);
  q.shutDown();
});

// ---------------------------------------------------------------- relist diff

interface ConfigMap extends KubeObject {
  data?: Record<string, string>;
}

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

function outcomesRecorder() {
  const outcomes: [ReconcileOutcome, string][] = [];
  return { outcomes, hooks: { reconciled: (o: ReconcileOutcome, _s: number, key: string) => outcomes.push([o, key]) } };
}

Deno.test("controller: reconciles every key, a failing one with growing backoff until it succeeds", async () => {
  const calls = new Map<string, number[]>();
  const rec = outcomesRecorder();
  const ctrl = new Controller(
    {
      name: "t",
      workers: 2,
      logger: silentLogger,
      rateLimiter: new ExponentialBackoff({ baseMs: 10 }),
      hooks: rec.hooks,
    },
    async (key) => {
      const times = calls.get(key) ?? [];
      times.push(performance.now());
      calls.set(key, times);
      await sleep(1);
      if (key === "ns/flaky" && times.length <= 3) throw new Error(`attempt ${times.length} failed`);
    },
  );
  const stop = new AbortController();
  for (const k of ["ns/a", "ns/b", "ns/flaky"]) ctrl.enqueue(k);
  const run = ctrl.run(stop.signal);
  await eventually(
    "flaky succeeds",
    () => rec.outcomes.some(([o, k]) => o === "success" && k === "ns/flaky"),
    5_000,
    5,
  );
  stop.abort();
  await run;
  assert.equal(calls.get("ns/a")?.length, 1);
  assert.equal(calls.get("ns/b")?.length, 1);
  const flaky = calls.get("ns/flaky")!;
  assert.equal(flaky.length, 4);
  const gaps = flaky.slice(1).map((t, i) => t - flaky[i]!);
  // 10, 20, 40 ms of backoff (plus the 1 ms reconcile each time).
  assert.ok(gaps[0]! >= 9 && gaps[1]! >= 19 && gaps[2]! >= 39, `gaps ${gaps.map(Math.round)}`);
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
  await sleep(60); // a retry of ns/bad would be due after 1 ms
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
  const ctrl = new Controller({ name: "t", logger: silentLogger, workers: 1 }, async (key, signal) => {
    started.push(key);
    await sleep(200);
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
  assert.ok(await pending(run, 20), "run resolved before the in-flight reconcile finished");
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
    await sleep(5);
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

// ---------------------------------------------------------------- envtest

const CONFIGMAPS: Resource = { group: "", version: "v1", kind: "ConfigMap", plural: "configmaps", namespaced: true };
const SECRETS: Resource = { group: "", version: "v1", kind: "Secret", plural: "secrets", namespaced: true };

/**
 * One control plane for the file. Secrets bypass the API server's watch
 * cache so that a watch from a compacted resourceVersion gets a real 410
 * from etcd (with the cache, old resourceVersions are served from memory);
 * ConfigMaps keep the cache, as in production.
 */
const env = (() => {
  let cp: Promise<ControlPlane> | undefined;
  return {
    get: () => (cp ??= startControlPlane({ apiserverArgs: ["--watch-cache-sizes=secrets#0"] })),
    async stop() {
      if (cp) await (await cp).stop();
      cp = undefined;
    },
  };
})();
/** The control plane's processes outlive single tests, so only these two tests skip the leak checks. */
const noSanitizers = { sanitizeResources: false, sanitizeOps: false };

/**
 * A real client whose lists and watches can be held or failed, to drive an
 * informer through its error paths.
 */
class ScriptedClient extends KubeClient {
  lists = 0;
  watches: { at: number; resourceVersion: string | undefined }[] = [];
  /** Inject these errors, in order, into the next lists / watches. */
  listFailures: unknown[] = [];
  watchFailures: unknown[] = [];
  /** When set, watches wait for it (or their abort) before starting. */
  hold: Promise<void> | undefined;

  static from(path: string): ScriptedClient {
    return new ScriptedClient(loadKubeConfig(path), { userAgent: "nico-tests", fieldManager: "nico-tests" });
  }

  override async list<T extends KubeObject>(r: Resource, opts: ListOptions = {}): Promise<ListResult<T>> {
    this.lists++;
    const failure = this.listFailures.shift();
    if (failure) throw failure;
    return await super.list<T>(r, opts);
  }

  override async *watch<T extends KubeObject>(r: Resource, opts: WatchOptions = {}): AsyncGenerator<WatchEvent<T>> {
    this.watches.push({ at: performance.now(), resourceVersion: opts.resourceVersion });
    if (this.hold) await untilAborted(opts.signal ?? new AbortController().signal, this.hold);
    opts.signal?.throwIfAborted();
    const failure = this.watchFailures.shift();
    if (failure) throw failure;
    yield* super.watch<T>(r, opts);
  }
}

/**
 * Starts an informer and stops it when the scope ends, also when an
 * assertion failed; fails if stopping takes long (the watch was not aborted).
 */
function started<T extends KubeObject>(informer: Informer<T>): AsyncDisposable {
  informer.start();
  return {
    async [Symbol.asyncDispose]() {
      const give = new AbortController();
      const stopped = await Promise.race([
        informer.stop().then(() => true),
        sleep(5_000, give.signal).then(() => false),
      ]);
      give.abort();
      assert.ok(stopped, "stop() did not end the informer within 5 s");
    },
  };
}

interface Secret extends KubeObject {
  data?: Record<string, string>;
  stringData?: Record<string, string>;
}

/** `data.v` of a ConfigMap, or of a Secret (base64). */
function valueOf(obj: ConfigMap | Secret | undefined): string {
  const v = obj?.data?.["v"];
  if (v === undefined) return "?";
  return obj?.kind === "Secret" ? atob(v) : v;
}

/** Records informer events as `type name v [was v]`. */
function recordEvents<T extends ConfigMap | Secret>(informer: Informer<T>): string[] {
  const events: string[] = [];
  informer.onEvent((type, obj, old) => {
    const was = type === "update" ? ` was ${valueOf(old)}` : "";
    events.push(`${type} ${obj.metadata.name} ${valueOf(obj)}${was}`);
  });
  return events;
}

function configMap(ns: string, name: string, v: string, labels: Record<string, string> = {}): ConfigMap {
  return { metadata: { name, namespace: ns, labels }, data: { v } };
}

function secret(ns: string, name: string, v: string): Secret {
  return { metadata: { name, namespace: ns }, stringData: { v } };
}

async function serverState(client: KubeClient, r: Resource, ns: string): Promise<string[]> {
  const { items } = await client.list<KubeObject>(r, { namespace: ns });
  return items.map((i) => `${i.metadata.name}@${i.metadata.resourceVersion}`).sort();
}

function cacheState(informer: Informer<KubeObject>, ns: string): string[] {
  return informer.list(ns).map((i) => `${i.metadata.name}@${i.metadata.resourceVersion}`).sort();
}

/** The client URL of the control plane's etcd, read from its command line (Linux). */
function etcdUrl(cp: ControlPlane): string {
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    let args: string[];
    try {
      args = Deno.readTextFileSync(`/proc/${entry.name}/cmdline`).split("\0");
    } catch {
      continue;
    }
    if (!args[0]?.endsWith("/etcd") || !args.includes(`--data-dir=${cp.dir}/etcd`)) continue;
    const flag = args.find((a) => a.startsWith("--listen-client-urls="));
    if (flag) return flag.slice(flag.indexOf("=") + 1).split(",")[0]!;
  }
  throw new Error(`no etcd process for ${cp.dir}`);
}

/** Compacts etcd's history up to its current revision; answers that revision. */
async function compactEtcd(cp: ControlPlane): Promise<number> {
  const url = etcdUrl(cp);
  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${url}${path}`, { method: "POST", body: JSON.stringify(body) });
    const json = await res.json();
    assert.equal(res.status, 200, JSON.stringify(json));
    return json as { header: { revision: string } };
  };
  const revision = Number((await post("/v3/kv/range", { key: btoa("/") })).header.revision);
  await post("/v3/kv/compaction", { revision, physical: true });
  return revision;
}

Deno.test({
  name: "envtest: start the control plane",
  ...noSanitizers,
  async fn() {
    const cp = await env.get();
    assert.ok((await cp.client.getText("/readyz")).includes("ok"));
  },
});

Deno.test("envtest: the informer sees add, update and delete, and its cache matches the server", async () => {
  const cp = await env.get();
  const ns = await cp.namespace("inf");
  await cp.client.create(CONFIGMAPS, configMap(ns, "pre", "1"));
  const informer = new Informer<ConfigMap>(cp.client, CONFIGMAPS, { namespace: ns, logger: silentLogger });
  const events = recordEvents(informer);
  informer.onEvent(() => {
    throw new Error("a broken handler must not stop the informer");
  });
  assert.equal(informer.hasSynced(), false);
  {
    await using _ = started(informer);
    await informer.synced();
    assert.equal(informer.hasSynced(), true);
    assert.deepEqual(events, ["add pre 1"]);

    await cp.client.create(CONFIGMAPS, configMap(ns, "a", "1", { app: "x" }));
    await cp.client.create(CONFIGMAPS, configMap(ns, "b", "1", { app: "y" }));
    await cp.client.mergePatch(CONFIGMAPS, "a", ns, { data: { v: "2" } });
    await cp.client.delete(CONFIGMAPS, "pre", ns);
    await eventually("five events", () => events.length >= 5, 10_000);
    assert.deepEqual(events, ["add pre 1", "add a 1", "add b 1", "update a 2 was 1", "delete pre 1"]);

    assert.deepEqual(cacheState(informer, ns), await serverState(cp.client, CONFIGMAPS, ns));
    assert.equal(informer.get(ns, "a")?.data?.["v"], "2");
    assert.equal(informer.get(ns, "pre"), undefined);
    assert.deepEqual(informer.byLabel("app", "x").map((o) => o.metadata.name), ["a"]);
    assert.deepEqual(informer.byLabel("app", "x", "elsewhere"), []);
    assert.deepEqual(informer.filter((o) => o.metadata.labels?.["app"] === "y").map((o) => o.metadata.name), ["b"]);
    assert.deepEqual(informer.list("elsewhere"), []);
    const server = await cp.client.list<ConfigMap>(CONFIGMAPS, { namespace: ns });
    const newest = Math.max(...server.items.map((i) => Number(i.metadata.resourceVersion)));
    assert.ok(Number(informer.resourceVersion) >= newest, `${informer.resourceVersion} < ${newest}`);
  }
  assert.equal(informer.running, false);
  await cp.client.create(CONFIGMAPS, configMap(ns, "after", "1"));
  await sleep(300);
  assert.equal(events.length, 5, "a stopped informer still received events");
  assert.equal(informer.stats().lists, 1);
});

Deno.test("envtest: a label-selected informer drops objects that stop matching", async () => {
  const cp = await env.get();
  const ns = await cp.namespace("sel");
  const informer = new Informer<ConfigMap>(cp.client, CONFIGMAPS, {
    namespace: ns,
    labelSelector: "app=x",
    logger: silentLogger,
  });
  const events = recordEvents(informer);
  {
    await using _ = started(informer);
    await informer.synced();
    await cp.client.create(CONFIGMAPS, configMap(ns, "a", "1", { app: "x" }));
    await cp.client.create(CONFIGMAPS, configMap(ns, "other", "1", { app: "y" }));
    await cp.client.mergePatch(CONFIGMAPS, "a", ns, { metadata: { labels: { app: "y" } } });
    await eventually("add then delete", () => events.length >= 2, 10_000);
  }
  assert.deepEqual(events, ["add a 1", "delete a 1"]);
  assert.deepEqual(informer.list(), []);
});

Deno.test("envtest: the informer resumes watches the server ends, without relisting", async () => {
  const cp = await env.get();
  const ns = await cp.namespace("resume");
  const client = ScriptedClient.from(cp.kubeconfigPath);
  const informer = new Informer<ConfigMap>(client, CONFIGMAPS, {
    namespace: ns,
    watchTimeoutSeconds: 1,
    logger: silentLogger,
  });
  const events = recordEvents(informer);
  {
    await using _ = started(informer);
    await informer.synced();
    await eventually("three watches", () => informer.stats().watches >= 3, 20_000);
    await cp.client.create(CONFIGMAPS, configMap(ns, "a", "1"));
    await eventually("the add", () => events.length >= 1, 10_000);
    const rvAfterAdd = informer.resourceVersion;
    await eventually("a watch from after the add", () => client.watches.at(-1)?.resourceVersion === rvAfterAdd, 10_000);
    await cp.client.mergePatch(CONFIGMAPS, "a", ns, { data: { v: "2" } });
    await eventually("the update", () => events.length >= 2, 10_000);
  }
  assert.deepEqual(events, ["add a 1", "update a 2 was 1"], "events were lost or replayed across watch restarts");
  const stats = informer.stats();
  assert.equal(stats.lists, 1, "a watch the server ended must be resumed, not relisted");
  assert.equal(stats.gone, 0);
  assert.equal(stats.errors, 0);
  assert.ok(stats.watches >= 4, `watches: ${stats.watches}`);
  for (const w of client.watches) assert.ok(w.resourceVersion, "every watch resumes from a resourceVersion");
});

Deno.test({
  name: "envtest: a real 410 Gone (etcd compacted) relists and emits the missed changes as synthetic events",
  ignore: Deno.build.os !== "linux",
  async fn() {
    const cp = await env.get();
    const ns = await cp.namespace("gone");
    for (const name of ["keep", "change", "remove"]) await cp.client.create(SECRETS, secret(ns, name, "1"));
    const client = ScriptedClient.from(cp.kubeconfigPath);
    let release!: () => void;
    client.hold = new Promise((r) => (release = r));
    const informer = new Informer<Secret>(client, SECRETS, { namespace: ns, logger: silentLogger, minBackoffMs: 10 });
    const events = recordEvents(informer);
    {
      await using _ = started(informer);
      await informer.synced();
      await eventually("the held watch", () => client.watches.length === 1, 10_000);
      assert.deepEqual(events.sort(), ["add change 1", "add keep 1", "add remove 1"]);
      events.length = 0;
      const listedAt = Number(informer.resourceVersion);

      // Changes the informer cannot see (its watch is held), then etcd forgets the history.
      await cp.client.mergePatch(SECRETS, "change", ns, { stringData: { v: "2" } });
      await cp.client.delete(SECRETS, "remove", ns);
      await cp.client.create(SECRETS, secret(ns, "new", "1"));
      assert.ok((await compactEtcd(cp)) > listedAt);
      client.hold = undefined;
      release();

      await eventually("the relist", () => informer.stats().lists === 2, 10_000);
      await cp.client.create(SECRETS, secret(ns, "later", "1"));
      await eventually("the event after the relist", () => events.includes("add later 1"), 10_000);
    }
    assert.deepEqual(events, ["delete remove 1", "update change 2 was 1", "add new 1", "add later 1"]);
    assert.equal(informer.stats().gone, 1, "the server answered 410 once");
    assert.equal(informer.stats().errors, 0);
    assert.ok(
      Number(client.watches[1]?.resourceVersion) > Number(client.watches[0]?.resourceVersion),
      "after the 410 the watch starts from the fresh list",
    );
    assert.deepEqual(cacheState(informer, ns), await serverState(cp.client, SECRETS, ns));
  },
});

Deno.test("envtest: a 410 thrown by a watch relists, and unchanged objects give no event", async () => {
  const cp = await env.get();
  const ns = await cp.namespace("gone2");
  await cp.client.create(CONFIGMAPS, configMap(ns, "keep", "1"));
  await cp.client.create(CONFIGMAPS, configMap(ns, "change", "1"));
  const client = ScriptedClient.from(cp.kubeconfigPath);
  let release!: () => void;
  client.hold = new Promise((r) => (release = r));
  client.watchFailures = [new ApiError(410, "Expired", "too old resource version", "WATCH", "/api/v1/configmaps")];
  const informer = new Informer<ConfigMap>(client, CONFIGMAPS, { namespace: ns, logger: silentLogger });
  const events = recordEvents(informer);
  {
    await using _ = started(informer);
    await informer.synced();
    await eventually("the held watch", () => client.watches.length === 1, 10_000);
    events.length = 0;
    await cp.client.mergePatch(CONFIGMAPS, "change", ns, { data: { v: "2" } });
    await cp.client.create(CONFIGMAPS, configMap(ns, "new", "1"));
    client.hold = undefined;
    release();
    await eventually("the relist", () => informer.stats().lists === 2, 10_000);
    await cp.client.delete(CONFIGMAPS, "keep", ns);
    await eventually("the delete after the relist", () => events.includes("delete keep 1"), 10_000);
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
  });
  const events = recordEvents(informer);
  {
    await using _ = started(informer);
    await informer.synced();
    assert.equal(client.lists, 3, "two failed lists, then one that worked");
    await eventually("the watch to come up", () => client.watches.length >= 8, 10_000);
    await cp.client.create(CONFIGMAPS, configMap(ns, "a", "1"));
    await eventually("the add", () => events.length >= 1, 10_000);
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
  const informer = new Informer<ConfigMap>(client, CONFIGMAPS, { namespace: ns, resyncMs: 100, logger: silentLogger });
  const events = recordEvents(informer);
  {
    await using _ = started(informer);
    await informer.synced();
    await eventually("two resyncs", () => informer.stats().resyncs >= 2, 10_000);
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
    await eventually("flaky reconciled", () => calls.get(key("flaky"))?.length === 3, 10_000);
    await eventually("ok and before reconciled", () => calls.has(key("ok")) && calls.has(key("before")), 10_000);
    await cp.client.mergePatch(CONFIGMAPS, "ok", ns, { data: { v: "2" } });
    await eventually("ok reconciled again", () => calls.get(key("ok"))?.at(-1) === "2", 10_000);
    await cp.client.delete(CONFIGMAPS, "before", ns);
    await eventually("the delete reconciled", () => calls.get(key("before"))?.length === 2, 10_000);
    await sleep(200);
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

Deno.test({
  name: "envtest: stop the control plane",
  ...noSanitizers,
  async fn() {
    await env.stop();
  },
});
