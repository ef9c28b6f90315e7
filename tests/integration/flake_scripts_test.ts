/**
 * The shell scripts the example k3s flake builds (lib/k3s-scripts.nix and the
 * minimal cleanup), evaluated with a real `nix-instantiate` (tests/nix_kit.ts)
 * and run with bash against temporary folders and a stand-in k3s.
 *
 * The Nix tests are ignored only when `nix-instantiate` is absent
 * (`bash scripts/install-nix.sh` installs it; CI does).
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  allNodes,
  bash,
  ha,
  k3sStub,
  LIB,
  nixEvalOk,
  noNix,
  scratch,
  scriptsFor,
  weird,
  writeCluster,
} from "../nix_kit.ts";

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
