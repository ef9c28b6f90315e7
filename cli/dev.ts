/**
 * `nico dev` (`deno task dev`): NICO from a checkout, reloaded when its code
 * changes, until Ctrl-C.
 *
 * - Local (with `--local`, or when no reachable cluster is configured): a
 *   local control plane (kube-apiserver + etcd on loopback), the simulated
 *   NIO and sample Machines; it writes a kubeconfig and says how to use it.
 * - A reachable cluster (the current context, `--kubeconfig`, `--context`):
 *   NICO's CRD is applied; missing NIO CRDs are explained (or, with
 *   `--install-nio`, NIO's development CRDs and the simulated NIO are
 *   installed); the webhook is off, as that cluster cannot call a laptop.
 *
 * Everything it started is stopped on exit.
 *
 * @module
 */
import type { KubeClient } from "../lib/kube/client.ts";
import { isNotFound } from "../lib/kube/errors.ts";
import { NAMESPACES } from "../lib/kube/resources.ts";
import { errorMessage } from "../lib/runtime/log.ts";
import { commandHelp, type FlagSpec, kubeConfigFor, parseArgs, targetFor, UsageError } from "./flags.ts";
import { startLocal } from "./devlocal.ts";
import { startNicoChild, stopChild } from "./devchild.ts";

const FLAGS: FlagSpec[] = [
  { name: "local", boolean: true, help: "always start a local control plane, even when a cluster is reachable" },
  {
    name: "install-nio",
    boolean: true,
    help: "a cluster without NIO: install NIO's development CRDs and run the simulated NIO (touches no host)",
  },
  { name: "dir", help: "where the local kubeconfig goes (default .nico-dev); removed on exit" },
];

export const DEV_HELP = commandHelp(
  "nico dev [flags] [-- nico run flags]",
  "Runs NICO from this checkout with reload on change, against the configured cluster, or against a local\n" +
    "control plane with the simulated NIO when none is reachable (or with --local). Ctrl-C stops everything.",
  FLAGS,
);

const NIO_API = "/apis/nio.homystack.com/v1alpha1";
const NIO_CRDS = new URL("../testing/nio-crds.yaml", import.meta.url).pathname;

/** Whether `client` answers within a few seconds; the error otherwise. */
async function reachable(client: KubeClient): Promise<string | undefined> {
  try {
    await client.getText("/version", AbortSignal.timeout(3000));
    return undefined;
  } catch (err) {
    return errorMessage(err);
  }
}

/** Whether the cluster serves NIO's API group. */
async function hasNio(client: KubeClient): Promise<boolean> {
  try {
    await client.getText(NIO_API, AbortSignal.timeout(10_000));
    return true;
  } catch (err) {
    if (isNotFound(err)) return false;
    throw err;
  }
}

/** The message for a cluster without NIO: what is missing and the three ways on. */
export function missingNioMessage(where: string): string {
  return [
    `nico dev: NIO's CRDs are missing in ${where}: the API group nio.homystack.com (Machine, NixosConfiguration)`,
    "is not served there. NICO drives NIO: it reads NIO Machines and writes NixosConfigurations for NIO to apply.",
    "Either:",
    "  - install NIO in that cluster (its CRDs and controller; see NIO's own install guide), then run deno task dev again;",
    "  - or run `deno task dev --install-nio`: NIO's development CRDs and the simulated NIO, which never touches a host;",
    "  - or run `deno task dev --local`: a local control plane with everything, no cluster needed.",
  ].join("\n");
}

function waitForSignal(): Promise<void> {
  return new Promise((resolve) => {
    const on = () => {
      Deno.removeSignalListener("SIGINT", on);
      Deno.removeSignalListener("SIGTERM", on);
      resolve();
    };
    Deno.addSignalListener("SIGINT", on);
    Deno.addSignalListener("SIGTERM", on);
  });
}

/** Entry point of `nico dev`; answers the exit code. */
export async function dev(args: string[]): Promise<number> {
  const split = args.indexOf("--");
  const passThrough = split >= 0 ? args.slice(split + 1) : [];
  let parsed;
  try {
    parsed = parseArgs("dev", split >= 0 ? args.slice(0, split) : args, FLAGS);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    console.error(`nico dev: ${err.message}`);
    return 2;
  }
  const { flags } = parsed;
  if (flags.help) {
    console.log(DEV_HELP);
    return 0;
  }
  const dir = typeof flags.dir === "string" ? flags.dir : ".nico-dev";
  const textLogs = Deno.stderr.isTerminal();
  const cleanups: (() => Promise<void>)[] = [];
  const signal = waitForSignal();
  try {
    let why = "--local";
    if (!flags.local) {
      let target;
      try {
        kubeConfigFor(flags);
        target = targetFor(flags);
      } catch (err) {
        why = `no cluster configured (${errorMessage(err)})`;
      }
      if (target) {
        cleanups.push(() => target.client.close());
        const down = await reachable(target.client);
        if (down) why = `the configured cluster ${target.client.server} does not answer (${down})`;
        else return await remote(target.client, flags, passThrough, textLogs, cleanups, signal);
      }
    }
    console.log(`nico dev: ${why}: starting a local control plane (kube-apiserver and etcd on loopback).`);
    console.log("  (The first run builds them from Go, about 7 minutes on two cores; later runs start in seconds.)");
    const local = await startLocal(dir);
    cleanups.push(local.stop);
    const nico = startNicoChild(local.kubeconfig, { local: true, textLogs, extra: passThrough });
    cleanups.push(() => stopChild(nico));
    console.log(local.instructions);
    await Promise.race([signal, nico.status]);
    return 0;
  } catch (err) {
    console.error(`nico dev: ${errorMessage(err)}`);
    return 1;
  } finally {
    console.log("nico dev: stopping");
    for (const c of cleanups.reverse()) await c().catch((err) => console.error(`nico dev: ${errorMessage(err)}`));
  }
}

async function remote(
  client: KubeClient,
  flags: Record<string, string | boolean>,
  passThrough: string[],
  textLogs: boolean,
  cleanups: (() => Promise<void>)[],
  signal: Promise<void>,
): Promise<number> {
  const where = `the cluster at ${client.server}`;
  if (!(await hasNio(client))) {
    if (!flags["install-nio"]) {
      console.error(missingNioMessage(where));
      return 1;
    }
    const { installCrds } = await import("../testing/envtest/controlplane.ts");
    const { startSimNio } = await import("../testing/sim-nio.ts");
    await installCrds(client, [NIO_CRDS]);
    const nio = startSimNio(client.with({ fieldManager: "sim-nio", userAgent: "sim-nio" }));
    cleanups.push(() => nio.stop());
    console.log(`nico dev: installed NIO's development CRDs in ${where}; the simulated NIO runs here.`);
    // Its hosts run no Kubernetes: NICO would wait for Nodes that never register.
    if (!passThrough.some((f) => f.startsWith("--workload-connections"))) {
      passThrough.push("--workload-connections=false");
    }
  }
  const kubeconfig = typeof flags.kubeconfig === "string" ? flags.kubeconfig : undefined;
  // `nico run` takes --context as well.
  const contextFlag = typeof flags.context === "string" ? [`--context=${flags.context}`] : [];
  if (passThrough.some((f) => f.startsWith("--webhook-url"))) {
    // The self-signed webhook keeps its CA and certificate in a Secret there: make sure the namespace exists.
    const flag = passThrough.find((f) => f.startsWith("--lease-namespace="));
    const ns = flag ? flag.slice("--lease-namespace=".length) : "nico-system";
    await client.apply(NAMESPACES, { apiVersion: "v1", kind: "Namespace", metadata: { name: ns } });
  }
  console.log(
    `nico dev: running NICO against ${where}. The admission webhook is ` +
      (passThrough.some((f) => f.startsWith("--webhook-url"))
        ? "registered at the --webhook-url you gave."
        : "off: that cluster cannot call this machine (add -- --webhook-url=https://<address it can reach>:9443)."),
  );
  const nico = startNicoChild(kubeconfig, { local: false, textLogs, extra: [...contextFlag, ...passThrough] });
  cleanups.push(() => stopChild(nico));
  await Promise.race([signal, nico.status]);
  return 0;
}
