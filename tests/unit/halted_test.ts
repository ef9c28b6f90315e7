/** When a halted rollout is told by a Warning Event (core/status/halted.ts): once per halt, by its reason. */
import assert from "node:assert/strict";
import { haltedNow } from "../../core/status/halted.ts";

const stalled = (status: string, reason: string, message = `${reason}: at w-1`) => [
  { type: "Ready", status: "False", reason: "Halted" },
  { type: "Stalled", status, reason, message },
];

const CASES: [string, ReturnType<typeof stalled> | undefined, ReturnType<typeof stalled>, string | undefined][] = [
  ["no status before: a halt is news", undefined, stalled("True", "VersionSkew"), "VersionSkew"],
  ["not stalled before", stalled("False", "NotStalled"), stalled("True", "NodeFailed"), "NodeFailed"],
  ["the same halt again: nothing", stalled("True", "VersionSkew"), stalled("True", "VersionSkew"), undefined],
  ["another reason: news", stalled("True", "VersionSkew"), stalled("True", "NodeFailed"), "NodeFailed"],
  ["recovered: nothing", stalled("True", "NodeFailed"), stalled("False", "NotStalled"), undefined],
  ["not stalled at all", undefined, stalled("False", "NotStalled"), undefined],
];

for (const [name, before, after, want] of CASES) {
  Deno.test(`haltedNow: ${name}`, () => {
    const got = haltedNow(before, after);
    assert.equal(got?.reason, want);
    if (want) assert.equal(got?.message, `${want}: at w-1`);
  });
}
