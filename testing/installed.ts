/**
 * The tools the tests build from pinned Go modules into a cache outside the repository (envtest's binaries, helm,
 * gitops-check): each `install.sh` prints where the tool is, building it first when the cache lacks it.
 *
 * @module
 */

/**
 * A function answering what `script` prints last (a path), running it once per process however often it is asked.
 * The script's progress goes to stderr, shown as it comes.
 *
 * @example
 * ```ts ignore
 * const helmPath = installed(new URL("./helm/install.sh", import.meta.url));
 * const helm = await helmPath(); // the first call may build helm (a minute or two, once)
 * ```
 */
export function installed(script: URL): () => Promise<string> {
  let path: Promise<string> | undefined;
  return () =>
    path ??= (async () => {
      const out = await new Deno.Command("bash", { args: [script.pathname], stdout: "piped", stderr: "inherit" })
        .output();
      const name = script.pathname.split("/").slice(-2).join("/");
      if (!out.success) throw new Error(`testing/${name} failed; see its output above`);
      return new TextDecoder().decode(out.stdout).trim().split("\n").pop()!;
    })();
}
