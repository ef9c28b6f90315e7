/**
 * The order `deno task test` hands the test files to `deno test --parallel`,
 * which starts them in the order given: the longest first, so the last
 * files to start are short ones and no long file runs on alone at the end.
 * The longest files are listed with what they took in a whole run; any
 * other file is judged from its text, so a new one finds its place: what
 * starts API servers (a workload cluster's scenario, a control plane of its
 * own, NICO processes) weighs most, then each world and each test; unit
 * tests come last. A stale figure only changes the order, never a result.
 *
 * @module
 */

/**
 * Seconds the longest files took in a whole run of `deno task test` (two CPUs shared with other work, so read them
 * as ranks): refresh them when a file gets much longer or shorter.
 */
const MEASURED_SECONDS: Record<string, number> = {
  "tests/integration/dark_test.ts": 140,
  "tests/integration/rollout_api_test.ts": 120,
  "tests/integration/nio_v1_test.ts": 100,
  "tests/integration/reconciler_test.ts": 90,
  "tests/integration/remediation_limits_test.ts": 90,
  "tests/integration/dev_test.ts": 90,
  "tests/integration/cli_api_test.ts": 85,
  "tests/integration/workload_rollout_test.ts": 75,
  "tests/integration/remediation_control_plane_test.ts": 70,
  "tests/integration/remediation_workers_test.ts": 60,
  "tests/integration/rbac_test.ts": 50,
  "tests/integration/identity_api_test.ts": 45,
  "tests/integration/fencing_test.ts": 45,
  "tests/integration/workload_outage_test.ts": 45,
  "tests/integration/remediation_mark_test.ts": 40,
  "tests/integration/health_not_rollout_test.ts": 40,
  "tests/integration/quiet_status_test.ts": 35,
  "tests/integration/workload_departed_test.ts": 35,
  "tests/integration/sim_nio_v1_nodes_test.ts": 30,
  "tests/integration/workload_api_test.ts": 30,
  "tests/integration/gitops_status_test.ts": 30,
  "tests/integration/kubeconfig_move_test.ts": 30,
  "tests/unit/image_test.ts": 27,
  "tests/integration/workload_drain_test.ts": 27,
};

/** Calls that start servers or processes a file waits on: each weighs as much as ten tests. */
const HEAVY =
  /\bstartScenario\(|\bstartControlPlane\(|\bownControlPlane\(|\bstartReplica\(|\bstartNicoProcess\(|workloads: true/g;
/** Each world (simulated NIO and NICO in a namespace) and each test. */
const LIGHT = /\bworld\(|\bsimWorld\(|\bDeno\.test\(/g;

/**
 * How long a test file is expected to run, in about seconds: what it took if it is listed, else a guess from its
 * text (unit tests: 0).
 *
 * @example
 * ```ts
 * import { weight } from "./order.ts";
 * weight("tests/unit/a_test.ts", 'Deno.test("x", () => {});'); // 0
 * weight("tests/integration/a_test.ts", 'Deno.test("x", async () => { await startScenario(cp, "x", o); });'); // 11
 * weight("./tests/integration/dark_test.ts", ""); // 140
 * ```
 */
export function weight(path: string, text: string): number {
  const measured = MEASURED_SECONDS[path.replace(/^(\.\/)+/, "").replace(/^.*?(?=tests\/)/, "")];
  if (measured !== undefined) return measured;
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
