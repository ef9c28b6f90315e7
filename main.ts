/**
 * NICO: NixOS Infrastructure Cluster Orchestration.
 *
 * `nico run` (the default) runs the controllers and the admission webhook;
 * `nico crds` prints the CRD YAML; `nico version` prints the version.
 *
 * @module
 */
import { kubernetesClusterCrdYaml } from "./crds/generate.ts";
import denoJson from "./deno.json" with { type: "json" };

export const VERSION = denoJson.version;

async function main(args: string[]): Promise<number> {
  const [command = "run"] = args;
  switch (command) {
    case "crds":
      console.log(kubernetesClusterCrdYaml());
      return 0;
    case "version":
      console.log(`nico ${VERSION}`);
      return 0;
    case "run":
      return await (await import("./cli/run.ts")).run(args.slice(1));
    default:
      console.error(`nico: unknown command '${command}': expected run, crds or version`);
      return 2;
  }
}

if (import.meta.main) {
  Deno.exit(await main(Deno.args));
}
