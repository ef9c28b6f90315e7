// Which Nodes NICO deletes as departed (core/nodes/departed.ts).
import assert from "node:assert/strict";
import { departedNodes } from "../../core/nodes/departed.ts";
import type { NodeView } from "../../core/nodes/workload.ts";

const RESTORED = new Date("2026-06-01T12:00:00Z");
const before = new Date("2026-05-01T00:00:00Z");
const after = new Date("2026-06-01T12:05:00Z");
const view = (name: string, ready: NodeView["ready"], createdAt?: Date): NodeView => ({
  name,
  ready,
  cordoned: false,
  ...(createdAt ? { createdAt } : {}),
});

Deno.test("departed Nodes: a machine that left, or a Node a restore brought back that names no machine here", () => {
  const cases: { name: string; node: NodeView; machine?: boolean; restored?: boolean; deleted: RegExp | undefined }[] =
    [
      { name: "member", node: view("cp-1", "Unknown", before), machine: true, deleted: undefined },
      { name: "leaving, still configured", node: view("w-2", "False", before), machine: true, deleted: undefined },
      { name: "machine left, NotReady", node: view("w-3", "False", before), machine: true, deleted: /machine left/ },
      { name: "machine left, Ready: a kubelet posts", node: view("w-3", "True"), machine: true, deleted: undefined },
      { name: "no machine, no restore", node: view("old-1", "Unknown", before), deleted: undefined },
      {
        name: "no machine, came with the restore, Unknown",
        node: view("old-1", "Unknown", before),
        restored: true,
        deleted: /came with the restored backup/,
      },
      {
        name: "no machine, came with the restore, NotReady: a kubelet posts",
        node: view("old-1", "False", before),
        restored: true,
        deleted: undefined,
      },
      { name: "no machine, restored, Ready", node: view("old-1", "True", before), restored: true, deleted: undefined },
      {
        name: "no machine, registered after the restore",
        node: view("new-1", "Unknown", after),
        restored: true,
        deleted: undefined,
      },
      { name: "no machine, creation unknown", node: view("old-1", "Unknown"), restored: true, deleted: undefined },
      {
        name: "another cluster's machine, came with the restore: said so",
        node: view("cp-9", "Unknown", before),
        machine: true,
        restored: true,
        deleted: /came with the restored backup/,
      },
    ];
  for (const c of cases) {
    const out = departedNodes({
      nodes: new Map([[c.node.name, c.node]]),
      members: new Set(["cp-1", "w-1"]),
      configured: new Set(["cp-1", "w-1", "w-2"]),
      isMachine: () => c.machine === true,
      restoredFrom: c.restored ? RESTORED : undefined,
    });
    if (!c.deleted) assert.deepEqual(out, [], c.name);
    else {
      assert.equal(out.length, 1, c.name);
      assert.equal(out[0]!.name, c.node.name, c.name);
      assert.match(out[0]!.why, c.deleted, c.name);
    }
  }
});

Deno.test("departed Nodes come in name order, members never among them", () => {
  const nodes = new Map(
    ["old-2", "cp-1", "old-1"].map((n) => [n, view(n, "Unknown", before)] as const),
  );
  const out = departedNodes({
    nodes,
    members: new Set(["cp-1"]),
    configured: new Set(["cp-1"]),
    isMachine: () => false,
    restoredFrom: RESTORED,
  });
  assert.deepEqual(out.map((d) => d.name), ["old-1", "old-2"]);
});
