/** The restore planner (core/etcd/restore.ts) walked from request to end in a small simulated world. */
import assert from "node:assert/strict";
import { finished, planRestore, type RestoreFacts } from "../../core/etcd/restore.ts";
import type { RestoreStatus } from "../../crds/restore.ts";
import { carrying, DOWN, facts, FOUND, HEALTHY, line, MARK, node, record, REQ } from "../restore_kit.ts";

/** A simulated world: NIO applies what it is given at once; members answer once applied (unless told to fail). */
function walk(n: number, etcd: RestoreFacts["etcd"], fail?: string): string[] {
  const names = Array.from({ length: n }, (_, i) => `cp-${i + 1}`);
  const world = new Map(names.map((name) => [name, node(name, { member: etcd.quorum })]));
  let record: RestoreStatus | undefined;
  let instruction: string | undefined;
  const log: string[] = [];
  for (let pass = 0; pass < 20; pass++) {
    // The marker is in the data until the bootstrap node restored.
    const marked = record?.marker === undefined ? undefined : world.get("cp-1")?.role === undefined;
    const f = facts({ record, instruction, etcd, nodes: [...world.values()], revision: 1041, marked });
    const act = record?.step === "Resolving"
      ? { backup: FOUND }
      : record?.step === "SafetySnapshot"
      ? { safety: { key: "c/safety.db", marker: MARK } }
      : {};
    const p = planRestore({ ...f, ...act, request: { ...REQ, rewindHealthy: true } });
    log.push(line(p));
    record = p.record;
    if (p.act === "presign") instruction = record!.requestId;
    if (p.act === "withdraw") instruction = undefined;
    for (const [name, role] of p.roles) {
      const was = world.get(name)!;
      if (was.role?.role === role) continue;
      const failed = name === fail ? "it broke" : undefined;
      world.set(name, node(name, { role: { role, requestId: "r1" }, member: failed === undefined, failed }));
    }
    if (finished(record) || (fail && pass > 8)) break;
  }
  return log;
}

Deno.test("a restore of a dead 3-node control plane, from request to end", () => {
  assert.deepEqual(walk(3, DOWN), [
    "Resolving/Resolving lookupBackup - Normal:RestoreStarted hold",
    "Restoring/RestoringBootstrap presign - - hold",
    "Restoring/RestoringBootstrap - cp-1=restore - hold",
    "Rejoining/Rejoining - cp-1=restore,cp-2=rejoin Normal:EtcdRestored hold",
    "Rejoining/Rejoining - cp-1=restore,cp-2=rejoin,cp-3=rejoin Normal:EtcdMemberRejoined hold",
    "Succeeded/Restored withdraw - Normal:RestoreSucceeded free",
  ]);
});

Deno.test("a rewind of a healthy 3-node control plane takes a safety snapshot first", () => {
  const log = walk(3, HEALTHY);
  assert.equal(log[1], "SafetySnapshot/TakingSafetySnapshot safetySnapshot - - hold");
  assert.equal(log[2], "Restoring/RestoringBootstrap presign - Normal:SafetySnapshotTaken hold");
  assert.equal(log.at(-1), "Succeeded/Restored withdraw - Normal:RestoreSucceeded free");
});

Deno.test("a rewind waits, saying so, while the bootstrap node's member still holds the marker", () => {
  const p = planRestore(facts({
    record: record("Restoring", { marker: MARK }),
    instruction: "r1",
    marked: true,
    nodes: [node("cp-1", carrying("restore", { member: true }))],
  }));
  assert.match(p.record!.nodes![0]!.message!, /backup's data \(without \/nico\.homystack\.com\/restore\/r1/);
  const safety = planRestore(facts({ record: record("SafetySnapshot"), safety: { key: "c/safety.db", marker: MARK } }));
  assert.equal(safety.record!.marker, MARK, "the marker is recorded with the safety snapshot");
});

Deno.test("a node that fails to rejoin halts the restore there, still holding every other change", () => {
  const log = walk(3, DOWN, "cp-2");
  assert.ok(log.includes("Rejoining/RejoinHalted - cp-1=restore,cp-2=rejoin Warning:RestoreRejoinFailed hold"));
  assert.ok(log.every((l) => !l.includes("cp-3=rejoin")), "cp-3 waits for cp-2");
  assert.ok(log.at(-1)!.endsWith("hold"));
});
