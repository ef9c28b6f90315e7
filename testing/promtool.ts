/** The pinned promtool (built by testing/promtool/install.sh into a cache outside the repo), for the monitoring tests. */

import { installed } from "./installed.ts";

/** The promtool binary's path; the first call may build it (flock-guarded, several minutes once). */
export const promtoolPath: () => Promise<string> = installed(new URL("./promtool/install.sh", import.meta.url));

/** Runs `promtool <args>` in `cwd` (default: this process's), `stdin` on its standard input. */
export async function promtool(
  args: string[],
  o: { cwd?: string; stdin?: string } = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const child = new Deno.Command(await promtoolPath(), {
    args,
    ...(o.cwd ? { cwd: o.cwd } : {}),
    stdin: o.stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  if (o.stdin !== undefined) {
    const w = child.stdin.getWriter();
    await w.write(new TextEncoder().encode(o.stdin));
    await w.close();
  }
  const out = await child.output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}
