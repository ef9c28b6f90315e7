/**
 * NICO as its own process (`deno run main.ts run …`), for tests and the demo
 * that need a real operator process: leader election, fencing, RBAC as the
 * ServiceAccount, webhook start-up. Workload connections may reach loopback
 * addresses only.
 *
 * @module
 */
import { TARGETS_ENV } from "../controllers/cluster/workload/targets.ts";
import { type Guarded, startGuarded } from "./envtest/process.ts";

const MAIN = new URL("../main.ts", import.meta.url).pathname;

/** Starts `nico run` with `flags` under the process guard; its output goes to `logPath`. */
export function startNicoProcess(name: string, flags: string[], logPath: string): Guarded {
  return startGuarded(name, Deno.execPath(), ["run", "--allow-all", MAIN, "run", ...flags], logPath, {
    [TARGETS_ENV]: "loopback",
  });
}
