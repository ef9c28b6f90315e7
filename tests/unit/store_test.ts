/** The informer's Store: namespace and named indexes follow every set and delete (pure, tables). */
import assert from "node:assert/strict";
import { byControllerIndex, byLabelIndex, Store } from "../../lib/runtime/store.ts";
import type { KubeObject } from "../../lib/kube/client.ts";

type Op = { set: KubeObject } | { delete: string };

function obj(ns: string, name: string, labels: Record<string, string> = {}, owner?: string): KubeObject {
  return {
    metadata: {
      name,
      namespace: ns,
      labels,
      ...(owner ? { ownerReferences: [{ apiVersion: "v1", kind: "X", name: "o", uid: owner, controller: true }] } : {}),
    },
  };
}

const names = (xs: KubeObject[]) => xs.map((o) => `${o.metadata.namespace}/${o.metadata.name}`).sort();

interface Case {
  name: string;
  ops: Op[];
  /** Expected answers: namespace lists, label index values, owner index values. */
  namespaces: Record<string, string[]>;
  labels: Record<string, string[]>;
  owners?: Record<string, string[]>;
}

const cases: Case[] = [
  {
    name: "adds land in their namespace and label value",
    ops: [{ set: obj("a", "x", { c: "one" }) }, { set: obj("b", "y", { c: "one" }) }, { set: obj("a", "z") }],
    namespaces: { a: ["a/x", "a/z"], b: ["b/y"], c: [] },
    labels: { "a/one": ["a/x"], "b/one": ["b/y"], "a/": [] },
  },
  {
    name: "an update that changes the label moves the object between values",
    ops: [{ set: obj("a", "x", { c: "one" }) }, { set: obj("a", "x", { c: "two" }) }],
    namespaces: { a: ["a/x"] },
    labels: { "a/one": [], "a/two": ["a/x"] },
  },
  {
    name: "an update that drops the label takes the object out of the index",
    ops: [{ set: obj("a", "x", { c: "one" }) }, { set: obj("a", "x") }],
    namespaces: { a: ["a/x"] },
    labels: { "a/one": [] },
  },
  {
    name: "a delete leaves every index",
    ops: [{ set: obj("a", "x", { c: "one" }, "u1") }, { set: obj("a", "y", { c: "one" }) }, { delete: "a/x" }],
    namespaces: { a: ["a/y"] },
    labels: { "a/one": ["a/y"] },
    owners: { u1: [] },
  },
  {
    name: "deleting a key never seen changes nothing",
    ops: [{ set: obj("a", "x", { c: "one" }) }, { delete: "a/nope" }, { delete: "b/x" }],
    namespaces: { a: ["a/x"], b: [] },
    labels: { "a/one": ["a/x"] },
  },
  {
    name: "owners are by controller uid, across namespaces",
    ops: [{ set: obj("a", "x", {}, "u1") }, { set: obj("b", "x", {}, "u1") }, { set: obj("a", "y", {}, "u2") }],
    namespaces: { a: ["a/x", "a/y"], b: ["b/x"] },
    labels: {},
    owners: { u1: ["a/x", "b/x"], u2: ["a/y"], u3: [] },
  },
];

Deno.test("store: indexes follow sets and deletes", async (t) => {
  for (const c of cases) {
    await t.step(c.name, () => {
      const s = new Store();
      s.addIndex("c", byLabelIndex("c"));
      s.addIndex("owner", byControllerIndex);
      for (const op of c.ops) "set" in op ? s.set(op.set) : s.delete(op.delete);
      for (const [ns, want] of Object.entries(c.namespaces)) assert.deepEqual(names(s.list(ns)), want, `list(${ns})`);
      for (const [v, want] of Object.entries(c.labels)) assert.deepEqual(names(s.byIndex("c", v)), want, `c=${v}`);
      for (const [v, want] of Object.entries(c.owners ?? {})) {
        assert.deepEqual(names(s.byIndex("owner", v)), want, `owner=${v}`);
      }
      // Every index agrees with a scan of the whole store.
      const all = [...s.values()];
      assert.equal(s.list().length, s.size);
      for (const v of s.indexValues("c")) {
        assert.deepEqual(names(s.byIndex("c", v)), names(all.filter((o) => byLabelIndex("c")(o).includes(v))));
      }
      assert.ok(!s.indexValues("c").some((v) => s.byIndex("c", v).length === 0), "no empty buckets are kept");
    });
  }
});

Deno.test("store: an index added late is built from what is held; an unknown index is an error", () => {
  const s = new Store();
  s.set(obj("a", "x", { c: "one" }));
  s.set(obj("a", "y", { c: "two" }));
  s.addIndex("c", byLabelIndex("c"));
  assert.deepEqual(names(s.byIndex("c", "a/one")), ["a/x"]);
  s.set(obj("a", "y", { c: "one" }));
  assert.deepEqual(names(s.byIndex("c", "a/one")), ["a/x", "a/y"]);
  assert.throws(() => s.byIndex("nope", "a/one"), /no index nope/);
});

Deno.test("store: a list is a copy (changing the store later does not change it)", () => {
  const s = new Store();
  s.set(obj("a", "x"));
  const before = s.list("a");
  s.set(obj("a", "y"));
  s.delete("a/x");
  assert.deepEqual(names(before), ["a/x"]);
  assert.deepEqual(names(s.list("a")), ["a/y"]);
});
