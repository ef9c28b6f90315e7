/**
 * NICO: NixOS Infrastructure Cluster Orchestration.
 *
 * `nico run` (the default) runs the controllers and the admission webhook;
 * `nico get`, `describe`, `plan` and `kubeconfig` show clusters to people
 * (also as `kubectl nico …` when installed as `kubectl-nico`);
 * `nico dev` runs NICO from a checkout; `nico crds` prints the CRD YAML;
 * `nico version` prints the version.
 *
 * @module
 */
import { kubernetesClusterCrdYaml } from "./crds/generate.ts";
import { invokedAsKubectlPlugin, runUserCommand, USER_COMMANDS } from "./cli/commands.ts";
import denoJson from "./deno.json" with { type: "json" };

export const VERSION = denoJson.version;

function help(plugin: boolean): string {
  const me = plugin ? "kubectl nico" : "nico";
  const lines = [`Usage: ${me} <command> [flags]`, "", "Commands:"];
  if (!plugin) lines.push(`  ${"run".padEnd(12)} run the operator (the default); nico run --help`);
  for (const [name, about] of Object.entries(USER_COMMANDS)) lines.push(`  ${name.padEnd(12)} ${about}`);
  if (!plugin) lines.push(`  ${"dev".padEnd(12)} run NICO from a checkout, with a local control plane when needed`);
  lines.push(`  ${"crds".padEnd(12)} print the CRD YAML`, `  ${"version".padEnd(12)} print the version`);
  lines.push("", `Each command takes --help.`);
  return lines.join("\n");
}

/** argv[0] as the process was started (Linux), so a symlink named kubectl-nico counts. */
function argv0(): string | undefined {
  try {
    return Deno.readTextFileSync("/proc/self/cmdline").split("\0")[0];
  } catch {
    return undefined;
  }
}

async function main(args: string[]): Promise<number> {
  const plugin = invokedAsKubectlPlugin(Deno.execPath(), argv0());
  const [command = plugin ? "help" : "run"] = args;
  if (command in USER_COMMANDS) return await runUserCommand(command, args.slice(1));
  switch (command) {
    case "help":
    case "--help":
    case "-h":
      console.log(help(plugin));
      return 0;
    case "crds":
      console.log(kubernetesClusterCrdYaml());
      return 0;
    case "version":
      console.log(`nico ${VERSION}`);
      return 0;
    case "run":
      return await (await import("./cli/run.ts")).run(args.slice(1));
    case "dev":
      return await runDev(args.slice(1));
    default:
      console.error(`${plugin ? "kubectl nico" : "nico"}: unknown command '${command}'; see --help`);
      return 2;
  }
}

/**
 * `nico dev` needs the dev kit of a checkout (`testing/`: local control
 * plane, simulated NIO), which the binary and the image leave out: the
 * module is named at run time, so `deno compile`, `deno bundle` and
 * `deno check main.ts` never follow it (the `check` task checks `cli/`).
 */
async function runDev(args: string[]): Promise<number> {
  const devModule = new URL("./cli/dev.ts", import.meta.url).href;
  let dev: (args: string[]) => Promise<number>;
  try {
    ({ dev } = await import(devModule));
  } catch (err) {
    if (!/not found|cannot find/i.test(String(err))) throw err;
    console.error(`nico dev runs from a checkout of NICO (deno task dev), not from this build: ${err}`);
    return 2;
  }
  return await dev(args);
}

if (import.meta.main) {
  Deno.exit(await main(Deno.args));
}
