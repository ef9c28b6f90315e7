/**
 * What the example flake's tests share (tests/integration/flake*_test.ts): a real `nix-instantiate` in a scratch
 * home of its own (no nixpkgs, no network, no Nix store: `--store dummy://`), cluster.nix as NICO renders it, the
 * nodes lib/k3s-node.nix makes of it, the scripts lib/k3s-scripts.nix builds, and the clusters the cases use.
 * Without `nix-instantiate` ({@link noNix}) the Nix tests are ignored.
 */
import assert from "node:assert/strict";
import { type ClusterNixInput, renderClusterNix } from "../core/render/clusternix.ts";

export const FLAKE_DIR = new URL("../examples/k3s-flake/", import.meta.url).pathname;
export const LIB = `${FLAKE_DIR}lib/`;
export const TOKEN = "/var/lib/nico/join-token";
export const AGENT_TOKEN = "/var/lib/nico/agent-token";
/** A server holds both tokens; an agent only the agent token. */
export const SERVER_TOKENS = [`--token-file=${TOKEN}`, `--agent-token-file=${AGENT_TOKEN}`];

export async function nixVersion(): Promise<string | undefined> {
  try {
    const out = await new Deno.Command("nix-instantiate", { args: ["--version"], stdout: "piped", stderr: "null" })
      .output();
    return out.success ? new TextDecoder().decode(out.stdout).trim() : undefined;
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return undefined;
    throw err;
  }
}

export const NIX_VERSION = await nixVersion();
export const noNix = NIX_VERSION === undefined;
if (noNix) {
  console.warn(
    "flake_test: nix-instantiate not found: the Nix tests are ignored. Install Nix with `bash scripts/install-nix.sh`.",
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
export let clusterFiles = 0;
export async function writeCluster(c: ClusterNixInput): Promise<string> {
  const dir = `${scratch}/cluster-${++clusterFiles}`;
  await Deno.mkdir(dir);
  await Deno.writeTextFile(`${dir}/cluster.nix`, renderClusterNix(c));
  return `${dir}/cluster.nix`;
}

export interface K3sNode {
  name: string;
  address: string;
  role: "server" | "agent";
  controlPlane: boolean;
  bootstrap: boolean;
  flags: string[];
  serverAddress: string | null;
  tlsSans: string[];
  apiPort: number;
  endpoint: string;
  caFiles: { source: string; target: string; mode: string }[];
  hostName: string | null;
  domain: string | null;
  tokenFile: string;
}

/** lib/k3s-node.nix for every node listed in the cluster.nix at `clusterFile`. */
export async function allNodes(clusterFile: string, paths = "{ }"): Promise<Record<string, K3sNode>> {
  return await nixEvalOk(
    `{ clusterFile }:
     let
       cluster = import (/. + clusterFile);
       members = import ${LIB}members.nix cluster;
     in builtins.listToAttrs (map (machine: {
       name = machine;
       value = import ${LIB}k3s-node.nix { inherit cluster machine; paths = ${paths}; };
     }) members.names)`,
    { clusterFile },
  ) as Record<string, K3sNode>;
}

// ---- the clusters -------------------------------------------------------

export const single: ClusterNixInput = {
  name: "solo",
  namespace: "default",
  endpoint: { host: "127.0.0.10", port: 6443 },
  bootstrapNode: "solo",
  controlPlane: [{ name: "solo", address: "127.0.0.10" }],
  workers: [],
};

export const ha: ClusterNixInput = {
  name: "prod",
  namespace: "infra",
  endpoint: { host: "api.prod.example.test", port: 6443 },
  bootstrapNode: "cp-1",
  controlPlane: [
    { name: "cp-1", address: "127.0.0.1" },
    { name: "cp-2", address: "127.0.0.2" },
    { name: "cp-3", address: "127.0.0.3" },
  ],
  workers: [
    { name: "w-1", address: "127.0.0.11" },
    { name: "w-2", address: "127.0.0.12" },
  ],
};

/** Values a Nix string literal must escape, in names, addresses and the endpoint. */
export const weird: ClusterNixInput = {
  name: "esc",
  namespace: "default",
  endpoint: { host: "api\"'${x}\\.test", port: 6443 },
  bootstrapNode: "cp.a-1",
  controlPlane: [
    { name: "cp.a-1", address: 'we"ird\\${host}\n' },
    { name: "cp-2", address: "127.0.0.2" },
  ],
  workers: [
    { name: "w-1.example.test", address: "it's $${not} ${x} $ \\ \t end$" },
    { name: 'odd"name${x}', address: "127.0.0.9" },
  ],
};

/** IPv6, no load balancer: the endpoint is the bootstrap node on a non-default port. */
export const ipv6: ClusterNixInput = {
  name: "six",
  namespace: "default",
  endpoint: { host: "::1", port: 7443 },
  bootstrapNode: "cp-a",
  controlPlane: [{ name: "cp-a", address: "::1" }, { name: "cp-b", address: "::ffff:127.0.0.3" }],
  workers: [{ name: "w", address: "::ffff:127.0.0.10" }],
};

export async function scriptsFor(clusterFile: string, machine: string, paths: string, k3s: string) {
  return await nixEvalOk(
    `{ clusterFile, machine, k3s }:
     import ${LIB}k3s-scripts.nix {
       node = import ${LIB}k3s-node.nix { cluster = import (/. + clusterFile); inherit machine; paths = ${paths}; };
       inherit k3s;
     }`,
    { clusterFile, machine, k3s },
  ) as { start: string; prepare: string };
}

export async function bash(script: string): Promise<{ code: number; stderr: string }> {
  const file = await Deno.makeTempFile({ dir: scratch, suffix: ".sh" });
  await Deno.writeTextFile(file, script);
  const out = await new Deno.Command("bash", { args: [file], stdout: "null", stderr: "piped" }).output();
  return { code: out.code, stderr: new TextDecoder().decode(out.stderr) };
}

/** A stand-in for the k3s binary (its path has a space) that records its arguments; `argv()` reads the last ones. */
export async function k3sStub(): Promise<{ stub: string; argv: () => Promise<string[]> }> {
  const dir = await Deno.makeTempDir({ dir: scratch });
  const argvFile = `${dir}/argv`;
  const stub = `${dir}/k3s stub`;
  await Deno.writeTextFile(stub, `#!/bin/sh\nprintf '%s\\0' "$@" > '${argvFile}'\n`);
  await Deno.chmod(stub, 0o755);
  return { stub, argv: async () => (await Deno.readTextFile(argvFile)).split("\0").slice(0, -1) };
}
