/**
 * The example k3s flake's part in a restore (lib/k3s-restore.nix), from cluster.nix as NICO renders it during a
 * restore, evaluated with a real `nix-instantiate` and run with bash and the real curl against a loopback HTTP
 * server standing in for the store's presigned URL, and a stand-in k3s.
 *
 * Ignored only when `nix-instantiate` is absent (`bash scripts/install-nix.sh` installs it; CI does).
 *
 * @module
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import type { ClusterNixInput, ClusterNixRestore } from "../../core/render/clusternix.ts";
import { ha, k3sStub, LIB, nixEvalOk, noNix, scratch, writeCluster } from "../nix_kit.ts";

/** A snapshot as etcd makes it and the store holds it: the database, then the database's 32-byte SHA-256. */
const DATABASE = new TextEncoder().encode("a database's bytes\n".repeat(64));
const SHA = createHash("sha256").update(DATABASE).digest("hex");
const SNAPSHOT = new Uint8Array([...DATABASE, ...createHash("sha256").update(DATABASE).digest()]);

const withRestore = (c: ClusterNixInput, r: Omit<ClusterNixRestore, "id" | "backup" | "sha256">, sha = SHA) => ({
  ...c,
  restore: { id: "r1", backup: "prod/2026-06-01.db", sha256: sha, ...r },
});

interface Part {
  part: "restore" | "rejoin" | null;
  id: string | null;
  script: string | null;
}

async function partOf(c: ClusterNixInput, machine: string, root: string, k3s = "k3s"): Promise<Part> {
  const clusterFile = await writeCluster(c);
  return await nixEvalOk(
    `{ clusterFile, machine, root, k3s }:
     let cluster = import (/. + clusterFile); in
     import ${LIB}k3s-restore.nix {
       inherit cluster k3s;
       node = import ${LIB}k3s-node.nix { inherit cluster machine; paths = { dataDir = root + "/k3s"; }; };
       urlFile = root + "/nico/etcd-restore-url";
     }`,
    { clusterFile, machine, root, k3s },
  ) as Part;
}

async function run(script: string): Promise<{ code: number; stderr: string }> {
  const file = await Deno.makeTempFile({ dir: scratch, suffix: ".sh" });
  await Deno.writeTextFile(file, script);
  const out = await new Deno.Command("bash", { args: [file], stdout: "null", stderr: "piped" }).output();
  return { code: out.code, stderr: new TextDecoder().decode(out.stderr) };
}

const exists = (p: string) => Deno.stat(p).then(() => true, () => false);

/** A stand-in for the store: the object at /ok, and 403 at /expired (what a presigned URL answers once expired). */
function store() {
  const server = Deno.serve({ hostname: "127.0.195.1", port: 0, onListen: () => {} }, (req) => {
    const path = new URL(req.url).pathname;
    if (path === "/ok") return new Response(SNAPSHOT);
    return new Response("<Error><Code>AccessDenied</Code><Message>Request has expired</Message></Error>", {
      status: 403,
    });
  });
  return { url: (path: string) => `http://127.0.195.1:${server.addr.port}${path}`, server };
}

Deno.test({
  name: "k3s-restore: only control-plane nodes whose cluster.nix carries a part have a script",
  ignore: noNix,
  fn: async () => {
    const root = await Deno.makeTempDir({ dir: scratch });
    assert.deepEqual(await partOf(ha, "cp-1", root), { part: null, id: null, script: null });
    const during = withRestore(ha, { role: "restore", members: [{ name: "cp-1", peerURL: "https://127.0.0.1:2380" }] });
    assert.equal((await partOf(during, "cp-1", root)).part, "restore");
    assert.equal((await partOf(during, "w-1", root)).script, null, "a worker takes no part");
    const rejoin = withRestore(ha, { role: "rejoin" });
    assert.equal((await partOf(rejoin, "cp-2", root)).part, "rejoin");
  },
});

Deno.test({
  name: "k3s-restore: the bootstrap node downloads, checks the SHA-256, and only then resets k3s from the file",
  ignore: noNix,
  fn: async (t) => {
    const s = store();
    try {
      const root = await Deno.makeTempDir({ dir: scratch });
      await Deno.mkdir(`${root}/nico`);
      await Deno.mkdir(`${root}/k3s/server/db`, { recursive: true });
      await Deno.writeTextFile(`${root}/k3s/server/db/old`, "old data");
      const { stub, argv } = await k3sStub();
      const during = withRestore(ha, {
        role: "restore",
        members: [{ name: "cp-1", peerURL: "https://127.0.0.1:2380" }],
      });
      const { script } = await partOf(during, "cp-1", root, stub);
      const marker = `${root}/k3s/server/nico-restore-r1.done`;

      await t.step("no URL file: fails, names the file, touches nothing", async () => {
        const r = await run(script!);
        assert.notEqual(r.code, 0);
        assert.match(r.stderr, /URL is missing at .*etcd-restore-url/);
        assert.ok(!(await exists(marker)));
      });
      await t.step("an expired URL (403): fails before anything is touched", async () => {
        await Deno.writeTextFile(`${root}/nico/etcd-restore-url`, s.url("/expired"));
        const r = await run(script!);
        assert.notEqual(r.code, 0);
        assert.match(r.stderr, /could not download backup prod\/2026-06-01\.db/);
        assert.match(r.stderr, /403/);
        assert.equal(await Deno.readTextFile(`${root}/k3s/server/db/old`), "old data");
        assert.ok(!(await exists(marker)));
      });
      await t.step("a hash mismatch: fails, says both hashes, k3s never runs", async () => {
        const wrong = await partOf(withRestore(during, { role: "restore" }, "00".repeat(32)), "cp-1", root, stub);
        await Deno.writeTextFile(`${root}/nico/etcd-restore-url`, s.url("/ok"));
        const r = await run(wrong.script!);
        assert.notEqual(r.code, 0);
        assert.match(r.stderr, new RegExp(`sha256 mismatch .* expected ${"00".repeat(32)}, got ${SHA}`));
        assert.ok(!(await exists(marker)));
        await assert.rejects(argv(), "the stand-in k3s was never called");
      });
      await t.step("the right object: k3s resets from the downloaded file with the node's own flags", async () => {
        const r = await run(script!);
        assert.equal(r.code, 0, r.stderr);
        const args = await argv();
        assert.deepEqual(args.slice(0, 2), ["server", "--cluster-reset"]);
        assert.match(args[2]!, /^--cluster-reset-restore-path=.*\/k3s\/server\/nico-restore-r1\/snapshot\.db$/);
        assert.ok(args.includes("--node-name=cp-1") && !args.includes("--cluster-init"), args.join(" "));
        assert.ok(args.some((a) => a.startsWith("--token-file=")), "the server token decrypts the bootstrap data");
        assert.ok(await exists(marker));
        assert.ok(!(await exists(`${root}/k3s/server/nico-restore-r1`)), "the download is removed");
      });
      await t.step("run again (a restart): nothing is restored twice", async () => {
        await Deno.remove(`${root}/nico/etcd-restore-url`);
        const r = await run(script!);
        assert.equal(r.code, 0, r.stderr);
        assert.match(r.stderr, /already done/);
      });
    } finally {
      await s.server.shutdown();
    }
  },
});

Deno.test({
  name: "k3s-restore: a rejoining node removes its old etcd data once, then joins as k3s always does",
  ignore: noNix,
  fn: async () => {
    const root = await Deno.makeTempDir({ dir: scratch });
    await Deno.mkdir(`${root}/k3s/server/db/etcd`, { recursive: true });
    await Deno.mkdir(`${root}/k3s/server/tls`, { recursive: true });
    await Deno.writeTextFile(`${root}/k3s/server/tls/keep`, "certs stay");
    const { script } = await partOf(withRestore(ha, { role: "rejoin" }), "cp-2", root);
    const first = await run(script!);
    assert.equal(first.code, 0, first.stderr);
    assert.ok(!(await exists(`${root}/k3s/server/db`)), "old etcd data removed");
    assert.equal(await Deno.readTextFile(`${root}/k3s/server/tls/keep`), "certs stay");
    await Deno.mkdir(`${root}/k3s/server/db/etcd`, { recursive: true });
    const again = await run(script!);
    assert.equal(again.code, 0, again.stderr);
    assert.ok(await exists(`${root}/k3s/server/db/etcd`), "the data of the rejoined member is kept on a restart");
  },
});
