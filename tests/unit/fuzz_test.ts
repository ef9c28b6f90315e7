/** The seed policy of the randomised tests (testing/fuzz.ts): fixed in the suite, replayable, exploring on request. */
import assert from "node:assert/strict";
import { forEachSeed, fuzzMode, SUITE_SEEDS } from "../../testing/fuzz.ts";

Deno.test("the mode comes from NICO_FUZZ_SEED, then NICO_FUZZ_EXPLORE; the suite's seeds otherwise", () => {
  const env = (vars: Record<string, string>) => (n: string) => vars[n];
  assert.deepEqual(fuzzMode(env({})), { kind: "suite" });
  assert.deepEqual(fuzzMode(env({ NICO_FUZZ_SEED: "42", NICO_FUZZ_EXPLORE: "1" })), { kind: "replay", seed: 42 });
  assert.deepEqual(fuzzMode(env({ NICO_FUZZ_EXPLORE: "1", NICO_FUZZ_MS: "50" })), { kind: "explore", ms: 50 });
  assert.throws(() => fuzzMode(env({ NICO_FUZZ_SEED: "x" })), /NICO_FUZZ_SEED must be an integer: current value is x/);
});

Deno.test("the suite runs the same cases every time: each seed, a fixed count, the same draws", async () => {
  const draws = async () => {
    const got: number[] = [];
    const n = await forEachSeed("draws", 5, (rand) => void got.push(rand()), { kind: "suite" });
    return { n, got };
  };
  const first = await draws();
  assert.equal(first.n, 5 * SUITE_SEEDS.length);
  assert.deepEqual(await draws(), first);
  assert.ok(SUITE_SEEDS.includes(470195051), "a seed that once failed left the suite");
});

Deno.test("a failure names its seed and case, with the cause", async () => {
  const failing = forEachSeed("prop", 10, (rand) => {
    if (rand() >= 0) throw new Error("boom");
  }, { kind: "replay", seed: 9 });
  await assert.rejects(failing, (err: Error) => {
    assert.match(err.message, /prop failed at case 0 of NICO_FUZZ_SEED=9/);
    assert.equal((err.cause as Error).message, "boom");
    return true;
  });
});

Deno.test("exploring runs fresh seeds for the time given, not the case count", async () => {
  // Long enough that a loaded machine (a CI run at load 28 saw 0 cases in 30 ms) still runs several.
  const ran = await forEachSeed("explore", 1, () => {}, { kind: "explore", ms: 500 });
  assert.ok(ran > 1, `exploring ran ${ran} cases`);
});
