/**
 * The NICO process `nico dev` runs: `main.ts run` under `deno run --watch`,
 * so it reloads when its code changes; stopped by PID on exit.
 *
 * @module
 */
import { freePort } from "../testing/envtest/process.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const WATCH = ["main.ts", "cli/", "core/", "lib/", "controllers/", "webhooks/", "crds/"].map((p) => `${ROOT}${p}`);

export interface ChildOptions {
  /** Against the local control plane: webhook on loopback, leader Lease and webhook Secret in nico-system. */
  local: boolean;
  textLogs: boolean;
  /** More `nico run` flags, given after `--`. */
  extra: string[];
}

/** The `nico run` flags of a development run. */
export function devRunFlags(kubeconfig: string | undefined, o: ChildOptions): string[] {
  const flags = [
    ...(kubeconfig ? [`--kubeconfig=${kubeconfig}`] : []),
    "--install-crds",
    "--leader-elect=false",
    `--log-format=${o.textLogs ? "text" : "json"}`,
    `--metrics-addr=127.0.0.1:${freePort()}`,
    `--health-addr=127.0.0.1:${freePort()}`,
  ];
  if (o.local) {
    const port = freePort();
    flags.push(
      "--resolve-refs=false",
      `--webhook-addr=127.0.0.1:${port}`,
      `--webhook-url=https://127.0.0.1:${port}`,
      "--lease-namespace=nico-system",
      "--workload-probe-interval=2s",
      // Locally every workload cluster is on loopback, which NICO refuses unless allowed.
      "--workload-allowed-cidrs=127.0.0.0/8,::1",
    );
  } else if (!o.extra.some((f) => f.startsWith("--webhook-"))) {
    flags.push("--webhook-cert-mode=off");
  }
  return [...flags, ...o.extra];
}

/** Starts NICO with reload on change; its output goes to this terminal. */
export function startNicoChild(kubeconfig: string | undefined, o: ChildOptions): Deno.ChildProcess {
  return new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", `--watch=${WATCH.join(",")}`, `${ROOT}main.ts`, "run", ...devRunFlags(kubeconfig, o)],
    // Locally every workload cluster is on loopback: NICO refuses any other address.
    ...(o.local ? { env: { NICO_WORKLOAD_TARGETS: "loopback" } } : {}),
    stdin: "null",
    stdout: "inherit",
    stderr: "inherit",
  }).spawn();
}

async function exitedWithin(child: Deno.ChildProcess, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<false>((r) => (timer = setTimeout(() => r(false), ms)));
  const done = await Promise.race([child.status.then(() => true), timeout]);
  clearTimeout(timer);
  return done;
}

/**
 * Stops the child: SIGTERM lets NICO shut down cleanly; `deno run --watch`
 * then waits for a file change, so a second SIGTERM ends it, and SIGKILL if
 * it still runs.
 */
export async function stopChild(child: Deno.ChildProcess): Promise<void> {
  const signal = (s: Deno.Signal) => {
    try {
      child.kill(s);
    } catch {
      // already gone
    }
  };
  signal("SIGTERM");
  if (await exitedWithin(child, 5000)) return;
  signal("SIGTERM");
  if (await exitedWithin(child, 3000)) return;
  signal("SIGKILL");
  await child.status;
}
