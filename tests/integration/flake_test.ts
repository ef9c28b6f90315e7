/**
 * The example k3s flake (examples/k3s-flake/) against NICO's own cluster.nix:
 * render it with `renderClusterNix`, evaluate the flake's pure Nix with a real
 * `nix-instantiate` (no nixpkgs, no network, no Nix store: `--store dummy://`),
 * and check every node's role, k3s flags and server address. The shell scripts
 * the flake builds are run with bash against temporary folders.
 *
 * The Nix tests are ignored only when `nix-instantiate` is absent
 * (`bash scripts/install-nix.sh` installs it; CI does).
 *
 * @module
 */
import assert from "node:assert/strict";
import { type ClusterNixInput, renderClusterNix } from "../../core/render/clusternix.ts";
import { NIX_VERSION, nixEval, nixEvalOk, nixHome, noNix, scratch, writeCluster } from "../nix_kit.ts";
import { desiredConfigurations } from "../../core/render/desired.ts";
import { selectMachines } from "../../core/machines/selection.ts";
import { landsAt } from "../../testing/sim-nio/files.ts";
import { cluster, machine } from "../../testing/objects.ts";

const FLAKE_DIR = new URL("../../examples/k3s-flake/", import.meta.url).pathname;
const LIB = `${FLAKE_DIR}lib/`;
const TOKEN = "/var/lib/nico/join-token";
const AGENT_TOKEN = "/var/lib/nico/agent-token";
/** A server holds both tokens; an agent only the agent token. */
const SERVER_TOKENS = [`--token-file=${TOKEN}`, `--agent-token-file=${AGENT_TOKEN}`];

interface K3sNode {
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
async function allNodes(clusterFile: string, paths = "{ }"): Promise<Record<string, K3sNode>> {
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

const single: ClusterNixInput = {
  name: "solo",
  namespace: "default",
  endpoint: { host: "127.0.0.10", port: 6443 },
  bootstrapNode: "solo",
  controlPlane: [{ name: "solo", address: "127.0.0.10" }],
  workers: [],
};

const ha: ClusterNixInput = {
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
const weird: ClusterNixInput = {
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
const ipv6: ClusterNixInput = {
  name: "six",
  namespace: "default",
  endpoint: { host: "::1", port: 7443 },
  bootstrapNode: "cp-a",
  controlPlane: [{ name: "cp-a", address: "::1" }, { name: "cp-b", address: "::ffff:127.0.0.3" }],
  workers: [{ name: "w", address: "::ffff:127.0.0.10" }],
};

// ---- tests --------------------------------------------------------------

Deno.test({
  name: `cluster.nix rendered by NICO evaluates to exactly its input (${NIX_VERSION ?? "no Nix"})`,
  ignore: noNix,
  fn: async (t) => {
    for (
      const [label, c] of [["one control plane", single], ["three control plane and two workers", ha], [
        "values that need escaping",
        weird,
      ], ["IPv6", ipv6]] as const
    ) {
      await t.step(label, async () => {
        const value = await nixEvalOk("{ clusterFile }: import (/. + clusterFile)", {
          clusterFile: await writeCluster(c),
        });
        assert.deepStrictEqual(value, c);
      });
    }
  },
});

Deno.test({
  name: "k3s-node: one control plane",
  ignore: noNix,
  fn: async () => {
    const nodes = await allNodes(await writeCluster(single));
    assert.deepStrictEqual(Object.keys(nodes), ["solo"]);
    const solo = nodes.solo!;
    assert.equal(solo.role, "server");
    assert.equal(solo.bootstrap, true);
    assert.equal(solo.serverAddress, null);
    assert.deepStrictEqual(solo.flags, [
      "server",
      "--cluster-init",
      ...SERVER_TOKENS,
      "--tls-san=127.0.0.10",
      "--node-ip=127.0.0.10",
      "--node-name=solo",
    ]);
    assert.deepStrictEqual(solo.tlsSans, ["127.0.0.10"]);
    assert.equal(solo.endpoint, "https://127.0.0.10:6443");
    assert.deepStrictEqual(solo.caFiles.map((f) => [f.source, f.target.replace(/.*\/tls\//, ""), f.mode]), [
      ["/var/lib/nico/cluster-ca.crt", "server-ca.crt", "0644"],
      ["/var/lib/nico/cluster-ca.key", "server-ca.key", "0600"],
      ["/var/lib/nico/cluster-ca.crt", "client-ca.crt", "0644"],
      ["/var/lib/nico/cluster-ca.key", "client-ca.key", "0600"],
    ]);
  },
});

Deno.test({
  name: "k3s-node: three control-plane nodes and two workers behind a load balancer",
  ignore: noNix,
  fn: async () => {
    const nodes = await allNodes(await writeCluster(ha));
    const lb = "https://api.prod.example.test:6443";
    const expected: Record<string, Pick<K3sNode, "role" | "bootstrap" | "serverAddress" | "flags">> = {
      "cp-1": {
        role: "server",
        bootstrap: true,
        serverAddress: null,
        flags: [
          "server",
          "--cluster-init",
          ...SERVER_TOKENS,
          "--tls-san=api.prod.example.test",
          "--tls-san=127.0.0.1",
          "--node-ip=127.0.0.1",
          "--node-name=cp-1",
        ],
      },
      ...Object.fromEntries([2, 3].map((i) => [`cp-${i}`, {
        role: "server" as const,
        bootstrap: false,
        serverAddress: lb,
        flags: [
          "server",
          `--server=${lb}`,
          ...SERVER_TOKENS,
          "--tls-san=api.prod.example.test",
          `--tls-san=127.0.0.${i}`,
          `--node-ip=127.0.0.${i}`,
          `--node-name=cp-${i}`,
        ],
      }])),
      ...Object.fromEntries([1, 2].map((i) => [`w-${i}`, {
        role: "agent" as const,
        bootstrap: false,
        serverAddress: lb,
        flags: [
          "agent",
          `--server=${lb}`,
          `--token-file=${AGENT_TOKEN}`,
          `--node-ip=127.0.0.1${i}`,
          `--node-name=w-${i}`,
        ],
      }])),
    };
    assert.deepStrictEqual(Object.keys(nodes).sort(), Object.keys(expected).sort());
    for (const [name, want] of Object.entries(expected)) {
      const n = nodes[name]!;
      assert.deepStrictEqual(
        { role: n.role, bootstrap: n.bootstrap, serverAddress: n.serverAddress, flags: n.flags },
        want,
        name,
      );
      assert.equal(n.caFiles.length, name === "cp-1" ? 4 : 0, `${name}: only the bootstrap node places NICO's CA`);
      assert.equal(n.apiPort, 6443);
    }
    const withInit = Object.values(nodes).filter((n) => n.flags.includes("--cluster-init")).map((n) => n.name);
    assert.deepStrictEqual(withInit, ["cp-1"]);
  },
});

Deno.test({
  name: "k3s-node: names and addresses that need escaping reach the flags unchanged",
  ignore: noNix,
  fn: async () => {
    const nodes = await allNodes(await writeCluster(weird));
    const host = weird.endpoint.host;
    const odd = weird.controlPlane[0]!.address;
    const boot = nodes["cp.a-1"]!;
    assert.equal(boot.address, odd);
    assert.deepStrictEqual(boot.flags, [
      "server",
      "--cluster-init",
      ...SERVER_TOKENS,
      `--tls-san=${host}`,
      `--tls-san=${odd}`,
      "--node-name=cp.a-1",
    ], "an address that is not an IP gets no --node-ip");
    assert.equal(boot.hostName, "cp");
    assert.equal(boot.domain, "a-1");
    const url = `https://${host}:6443`;
    assert.equal(nodes["cp-2"]!.serverAddress, url);
    const w1 = nodes["w-1.example.test"]!;
    assert.equal(w1.address, weird.workers[0]!.address);
    assert.deepStrictEqual(w1.flags, [
      "agent",
      `--server=${url}`,
      `--token-file=${AGENT_TOKEN}`,
      "--node-name=w-1.example.test",
    ]);
    assert.equal(w1.hostName, "w-1");
    assert.equal(w1.domain, "example.test");
    const oddName = nodes['odd"name${x}']!;
    assert.ok(oddName.flags.includes('--node-name=odd"name${x}'));
    assert.equal(oddName.hostName, null, "a name that is no host name sets none");
  },
});

Deno.test({
  name: "k3s-node: IPv6 endpoint on the bootstrap node with its own port",
  ignore: noNix,
  fn: async () => {
    const nodes = await allNodes(await writeCluster(ipv6));
    const url = "https://[::1]:7443";
    assert.deepStrictEqual(nodes["cp-a"]!.flags, [
      "server",
      "--cluster-init",
      ...SERVER_TOKENS,
      "--tls-san=::1",
      "--node-ip=::1",
      "--node-name=cp-a",
      "--https-listen-port=7443",
    ]);
    assert.deepStrictEqual(nodes["cp-b"]!.flags, [
      "server",
      `--server=${url}`,
      ...SERVER_TOKENS,
      "--tls-san=::1",
      "--tls-san=::ffff:127.0.0.3",
      "--node-ip=::ffff:127.0.0.3",
      "--node-name=cp-b",
      "--https-listen-port=7443",
    ]);
    assert.deepStrictEqual(nodes.w!.flags, [
      "agent",
      `--server=${url}`,
      `--token-file=${AGENT_TOKEN}`,
      "--node-ip=::ffff:127.0.0.10",
      "--node-name=w",
    ]);
    assert.equal(nodes["cp-a"]!.apiPort, 7443);
  },
});

Deno.test({
  name: "k3s-node: joining, departed bootstrap and custom paths",
  ignore: noNix,
  fn: async (t) => {
    await t.step("a server whose own address is the endpoint joins through the bootstrap node", async () => {
      const nodes = await allNodes(await writeCluster({ ...ha, endpoint: { host: "127.0.0.2", port: 6443 } }));
      assert.equal(nodes["cp-2"]!.serverAddress, "https://127.0.0.1:6443");
      assert.ok(nodes["cp-2"]!.flags.includes("--server=https://127.0.0.1:6443"));
      assert.equal(nodes["cp-3"]!.serverAddress, "https://127.0.0.2:6443");
      assert.equal(nodes["w-1"]!.serverAddress, "https://127.0.0.2:6443");
    });
    await t.step("a bootstrap node no longer listed: nobody initializes, every server joins", async () => {
      const nodes = await allNodes(await writeCluster({ ...ha, bootstrapNode: "cp-0" }));
      for (const n of Object.values(nodes)) {
        assert.equal(n.bootstrap, false, n.name);
        assert.ok(!n.flags.includes("--cluster-init"), n.name);
        assert.equal(n.serverAddress, "https://api.prod.example.test:6443", n.name);
        assert.deepStrictEqual(n.caFiles, []);
      }
    });
    await t.step("paths move the token, the CA sources and the data dir", async () => {
      const nodes = await allNodes(
        await writeCluster(single),
        `{ tokenFile = "/run/keys/token"; caCert = "/run/keys/ca.crt"; caKey = "/run/keys/ca.key"; dataDir = "/srv/k3s"; }`,
      );
      const solo = nodes.solo!;
      assert.ok(solo.flags.includes("--token-file=/run/keys/token"));
      assert.ok(solo.flags.includes("--data-dir=/srv/k3s"));
      assert.deepStrictEqual(solo.caFiles.map((f) => `${f.source}>${f.target}`), [
        "/run/keys/ca.crt>/srv/k3s/server/tls/server-ca.crt",
        "/run/keys/ca.key>/srv/k3s/server/tls/server-ca.key",
        "/run/keys/ca.crt>/srv/k3s/server/tls/client-ca.crt",
        "/run/keys/ca.key>/srv/k3s/server/tls/client-ca.key",
      ]);
    });
  },
});

Deno.test({
  name: "k3s-node and members.nix throw clear messages",
  ignore: noNix,
  fn: async (t) => {
    const cases: { label: string; cluster: ClusterNixInput | string; machine: string; message: RegExp }[] = [
      {
        label: "a machine that is not in cluster.nix",
        cluster: ha,
        machine: "cp-9.example",
        message:
          /machine "cp-9\.example" is not a node of cluster infra\/prod \(control plane: cp-1, cp-2, cp-3; workers: w-1, w-2\)/,
      },
      {
        label: "a duplicate name",
        cluster: { ...ha, workers: [{ name: "cp-2", address: "127.0.0.99" }] },
        machine: "cp-1",
        message: /node names must be unique, found cp-2 more than once/,
      },
      {
        label: "a node named minimal",
        cluster: { ...ha, workers: [{ name: "minimal", address: "127.0.0.99" }] },
        machine: "cp-1",
        message: /may not be named minimal/,
      },
      {
        label: "no control plane",
        cluster: { ...ha, controlPlane: [] },
        machine: "w-1",
        message: /controlPlane must list at least one node/,
      },
      {
        label: "a port that is not a number",
        cluster: renderClusterNix(ha).replace("port = 6443;", 'port = "6443";'),
        machine: "cp-1",
        message: /endpoint\.port must be an integer from 1 to 65535, found the string "6443"/,
      },
      {
        label: "an empty address",
        cluster: { ...ha, workers: [{ name: "w-1", address: "" }] },
        machine: "cp-1",
        message: /workers\[0\]\.address \(node w-1\) must be a non-empty string/,
      },
    ];
    for (const c of cases) {
      await t.step(c.label, async () => {
        const dir = await Deno.makeTempDir({ dir: scratch });
        await Deno.writeTextFile(
          `${dir}/cluster.nix`,
          typeof c.cluster === "string" ? c.cluster : renderClusterNix(c.cluster),
        );
        const r = await nixEval(
          `{ clusterFile, machine }: (import ${LIB}k3s-node.nix { cluster = import (/. + clusterFile); inherit machine; }).role`,
          { clusterFile: `${dir}/cluster.nix`, machine: c.machine },
        );
        assert.equal(r.ok, false, "evaluation should fail");
        assert.match(r.stderr, c.message);
      });
    }
    await t.step("an unknown key in paths", async () => {
      const r = await nixEval(
        `{ clusterFile }: (import ${LIB}k3s-node.nix { cluster = import (/. + clusterFile); machine = "solo"; paths = { tokenPath = "/x"; }; }).role`,
        { clusterFile: await writeCluster(single) },
      );
      assert.equal(r.ok, false);
      assert.match(r.stderr, /unknown paths tokenPath; known: agentTokenFile, caCert, caKey, dataDir, tokenFile/);
    });
  },
});

Deno.test({
  name: "flake.nix: one nixosConfiguration per node, wired to its machine, plus minimal",
  ignore: noNix,
  fn: async (t) => {
    // A stand-in nixpkgs whose nixosSystem returns its arguments: this checks the
    // flake's wiring, not NixOS itself (which needs nixpkgs and a store).
    const wiring = (dir: string) =>
      nixEval(
        `let
           flake = import ${dir}/flake.nix;
           out = flake.outputs { self = { }; nixpkgs = { lib.nixosSystem = args: args; }; };
           nico = cfg: map (m: m.nico) (builtins.filter (m: builtins.isAttrs m && m ? nico) cfg.modules);
         in builtins.mapAttrs (name: cfg: map (n: { inherit (n) machine cluster; source = n.secrets.source; }) (nico cfg))
           out.nixosConfigurations`,
      );
    const copyFlake = async () => {
      const dir = await Deno.makeTempDir({ dir: scratch });
      const cp = await new Deno.Command("cp", { args: ["-R", `${FLAKE_DIR}.`, dir] }).output();
      assert.ok(cp.success);
      return dir;
    };
    await t.step("with NICO's cluster.nix", async () => {
      const dir = await copyFlake();
      await Deno.writeTextFile(`${dir}/cluster.nix`, renderClusterNix(weird));
      const r = await wiring(dir);
      assert.ok(r.ok, r.stderr);
      const configs = r.value as Record<string, { machine: string; cluster: unknown; source: string }[]>;
      const names = [...weird.controlPlane, ...weird.workers].map((n) => n.name);
      assert.deepStrictEqual(Object.keys(configs).sort(), [...names, "minimal"].sort());
      for (const name of names) {
        assert.equal(configs[name]!.length, 1, name);
        assert.equal(configs[name]![0]!.machine, name);
        assert.deepStrictEqual(configs[name]![0]!.cluster, weird);
        assert.equal(configs[name]![0]!.source, "host", "secrets stay out of the store unless the user opts in");
      }
      assert.deepStrictEqual(configs.minimal, [], "#minimal is no cluster node");
    });
    await t.step("without cluster.nix (a plain clone) only minimal", async () => {
      const r = await wiring(await copyFlake());
      assert.ok(r.ok, r.stderr);
      assert.deepStrictEqual(Object.keys(r.value as object), ["minimal"]);
    });
  },
});

/** The scripts lib/k3s-scripts.nix builds for `machine`, with paths and the k3s binary moved. */
async function scriptsFor(clusterFile: string, machine: string, paths: string, k3s: string) {
  return await nixEvalOk(
    `{ clusterFile, machine, k3s }:
     import ${LIB}k3s-scripts.nix {
       node = import ${LIB}k3s-node.nix { cluster = import (/. + clusterFile); inherit machine; paths = ${paths}; };
       inherit k3s;
     }`,
    { clusterFile, machine, k3s },
  ) as { start: string; prepare: string };
}

async function bash(script: string): Promise<{ code: number; stderr: string }> {
  const file = await Deno.makeTempFile({ dir: scratch, suffix: ".sh" });
  await Deno.writeTextFile(file, script);
  const out = await new Deno.Command("bash", { args: [file], stdout: "null", stderr: "piped" }).output();
  return { code: out.code, stderr: new TextDecoder().decode(out.stderr) };
}

/** A stand-in for the k3s binary (its path has a space) that records its arguments; `argv()` reads the last ones. */
async function k3sStub(): Promise<{ stub: string; argv: () => Promise<string[]> }> {
  const dir = await Deno.makeTempDir({ dir: scratch });
  const argvFile = `${dir}/argv`;
  const stub = `${dir}/k3s stub`;
  await Deno.writeTextFile(stub, `#!/bin/sh\nprintf '%s\\0' "$@" > '${argvFile}'\n`);
  await Deno.chmod(stub, 0o755);
  return { stub, argv: async () => (await Deno.readTextFile(argvFile)).split("\0").slice(0, -1) };
}

Deno.test({
  name: "k3s-scripts: start runs k3s with exactly the node's flags",
  ignore: noNix,
  fn: async () => {
    const { stub, argv } = await k3sStub();
    const clusterFile = await writeCluster(weird);
    const nodes = await allNodes(clusterFile);
    for (const name of Object.keys(nodes)) {
      const { start } = await scriptsFor(clusterFile, name, "{ }", stub);
      const r = await bash(start);
      assert.equal(r.code, 0, r.stderr);
      assert.deepStrictEqual(await argv(), nodes[name]!.flags, name);
    }
  },
});

Deno.test({
  name: "k3s-scripts: prepare needs the token and places NICO's CA on the bootstrap node only, never overwriting",
  ignore: noNix,
  fn: async (t) => {
    const root = await Deno.makeTempDir({ dir: scratch });
    const paths =
      `{ tokenFile = "${root}/nico/join-token"; agentTokenFile = "${root}/nico/agent-token"; caCert = "${root}/nico/cluster-ca.crt"; caKey = "${root}/nico/cluster-ca.key"; dataDir = "${root}/k3s"; }`;
    const clusterFile = await writeCluster(ha);
    const boot = (await scriptsFor(clusterFile, "cp-1", paths, "k3s")).prepare;
    const joiner = (await scriptsFor(clusterFile, "cp-2", paths, "k3s")).prepare;
    const worker = (await scriptsFor(clusterFile, "w-1", paths, "k3s")).prepare;
    const tls = `${root}/k3s/server/tls`;
    const exists = (p: string) => Deno.stat(p).then(() => true, () => false);

    await t.step("no token: fails and says where it looked", async () => {
      const r = await bash(boot);
      assert.notEqual(r.code, 0);
      assert.match(r.stderr, new RegExp(`join token is missing or empty at ${root}/nico/join-token`));
    });
    await Deno.mkdir(`${root}/nico`);
    await Deno.writeTextFile(`${root}/nico/join-token`, "a".repeat(64));
    await t.step("a server without the agent token fails and names it", async () => {
      const r = await bash(joiner);
      assert.notEqual(r.code, 0);
      assert.match(r.stderr, new RegExp(`join token is missing or empty at ${root}/nico/agent-token`));
    });
    await Deno.writeTextFile(`${root}/nico/agent-token`, "b".repeat(64));
    await t.step("a worker needs the agent token only, never the server token", async () => {
      await Deno.rename(`${root}/nico/join-token`, `${root}/nico/join-token.away`);
      const r = await bash(worker);
      await Deno.rename(`${root}/nico/join-token.away`, `${root}/nico/join-token`);
      assert.equal(r.code, 0, r.stderr);
    });
    await Deno.writeTextFile(`${root}/nico/cluster-ca.crt`, "CERT-1\n");

    await t.step("the CA key missing: fails and places nothing", async () => {
      const r = await bash(boot);
      assert.notEqual(r.code, 0);
      assert.match(r.stderr, /cluster-ca\.key is missing or empty/);
      assert.equal(await exists(`${tls}/server-ca.crt`), false);
    });
    await Deno.writeTextFile(`${root}/nico/cluster-ca.key`, "KEY-1\n");

    await t.step("a joining server gets no CA files", async () => {
      const r = await bash(joiner);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(await exists(tls), false);
    });
    await t.step("the bootstrap node: server and client CA, keys 0600", async () => {
      const r = await bash(boot);
      assert.equal(r.code, 0, r.stderr);
      for (const kind of ["server", "client"]) {
        assert.equal(await Deno.readTextFile(`${tls}/${kind}-ca.crt`), "CERT-1\n");
        assert.equal(await Deno.readTextFile(`${tls}/${kind}-ca.key`), "KEY-1\n");
        assert.equal((await Deno.stat(`${tls}/${kind}-ca.key`)).mode! & 0o777, 0o600);
      }
      assert.equal((await Deno.stat(tls)).mode! & 0o777, 0o700);
      assert.deepStrictEqual([...Deno.readDirSync(tls)].map((e) => e.name).sort(), [
        "client-ca.crt",
        "client-ca.key",
        "server-ca.crt",
        "server-ca.key",
      ]);
    });
    await t.step("a CA already in place is kept, with a warning when it differs", async () => {
      await Deno.writeTextFile(`${root}/nico/cluster-ca.crt`, "CERT-2\n");
      const r = await bash(boot);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(await Deno.readTextFile(`${tls}/server-ca.crt`), "CERT-1\n");
      assert.match(r.stderr, /server-ca\.crt differs from NICO's CA file/);
    });
  },
});

Deno.test({
  name: "every .nix file of the example flake parses (variables bound)",
  ignore: noNix,
  fn: async () => {
    const files: string[] = [];
    const walk = (dir: string) => {
      for (const e of Deno.readDirSync(dir)) {
        if (e.isDirectory) walk(`${dir}/${e.name}`);
        else if (e.name.endsWith(".nix")) files.push(`${dir}/${e.name}`);
      }
    };
    walk(FLAKE_DIR.replace(/\/$/, ""));
    const rel = files.map((f) => f.slice(FLAKE_DIR.length)).sort();
    for (const must of ["flake.nix", "lib/k3s-node.nix", "lib/members.nix", "modules/k3s.nix", "modules/minimal.nix"]) {
      assert.ok(rel.includes(must), `${must} is missing from ${rel.join(", ")}`);
    }
    for (const file of files) {
      const out = await new Deno.Command("nix-instantiate", {
        args: ["--store", "dummy://", "--option", "build-users-group", "", "--parse", file],
        clearEnv: true,
        env: {
          PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
          HOME: nixHome,
          NIX_CONF_DIR: `${nixHome}/conf`,
          NIX_PATH: "",
        },
        stdout: "null",
        stderr: "piped",
      }).output();
      assert.ok(out.success, `${file}: ${new TextDecoder().decode(out.stderr)}`);
    }
  },
});

Deno.test({
  name: "the minimal cleanup script is valid bash and removes k3s's and NICO's state",
  ignore: noNix,
  fn: async () => {
    const script = await nixEvalOk(`import ${LIB}k3s-cleanup.nix { }`) as string;
    const file = await Deno.makeTempFile({ dir: scratch, suffix: ".sh" });
    await Deno.writeTextFile(file, script);
    const out = await new Deno.Command("bash", { args: ["-n", file], stderr: "piped" }).output();
    assert.ok(out.success, new TextDecoder().decode(out.stderr));
    const rm = script.split("\n").find((l) => l.startsWith("rm -rf -- "));
    for (const dir of ["/var/lib/rancher/k3s", "/etc/rancher/k3s", "/var/lib/nico"]) {
      assert.ok(rm?.includes(`'${dir}'`), `cleanup removes ${dir}`);
    }
  },
});

// These need no Nix.

Deno.test("cluster.example.nix is what NICO renders for the example cluster", async () => {
  const text = await Deno.readTextFile(`${FLAKE_DIR}cluster.example.nix`);
  // The example is documentation for real users: RFC 5737 addresses, never reached (only Nix-evaluated).
  const addr = (i: number) => `192.0.2.${i}`;
  assert.equal(
    text,
    renderClusterNix({
      name: "demo",
      namespace: "demo",
      endpoint: { host: addr(11), port: 6443 },
      bootstrapNode: "cp-01",
      controlPlane: [1, 2, 3].map((i) => ({ name: `cp-0${i}`, address: addr(10 + i) })),
      workers: [1, 2].map((i) => ({ name: `worker-0${i}`, address: addr(20 + i) })),
    }),
  );
});

Deno.test("the example flake never reads a secret file into the Nix store by itself", async () => {
  const offenders: string[] = [];
  const walk = async (dir: string) => {
    for await (const e of Deno.readDir(dir)) {
      const path = `${dir}/${e.name}`;
      if (e.isDirectory) await walk(path);
      else if (e.name.endsWith(".nix")) {
        const text = await Deno.readTextFile(path);
        if (/readFile/.test(text)) offenders.push(`${path}: builtins.readFile`);
        if (/\.\/(join-token|agent-token|cluster-ca\.(crt|key)|machine-ssh-key)\b/.test(text)) {
          offenders.push(`${path}: a path literal to a secret`);
        }
      }
    }
  };
  await walk(FLAKE_DIR.replace(/\/$/, ""));
  assert.deepStrictEqual(offenders, []);
});

Deno.test({
  name: "the flake finds the files NICO sends where each NIO generation writes them, with and without a subdir",
  ignore: noNix,
  fn: async (t) => {
    const c = cluster({ controlPlane: { machines: ["cp-1"] }, dataPlane: { machines: ["w-1"] } });
    const machines = [machine("cp-1"), machine("w-1")];
    const selection = selectMachines({ cluster: c, machines, configurations: [] });
    for (const nio of ["v1", "older"] as const) {
      for (const subdir of [undefined, "clusters/prod"]) {
        await t.step(`NIO ${nio}, ${subdir ? `configurationSubdir ${subdir}` : "flake at the root"}`, async () => {
          const spec = { ...c.spec, ...(subdir ? { configurationSubdir: subdir } : {}) };
          const [cfg] = desiredConfigurations({
            cluster: { ...c, spec },
            selection,
            machines,
            bootstrap: "cp-1",
            endpoint: { host: "127.0.0.1", port: 6443 },
            gitRepo: "https://git.example.test/flake.git",
            nio,
          });
          // A checkout of the repository with the flake in the subdir, and NICO's files where NIO writes them.
          const root = await Deno.makeTempDir({ dir: scratch });
          const flakeDir = subdir ? `${root}/${subdir}` : root;
          await Deno.mkdir(flakeDir, { recursive: true });
          assert.ok((await new Deno.Command("cp", { args: ["-R", `${FLAKE_DIR}.`, flakeDir] }).output()).success);
          for (const f of cfg!.spec.additionalFiles) {
            const at = `${root}/${landsAt(f.path, subdir, nio)}`;
            await Deno.mkdir(at.slice(0, at.lastIndexOf("/")), { recursive: true });
            await Deno.writeTextFile(at, f.valueType === "Inline" ? f.inline : "secret");
          }
          const r = await nixEval(
            `let out = (import ${flakeDir}/flake.nix).outputs { self = { }; nixpkgs = { lib.nixosSystem = a: a; }; };
             in builtins.attrNames out.nixosConfigurations`,
          );
          assert.ok(r.ok, r.stderr);
          assert.deepStrictEqual(r.value, ["cp-1", "minimal", "w-1"], "the flake did not find cluster.nix");
        });
      }
    }
  },
});

Deno.test({
  name:
    "k3s-scripts: report names the cluster.nix configuration on the node's own Node, with the kubelet's credentials",
  ignore: noNix,
  fn: async () => {
    const { stub, argv } = await k3sStub();
    const clusterFile = await writeCluster({ ...weird, configuration: "0123abcd0123abcd" });
    const machine = weird.workers[0]!.name;
    const scripts = await nixEvalOk(
      `{ clusterFile, machine, k3s }:
       let cluster = import (/. + clusterFile); in
       import ${LIB}k3s-scripts.nix {
         node = import ${LIB}k3s-node.nix { inherit cluster machine; paths = { }; };
         inherit k3s;
         configuration = cluster.configuration or null;
       }`,
      { clusterFile, machine, k3s: stub },
    ) as { report: string | null };
    assert.ok(scripts.report, "no report script although cluster.nix names a configuration");
    const r = await bash(scripts.report);
    assert.equal(r.code, 0, r.stderr);
    assert.deepStrictEqual(await argv(), [
      "kubectl",
      "--kubeconfig",
      "/var/lib/rancher/k3s/agent/kubelet.kubeconfig",
      "annotate",
      "--overwrite",
      "node",
      machine,
      "nico.homystack.com/configuration=0123abcd0123abcd",
    ]);
    const without = await nixEvalOk(
      `import ${LIB}k3s-scripts.nix { node = { name = "n"; flags = [ ]; tokenFiles = [ ]; caFiles = [ ]; }; }`,
    ) as { report: string | null };
    assert.equal(without.report, null, "a cluster.nix without configuration: nothing to report");
  },
});
