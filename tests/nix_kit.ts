/**
 * Evaluating Nix in the flake tests (tests/integration/flake_test.ts, flake_versions_test.ts): a real
 * `nix-instantiate` with no nixpkgs, network or Nix store (`--store dummy://`), in a scratch folder of the test
 * file's own, with an empty Nix config; and `cluster.nix` files as NICO renders them. Without `nix-instantiate`
 * the Nix tests are ignored (`noNix`).
 */
import assert from "node:assert/strict";
import { type ClusterNixInput, renderClusterNix } from "../core/render/clusternix.ts";

async function nixVersion(): Promise<string | undefined> {
  try {
    const out = await new Deno.Command("nix-instantiate", { args: ["--version"], stdout: "piped", stderr: "null" })
      .output();
    return out.success ? new TextDecoder().decode(out.stdout).trim() : undefined;
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return undefined;
    throw err;
  }
}

/** The version of `nix-instantiate` on PATH; undefined without one. */
export const NIX_VERSION = await nixVersion();
/** No `nix-instantiate`: the Nix tests are ignored. */
export const noNix = NIX_VERSION === undefined;
if (noNix) {
  console.warn(
    "nix-instantiate not found: the Nix tests are ignored. Install Nix with `bash scripts/install-nix.sh`.",
  );
}

/** A scratch folder for the whole file: an empty Nix config dir and home, so no nix.conf or daemon is involved. */
export const scratch = await Deno.makeTempDir({ prefix: "nico-flake-test-" });
export const nixHome = `${scratch}/home`;
await Deno.mkdir(`${nixHome}/conf`, { recursive: true });
globalThis.addEventListener("unload", () => {
  try {
    Deno.removeSync(scratch, { recursive: true });
  } catch { /* already gone */ }
});

export interface NixResult {
  ok: boolean;
  value: unknown;
  stderr: string;
}

/** Evaluates `expr` strictly to JSON. `args` become `--argstr name value` (so no value is spliced into Nix source). */
export async function nixEval(expr: string, args: Record<string, string> = {}): Promise<NixResult> {
  const argv = [
    "--store",
    "dummy://",
    "--option",
    "build-users-group",
    "",
    "--eval",
    "--strict",
    "--json",
    "--expr",
    expr,
  ];
  for (const [k, v] of Object.entries(args)) argv.push("--argstr", k, v);
  const out = await new Deno.Command("nix-instantiate", {
    args: argv,
    clearEnv: true,
    env: {
      PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
      HOME: nixHome,
      XDG_CACHE_HOME: `${nixHome}/cache`,
      NIX_CONF_DIR: `${nixHome}/conf`,
      NIX_PATH: "",
    },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stdout = new TextDecoder().decode(out.stdout);
  return {
    ok: out.success,
    value: out.success ? JSON.parse(stdout) : undefined,
    stderr: new TextDecoder().decode(out.stderr),
  };
}

export async function nixEvalOk(expr: string, args: Record<string, string> = {}): Promise<unknown> {
  const r = await nixEval(expr, args);
  assert.ok(r.ok, `nix-instantiate failed:\n${r.stderr}`);
  return r.value;
}

/** Writes cluster.nix as NICO renders it; answers its path. */
let clusterFiles = 0;
export async function writeCluster(c: ClusterNixInput): Promise<string> {
  const dir = `${scratch}/cluster-${++clusterFiles}`;
  await Deno.mkdir(dir);
  await Deno.writeTextFile(`${dir}/cluster.nix`, renderClusterNix(c));
  return `${dir}/cluster.nix`;
}
