/**
 * NICO as its own process (`deno run main.ts run …`), for tests and the demo
 * that need a real operator process: leader election, fencing, RBAC as the
 * ServiceAccount, webhook start-up. Workload connections may reach loopback
 * addresses only, and must be allowed to (NICO refuses loopback by default).
 *
 * @module
 */
import { ALLOW_FLAG, TARGETS_ENV } from "../controllers/cluster/workload/targets.ts";
import { freePort, type Guarded, startGuarded } from "./envtest/process.ts";

const MAIN = new URL("../main.ts", import.meta.url).pathname;

/** Starts `nico run` with `flags` under the process guard; its output goes to `logPath`. */
export function startNicoProcess(name: string, flags: string[], logPath: string): Guarded {
  const allow = `${ALLOW_FLAG}=127.0.0.0/8,::1`;
  return startGuarded(name, Deno.execPath(), ["run", "--allow-all", MAIN, "run", allow, ...flags], logPath, {
    [TARGETS_ENV]: "loopback",
  });
}

/**
 * One replica of a leader-elected NICO, as the leader and fencing tests run
 * it: its own identity and kubeconfig, no webhook, no ref resolution, no
 * workload connections (no workload API servers there), loopback ports;
 * `extra` flags are appended. Given a `namespace`, it watches only that one
 * and keeps its Lease there (a test on a shared control plane); otherwise
 * it watches all and its Lease is in kube-system.
 */
export function startReplica(
  kubeconfig: string,
  identity: string,
  logPath: string,
  extra: string[] = [],
  namespace?: string,
): Guarded {
  return startNicoProcess(
    identity,
    [
      `--kubeconfig=${kubeconfig}`,
      `--identity=${identity}`,
      ...(namespace
        ? [`--namespace=${namespace}`, `--lease-namespace=${namespace}`]
        : ["--lease-namespace=kube-system"]),
      "--webhook-cert-mode=off",
      "--resolve-refs=false",
      "--workload-connections=false",
      `--metrics-addr=127.0.0.1:${freePort()}`,
      `--health-addr=127.0.0.1:${freePort()}`,
      "--default-git-repo=https://git.example.test/flake.git",
      ...extra,
    ],
    logPath,
  );
}
