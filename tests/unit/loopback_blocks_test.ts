/**
 * Integration files run side by side on one machine, and a simulated host binds its Machine's loopback address
 * (API servers on :6443, etcd members on :2379/:2380): two files that use the same block 127.0.<block>.* can
 * answer each other's requests. Each block belongs to one file. Shared on purpose: block 0 (127.0.0.*: nothing
 * listens on a fixed port there) and block 10, createMachines's default (testing/nico.ts), for files that bind
 * nothing on their Machines' addresses.
 */
import assert from "node:assert/strict";

const ROOT = new URL("../../", import.meta.url);
/** Blocks every file may use (see above). */
const SHARED = new Set([0, 10]);

/** The blocks a test file uses: `hostBlock: …` numbers (one line; both arms of a `?:`), `block = …`, 127.0.<n>.x. */
export function blocksOf(text: string): number[] {
  const out = new Set<number>();
  for (const m of text.matchAll(/(?:hostBlock:|\bblock = )([^,;)}\n]*)/g)) {
    for (const n of m[1]!.matchAll(/\b\d+\b/g)) out.add(Number(n[0]));
  }
  for (const m of text.matchAll(/127\.0\.(\d+)\.\d+/g)) out.add(Number(m[1]));
  return [...out].sort((a, b) => a - b);
}

Deno.test("the block reader finds literals, hostBlock options and both arms of a choice", () => {
  assert.deepEqual(blocksOf(`startScenario(cp, "x", { hostBlock: generation === "v1" ? 74 : 75 })`), [74, 75]);
  assert.deepEqual(blocksOf(`const block = generation === "v1" ? 61 : 62;`), [61, 62]);
  assert.deepEqual(blocksOf(`const HOSTS = ["127.0.91.1", "127.0.91.2"]; host: "127.0.0.9"`), [0, 91]);
});

Deno.test("each loopback block 127.0.<n>.* belongs to one integration file", async () => {
  const owners = new Map<number, string[]>();
  for await (const e of Deno.readDir(new URL("tests/integration/", ROOT))) {
    if (!e.name.endsWith(".ts")) continue;
    const text = await Deno.readTextFile(new URL(`tests/integration/${e.name}`, ROOT));
    for (const b of blocksOf(text)) owners.set(b, [...(owners.get(b) ?? []), e.name]);
  }
  const shared = [...owners].filter(([b, files]) => files.length > 1 && !SHARED.has(b)).map(([b, f]) =>
    `${b}: ${f.sort().join(", ")}`
  );
  assert.deepEqual(shared, [], "give one of them a free block");
});
