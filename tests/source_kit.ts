/** The repository's own source files, for the tests that read them (layers, the Event registry). */

/** The repository's root. */
export const ROOT = new URL("../", import.meta.url);

/** The TypeScript files under `dir` (relative to the root), recursively. */
export function tsFiles(dir: string): string[] {
  const out: string[] = [];
  for (const e of Deno.readDirSync(new URL(`${dir}/`, ROOT))) {
    const rel = `${dir}/${e.name}`;
    if (e.isDirectory) out.push(...tsFiles(rel));
    else if (e.name.endsWith(".ts")) out.push(rel);
  }
  return out;
}
