/** The pinned helm (built by testing/helm/install.sh into a cache outside the repo), for the chart tests. */

import { installed } from "./installed.ts";

/** The helm binary's path; the first call may build it (flock-guarded, a minute or two once). */
export const helmPath: () => Promise<string> = installed(new URL("./helm/install.sh", import.meta.url));

/** Runs `helm <args>`; helm's notes about symbolic links in the chart are left out of stderr. */
export async function helm(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = await new Deno.Command(await helmPath(), {
    args,
    env: { HELM_CACHE_HOME: "/tmp/nico-helm/cache", HELM_CONFIG_HOME: "/tmp/nico-helm/config" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  const stderr = dec.decode(out.stderr).split("\n").filter((l) => !l.includes("found symbolic link")).join("\n");
  return { code: out.code, stdout: dec.decode(out.stdout), stderr };
}
