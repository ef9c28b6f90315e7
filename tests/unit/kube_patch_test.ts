/** lib/kube/patch.ts: JSON Pointer escaping and the metadata patch operations. */
import assert from "node:assert/strict";
import {
  addAnnotation,
  addFinalizer,
  addLabel,
  escapePointer,
  type JsonPatchOp,
  pointer,
  pointerKeys,
  removeAnnotation,
  removeFinalizer,
  removeLabel,
  testAnnotation,
  testLabel,
  testLabels,
  testResourceVersion,
  unescapePointer,
} from "../../lib/kube/patch.ts";

Deno.test("a pointer segment is escaped as RFC 6901 says and read back as it was", async (t) => {
  const cases: [string, string][] = [
    ["plain", "plain"],
    ["nico.homystack.com/cluster", "nico.homystack.com~1cluster"],
    ["a~b", "a~0b"],
    ["~1", "~01"],
    ["/~", "~1~0"],
    ["~0/~1", "~00~1~01"],
    ["", ""],
  ];
  for (const [raw, escaped] of cases) {
    await t.step(JSON.stringify(raw), () => {
      assert.equal(escapePointer(raw), escaped);
      assert.equal(unescapePointer(escaped), raw);
    });
  }
  await t.step("RFC 6901's own examples", () => {
    assert.deepEqual(pointerKeys("/a~1b"), ["a/b"]);
    assert.deepEqual(pointerKeys("/m~0n"), ["m~n"]);
    assert.deepEqual(pointerKeys("/"), [""]);
    assert.deepEqual(pointerKeys("/foo/0"), ["foo", "0"]);
  });
  await t.step("a path of keys round-trips", () => {
    const keys = ["metadata", "annotations", "x.io/a~b", "", "~1/"];
    assert.equal(pointer(keys), "/metadata/annotations/x.io~1a~0b//~01~1");
    assert.deepEqual(pointerKeys(pointer(keys)), keys);
  });
  await t.step("a path not starting with / is refused, saying what it found", () => {
    assert.throws(() => pointerKeys("metadata/labels"), /starts with "\/" or is empty: found "metadata\/labels"/);
  });
});

Deno.test("label, annotation and resourceVersion operations name the escaped key", () => {
  const cases: [JsonPatchOp, JsonPatchOp][] = [
    [addLabel("nico.homystack.com/cluster", "prod"), {
      op: "add",
      path: "/metadata/labels/nico.homystack.com~1cluster",
      value: "prod",
    }],
    [removeLabel("nico.homystack.com/cluster"), { op: "remove", path: "/metadata/labels/nico.homystack.com~1cluster" }],
    [testLabel("a~b", "v"), { op: "test", path: "/metadata/labels/a~0b", value: "v" }],
    [testLabels({ role: "cp" }), { op: "test", path: "/metadata/labels", value: { role: "cp" } }],
    [addAnnotation("x.io/y", "1"), { op: "add", path: "/metadata/annotations/x.io~1y", value: "1" }],
    [removeAnnotation("x.io/y"), { op: "remove", path: "/metadata/annotations/x.io~1y" }],
    [testAnnotation("x.io/y", "1"), { op: "test", path: "/metadata/annotations/x.io~1y", value: "1" }],
    [testResourceVersion("42"), { op: "test", path: "/metadata/resourceVersion", value: "42" }],
  ];
  for (const [got, want] of cases) assert.deepEqual(got, want);
});

Deno.test("finalizers: added once, the list created when there is none; removed only from the list as read", () => {
  const F = "nico.homystack.com/finalizer";
  assert.deepEqual(addFinalizer(undefined, F), [{ op: "add", path: "/metadata/finalizers", value: [F] }]);
  assert.deepEqual(addFinalizer([], F), [{ op: "add", path: "/metadata/finalizers/-", value: F }]);
  assert.deepEqual(addFinalizer(["other"], F), [{ op: "add", path: "/metadata/finalizers/-", value: F }]);
  assert.deepEqual(addFinalizer(["other", F], F), []);
  const current = ["other", F, "third"];
  const ops = removeFinalizer(current, F);
  assert.deepEqual(ops, [
    { op: "test", path: "/metadata/finalizers", value: ["other", F, "third"] },
    { op: "replace", path: "/metadata/finalizers", value: ["other", "third"] },
  ]);
  current.push("later");
  assert.deepEqual(ops[0]!.value, ["other", F, "third"], "the test keeps the list as it was read");
  assert.deepEqual(removeFinalizer(["other"], F)[1], { op: "replace", path: "/metadata/finalizers", value: ["other"] });
});
