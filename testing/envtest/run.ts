/**
 * The test launcher behind `deno task test`: starts one control plane, runs
 * `deno test --allow-all` with the given arguments (default: `--parallel` and
 * every test file, the longest first (./order.ts), two files per CPU at once) and the control plane's folder in
 * {@link SHARED_CONTROL_PLANE_ENV}, then stops the control plane however the
 * run ends (a failure, Ctrl-C, SIGTERM; if this
 * process is killed outright, the process guard stops etcd and
 * kube-apiserver, and `deno test` is stopped with it). Exits with the exit
 * code of `deno test`.
 *
 * ```sh
 * deno run --allow-all testing/envtest/run.ts                       # every test
 * deno run --allow-all testing/envtest/run.ts tests/integration/    # some of them
 * ```
 *
 * @module
 */
import { relative } from "node:path";
import { startControlPlane } from "./controlplane.ts";
import { testFilesInOrder } from "./order.ts";
import { shareControlPlane, SHARED_CONTROL_PLANE_ENV } from "./shared.ts";

const SIGNALS: Deno.Signal[] = ["SIGINT", "SIGTERM"];

/**
 * Every test, files side by side (twice as many at once as there are CPUs,
 * or DENO_JOBS), the longest first: the integration tests mostly wait on API
 * servers and on simulated NIO (a run keeps two CPUs about a third busy with
 * one file per CPU), and each works in namespaces of its own.
 */
const defaultArgs = async () => [
  "--parallel",
  ...await testFilesInOrder(relative(Deno.cwd(), new URL("../../tests", import.meta.url).pathname) || "."),
];

/** How many test files run at once, unless DENO_JOBS says. */
const jobs = () => Deno.env.get("DENO_JOBS") ?? String(2 * navigator.hardwareConcurrency);

/** `deno test` with these arguments, sharing the control plane in `dir`; answers its exit code. */
async function runTests(args: string[], dir: string): Promise<number> {
  const test = [Deno.execPath(), "test", "--allow-all", ...(args.length ? args : await defaultArgs())];
  // Where setpriv is there, the kernel stops `deno test` if this launcher dies first.
  const setpriv = await new Deno.Command("sh", { args: ["-c", "command -v setpriv"], stdout: "null" }).output();
  const [cmd, ...rest] = setpriv.success ? ["setpriv", "--pdeathsig", "TERM", "--", ...test] : test;
  const child = new Deno.Command(cmd!, {
    args: rest,
    env: { [SHARED_CONTROL_PLANE_ENV]: dir, DENO_JOBS: jobs() },
    stdin: "inherit",
    stdout: "inherit",
    stderr: "inherit",
  }).spawn();
  // A signal is passed on to `deno test` (Ctrl-C reaches it anyway): this process waits for it, then cleans up.
  const forward = SIGNALS.map((signal) => {
    const handler = () => {
      try {
        child.kill(signal);
      } catch { /* already exited */ }
    };
    Deno.addSignalListener(signal, handler);
    return () => Deno.removeSignalListener(signal, handler);
  });
  const status = await child.status;
  for (const remove of forward) remove();
  return status.code; // 128 + the signal's number when a signal ended it
}

if (import.meta.main) {
  const started = Date.now();
  const cp = await startControlPlane();
  let code = 1;
  try {
    const dir = await shareControlPlane(cp);
    console.error(`one control plane for the run: ${cp.server} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
    code = await runTests(Deno.args, dir);
  } finally {
    await cp.stop();
  }
  Deno.exit(code);
}
