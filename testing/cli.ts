/** Runs the `nico` binary (main.ts) as a subprocess, as a user would, and normalises its output for golden files. */

const MAIN = new URL("../main.ts", import.meta.url).pathname;

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** `nico <args>` with stdout piped (so no colour); `env` is added to a clean copy of this process's. */
export async function runNicoCli(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", "--quiet", MAIN, ...args],
    env: { NO_COLOR: "", ...env },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

/**
 * Golden-file form of a table: each age in a column (a number and s/m/h/d
 * after at least three spaces) becomes `<age>`, keeping the line's layout;
 * `replace` maps other run-specific strings (a namespace name) to stable ones.
 */
export function normalise(text: string, replace: Record<string, string> = {}): string {
  let out = text;
  for (const [from, to] of Object.entries(replace)) out = out.replaceAll(from, to);
  return out.replace(/(?<= {3})(\d+[smhd])( *)/g, (_m, token: string, pad: string) => {
    const total = token.length + pad.length;
    return "<age>".padEnd(Math.max(total, 5 + (pad.length ? 1 : 0)));
  });
}
