/** eachBounded: the bound holds, every item runs once, and the first error wins after in-flight calls end. */
import assert from "node:assert/strict";
import { allSettledOrThrow, eachBounded } from "../../lib/runtime/bounded.ts";

/** One turn of the event loop, so that calls in flight interleave. */
const tick = () => new Promise((r) => setTimeout(r, 0));

Deno.test("eachBounded never has more than `limit` calls in flight and runs each item once", async () => {
  for (const limit of [1, 2, 4, 10]) {
    let inFlight = 0;
    let peak = 0;
    const seen: number[] = [];
    await eachBounded([...Array(9).keys()], limit, async (n) => {
      inFlight++;
      peak = Math.max(peak, inFlight);
      await tick();
      seen.push(n);
      inFlight--;
    });
    assert.deepEqual(seen.toSorted((a, b) => a - b), [...Array(9).keys()], `limit ${limit}`);
    assert.equal(peak, Math.min(limit, 9), `limit ${limit}`);
  }
});

Deno.test("eachBounded: after a failure no new call starts, in-flight ones finish, the first error is thrown", async () => {
  const finished: number[] = [];
  const started: number[] = [];
  await assert.rejects(
    eachBounded([0, 1, 2, 3, 4, 5], 2, async (n) => {
      started.push(n);
      await tick();
      if (n === 1 || n === 0) throw new Error(`item ${n}`);
      await tick();
      finished.push(n);
    }),
    /item 0/,
  );
  assert.deepEqual(started, [0, 1], "nothing starts once a call has failed");
  assert.deepEqual(finished, []);
});

Deno.test("eachBounded with no items does nothing", async () => {
  let calls = 0;
  await eachBounded([], 4, () => {
    calls++;
    return Promise.resolve();
  });
  assert.equal(calls, 0);
});

Deno.test("allSettledOrThrow answers every value in order, or the first rejection once all have settled", async () => {
  const [a, b] = await allSettledOrThrow([Promise.resolve(1), Promise.resolve("x")]);
  assert.deepEqual([a, b], [1, "x"]);
  let finishLate!: (n: number) => void;
  const late = new Promise<number>((r) => (finishLate = r));
  let rejected = false;
  const all = allSettledOrThrow([Promise.reject(new Error("first")), late, Promise.reject(new Error("second"))])
    .catch((err) => (rejected = true, err));
  await tick();
  assert.equal(rejected, false, "the rejection waits for the promise still running");
  finishLate(3);
  assert.match(String(await all), /first/);
});
