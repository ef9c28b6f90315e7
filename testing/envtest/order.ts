/**
 * The order `deno task test` hands the test files to `deno test --parallel`,
 * which starts them in the order given: the longest first, so the last
 * files to start are short ones and no long file runs on alone at the end.
 * How long a file runs is judged from its text, so a new file finds its
 * place without a list to keep: what starts API servers (a workload
 * cluster's scenario, a control plane of its own, NICO processes) weighs
 * most, then each world and each test; unit tests come last.
 *
 * @module
 */

/** Calls that start servers or processes a file waits on: each weighs as much as ten tests. */
const HEAVY =
  /\bstartScenario\(|\bstartControlPlane\(|\bownControlPlane\(|\bstartReplica\(|\bstartNicoProcess\(|workloads: true/g;
/** Each world (simulated NIO and NICO in a namespace) and each test. */
const LIGHT = /\bworld\(|\bsimWorld\(|\bDeno\.test\(/g;

/**
 * How long a test file is expected to run, in no particular unit: comparable between files only.
 *
 * @example
 * ```ts
 * import { weight } from "./order.ts";
 * weight("tests/unit/a_test.ts", 'Deno.test("x", () => {});'); // 0
 * weight("tests/integration/a_test.ts", 'Deno.test("x", async () => { await startScenario(cp, "x", o); });'); // 11
 * ```
 */
export function weight(path: string, text: string): number {
  if (!path.includes("integration/")) return 0;
  return 10 * (text.match(HEAVY)?.length ?? 0) + (text.match(LIGHT)?.length ?? 0);
}

/** Every `*_test.ts` under `dir`, heaviest first (ties by path, so the order is the same every run). */
export async function testFilesInOrder(dir: string): Promise<string[]> {
  const files: { path: string; weight: number }[] = [];
  const walk = async (d: string) => {
    for await (const e of Deno.readDir(d)) {
      const path = `${d}/${e.name}`;
      if (e.isDirectory) await walk(path);
      else if (e.name.endsWith("_test.ts")) files.push({ path, weight: weight(path, await Deno.readTextFile(path)) });
    }
  };
  await walk(dir.replace(/\/$/, ""));
  return files.sort((a, b) => b.weight - a.weight || a.path.localeCompare(b.path)).map((f) => f.path);
}
