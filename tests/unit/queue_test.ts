/** The work queue and its rate limiters (pure). */
import assert from "node:assert/strict";
import { defaultRateLimiter, ExponentialBackoff, MaxOf, TokenBucket, WorkQueue } from "../../lib/runtime/mod.ts";
import { eventually } from "../../testing/helpers.ts";
import { fakeClock, fakeTimers, pending, queueWithBackoff, turn } from "../runtime_kit.ts";

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
      await turn();
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
  const clock = fakeTimers();
  const q = new WorkQueue({ now: clock.now });
  try {
    q.addAfter("late", 40);
    q.addAfter("late", 10_000); // later: ignored, the 40 ms schedule stays
    q.addAfter("now", 0);
    assert.equal(q.len(), 1, "a zero delay adds at once");
    assert.equal(await q.get(), "now");
    assert.equal(q.stats().delayed, 1);
    const late = q.get();
    await clock.advance(39);
    assert.ok(await pending(late), "the delayed key came too early");
    await clock.advance(1);
    assert.equal(await late, "late");
    q.addAfter("again", 10_000);
    q.addAfter("again", 10); // earlier: replaces the 10 s schedule
    const again = q.get();
    await clock.advance(10);
    assert.equal(await again, "again");
    assert.equal(q.stats().delayed, 0);
  } finally {
    q.shutDown();
    clock.restore();
  }
});

Deno.test("queue: addSoon coalesces a burst into one pass, and adds nothing when a pass is already due", async () => {
  const clock = fakeTimers();
  const q = new WorkQueue({ now: clock.now });
  try {
    for (let i = 0; i < 5; i++) q.addSoon("burst", 30);
    assert.equal(q.len(), 0, "not queued before the delay");
    assert.equal(q.stats().delayed, 1, "five events, one schedule");
    await clock.advance(30);
    assert.equal(await q.get(), "burst");
    q.addSoon("burst", 30); // processing and not due again: the running pass may have read a stale cache
    assert.equal(q.stats().delayed, 1);
    q.done("burst");
    await clock.advance(30);
    assert.equal(await q.get(), "burst");
    q.done("burst");
    q.add("waiting");
    q.addSoon("waiting", 30); // already queued: that pass sees the event
    assert.equal(q.stats().delayed, 0);
    assert.equal(await q.get(), "waiting");
    q.add("waiting"); // queued again behind the running pass
    q.addSoon("waiting", 30);
    assert.equal(q.stats().delayed, 0);
    q.done("waiting");
    assert.equal(await q.get(), "waiting");
    q.done("waiting");
    const next = q.get().then((k) => k);
    await clock.advance(60);
    assert.ok(await pending(next), "nothing else was scheduled");
  } finally {
    q.shutDown();
    clock.restore();
  }
});

Deno.test("queue: lookAgain replaces the key's earlier look-again, and undefined cancels it", async () => {
  const clock = fakeTimers();
  const q = new WorkQueue({ now: clock.now });
  try {
    q.lookAgain("k", 30);
    q.lookAgain("k", 60_000); // the latest pass says a minute: the 30 ms look is gone
    assert.equal(q.stats().delayed, 1);
    await clock.advance(100);
    assert.equal(q.len(), 0, "the replaced look-again must not fire");
    q.lookAgain("k", undefined);
    assert.equal(q.stats().delayed, 0, "cancelled");
    q.addSoon("e", 20); // an event's delay is not a look-again: untouched by lookAgain of another key
    q.lookAgain("e", undefined);
    await clock.advance(20);
    assert.equal(await q.get(), "e");
    q.done("e");
    q.lookAgain("z", 10);
    await clock.advance(10);
    assert.equal(await q.get(), "z");
  } finally {
    q.shutDown();
    clock.restore();
  }
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
