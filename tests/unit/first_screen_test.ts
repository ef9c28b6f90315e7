/**
 * A clean first screen: NICO's graph and deno.lock carry no benchmark-only package, so a newcomer's first
 * `deno task demo` fetches (and warns about) nothing but NICO's own dependencies. The etcd client comparison
 * (bench/etcd_clients.ts) loads the npm `etcd3` package from bench/etcd3/, and the S3 client comparison
 * (bench/s3/clients.ts) the AWS SDK, aws4fetch and minio from bench/s3/, each with a config and lock of its own.
 */
import assert from "node:assert/strict";

const ROOT = new URL("../../", import.meta.url);
const json = async (path: string) => JSON.parse(await Deno.readTextFile(new URL(path, ROOT)));

Deno.test("deno.lock holds no benchmark-only package (etcd3, gRPC, protobufjs, S3 clients)", async () => {
  const lock = await json("deno.lock");
  const names = [
    ...Object.keys(lock.specifiers ?? {}),
    ...Object.keys(lock.npm ?? {}),
  ];
  assert.deepEqual(
    names.filter((n) => /etcd3|grpc|protobuf|aws|smithy|minio/.test(n)),
    [],
  );
});

Deno.test("the S3 clients bench's config resolves NICO's own imports as NICO does; the root config leaves it", async () => {
  const root = await json("deno.json");
  const bench = await json("bench/s3/deno.json");
  for (const [name, target] of Object.entries(root.imports)) {
    assert.equal(bench.imports[name], target, name);
  }
  assert.ok(
    root.exclude.includes("bench/s3/"),
    "the root config leaves bench/s3/ to its own config",
  );
});

Deno.test("the etcd3 bench's config resolves NICO's own imports as NICO does, and pins etcd3", async () => {
  const root = await json("deno.json");
  const bench = await json("bench/etcd3/deno.json");
  for (const [name, target] of Object.entries(root.imports)) {
    assert.equal(bench.imports[name], target, name);
  }
  assert.equal(bench.imports.etcd3, "npm:etcd3@1.1.2");
  assert.ok(
    root.exclude.includes("bench/etcd3/"),
    "the root config leaves bench/etcd3/ to its own config",
  );
});

Deno.test("no source outside bench/etcd3/ names the etcd3 package", async () => {
  const out = await new Deno.Command("git", {
    args: ["grep", "-l", "-e", 'from "etcd3"', "-e", "npm:etcd3", "--", "*.ts"],
    cwd: ROOT,
    stdout: "piped",
  }).output();
  const files = new TextDecoder().decode(out.stdout).split("\n").filter(
    Boolean,
  );
  assert.ok(
    files.includes("bench/etcd3/grpc.ts"),
    "the search finds the one file that does",
  );
  assert.deepEqual(
    files.filter((f) => !f.startsWith("bench/etcd3/") && f !== "tests/unit/first_screen_test.ts"),
    [],
  );
});
