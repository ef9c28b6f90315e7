/**
 * The example k3s flake's lib/k3s-node.nix against NICO's own cluster.nix,
 * evaluated with a real `nix-instantiate` (tests/nix_kit.ts): every node's
 * role, k3s flags, server address and files, for one control plane, three
 * behind a load balancer, names that need escaping, IPv6, joining and
 * departed nodes, and the messages of what it refuses.
 *
 * The Nix tests are ignored only when `nix-instantiate` is absent
 * (`bash scripts/install-nix.sh` installs it; CI does).
 *
 * @module
 */
import assert from "node:assert/strict";
import { type ClusterNixInput, renderClusterNix } from "../../core/render/clusternix.ts";
import {
  AGENT_TOKEN,
  allNodes,
  ha,
  ipv6,
  type K3sNode,
  LIB,
  nixEval,
  noNix,
  scratch,
  SERVER_TOKENS,
  single,
  weird,
  writeCluster,
} from "../nix_kit.ts";

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
      assert.match(
        r.stderr,
        /unknown paths tokenPath; known: agentTokenFile, caCert, caKey, dataDir, etcdCaCert, etcdCaKey, tokenFile/,
      );
    });
  },
});
