/** What the caches do to objects before they hold them (lib/runtime/compact.ts). */
import assert from "node:assert/strict";
import { shareStrings, StringTable, without } from "../../lib/runtime/compact.ts";

Deno.test("shareStrings: equal short values become one string; unique fields, long values and numbers stay", () => {
  const t = new StringTable();
  const a = JSON.parse('{"kind":"Job","metadata":{"uid":"u-1","labels":{"app":"x"}},"list":["x",1,null]}');
  const b = JSON.parse('{"kind":"Job","metadata":{"uid":"u-1","labels":{"app":"x"}},"list":["x",2,null]}');
  shareStrings(a, t);
  shareStrings(b, t);
  assert.deepEqual(b, { kind: "Job", metadata: { uid: "u-1", labels: { app: "x" } }, list: ["x", 2, null] });
  assert.equal(t.size, 2, "Job and x; the uid is not kept");
  shareStrings({ kind: "Secret", data: { token: "dG9rZW4=" }, stringData: { key: "k" } }, t);
  assert.equal(t.size, 3, "a Secret's values are not kept (Secret is)");
  const long = "c".repeat(200);
  shareStrings({ cert: long }, t);
  assert.equal(t.size, 3, "a long value is not kept");
});

Deno.test("StringTable: starts afresh when full", () => {
  const t = new StringTable(3);
  for (const s of ["a", "b", "c", "d"]) t.share(s);
  assert.equal(t.size, 1);
});

Deno.test("without: a new object without the fields, the same object when it has none", () => {
  const o = { a: 1, b: 2 };
  assert.deepEqual(without(o, ["b"]), { a: 1 });
  assert.equal(without(o, ["c"]), o);
  assert.deepEqual(o, { a: 1, b: 2 }, "the object given is not changed");
});

Deno.test("what the caches hold keeps V8's fast properties (a deleted field makes a slow dictionary)", async () => {
  const probe = new URL("../fast_properties_probe.ts", import.meta.url).pathname;
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-read", "--no-check", "--v8-flags=--allow-natives-syntax", probe],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.ok(out.success, new TextDecoder().decode(out.stderr));
  const got = JSON.parse(new TextDecoder().decode(out.stdout));
  assert.deepEqual(got, {
    "delete (the old way)": false,
    "metadata without managedFields": true,
    "run Job": true,
    "Machine status": true,
    "other shard's configuration": true,
  });
});
