/**
 * Which workload clusters keep a live connection (core/nodes/watches.ts): the most recently needed, at most the
 * budget, by table.
 */
import assert from "node:assert/strict";
import { watchChanges, watchedClusters } from "../../core/nodes/watches.ts";

const uses = (...xs: ([string, number] | [string, number, "watching"])[]) =>
  xs.map(([key, neededAt, w]) => ({ key, neededAt, watching: w === "watching" }));

Deno.test("the most recently needed clusters watch, at most the budget", () => {
  const cases: { name: string; uses: ReturnType<typeof uses>; max: number; want: string[] }[] = [
    { name: "no clusters", uses: [], max: 3, want: [] },
    { name: "fewer than the budget: every one", uses: uses(["a", 1], ["b", 2]), max: 3, want: ["b", "a"] },
    { name: "exactly the budget", uses: uses(["a", 1], ["b", 2], ["c", 3]), max: 3, want: ["c", "b", "a"] },
    { name: "over the budget: the oldest polls", uses: uses(["a", 1], ["b", 5], ["c", 3]), max: 2, want: ["b", "c"] },
    { name: "ties go by key", uses: uses(["z", 4], ["m", 4], ["a", 4]), max: 2, want: ["a", "m"] },
    { name: "a budget of 0: every cluster polls", uses: uses(["a", 1]), max: 0, want: [] },
    { name: "a negative budget is 0", uses: uses(["a", 1]), max: -1, want: [] },
    { name: "never needed (0) comes last", uses: uses(["a", 0], ["b", 9], ["c", 0]), max: 2, want: ["b", "a"] },
    {
      name: "a tie keeps the watch where it is",
      uses: uses(["a", 0], ["b", 9], ["z", 0, "watching"]),
      max: 2,
      want: ["b", "z"],
    },
    { name: "recency beats holding a watch", uses: uses(["a", 5], ["z", 1, "watching"]), max: 1, want: ["a"] },
  ];
  for (const c of cases) assert.deepEqual(watchedClusters(c.uses, c.max), c.want, c.name);
});

Deno.test("what changes between two watched sets", () => {
  const cases: { name: string; watching: string[]; next: string[]; start: string[]; stop: string[] }[] = [
    { name: "nothing", watching: [], next: [], start: [], stop: [] },
    { name: "the same set", watching: ["a", "b"], next: ["b", "a"], start: [], stop: [] },
    { name: "one replaces another", watching: ["a", "b"], next: ["c", "a"], start: ["c"], stop: ["b"] },
    { name: "all new", watching: [], next: ["x", "y"], start: ["x", "y"], stop: [] },
    { name: "all stop, sorted", watching: ["y", "x"], next: [], start: [], stop: ["x", "y"] },
  ];
  for (const c of cases) {
    assert.deepEqual(watchChanges(new Set(c.watching), c.next), { start: c.start, stop: c.stop }, c.name);
  }
});
