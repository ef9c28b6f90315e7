/** The restore planner (core/etcd/restore.ts), by tables; walked from request to end in restore_walk_test.ts. */
import assert from "node:assert/strict";
import { finished, planRestore, type RestoreFacts, type RestoreNode } from "../../core/etcd/restore.ts";
import { restoreCondition } from "../../core/status/restore.ts";
import { restoreRollout } from "../../core/rollout/restorehold.ts";
import { carrying, DOWN, facts, FOUND, HEALTHY, line, MARK, MINORITY, node, NOW, record, REQ } from "../restore_kit.ts";

const rows: [string, Partial<RestoreFacts>, string][] = [
  ["no request, no record: nothing", { request: undefined }, "none - - - free"],
  [
    "a new request: the backup is looked up first, changes held",
    {},
    "Resolving/Resolving lookupBackup - Normal:RestoreStarted hold",
  ],
  [
    "a finished request is never run again (its id is in status)",
    { record: record("Succeeded", { reason: "Restored" }) },
    "Succeeded/Restored - - - free",
  ],
  [
    "a refused request is not run again either, whatever etcd says now",
    { record: record("Refused", { reason: "HealthyQuorum" }), etcd: DOWN },
    "Refused/HealthyQuorum - - - free",
  ],
  [
    "a healthy quorum without rewindHealthy: refused, nothing touched",
    { record: record("Resolving"), backup: FOUND, etcd: HEALTHY },
    "Refused/HealthyQuorum withdraw - Warning:RestoreRefused free",
  ],
  [
    "a healthy quorum seen at a look older than the request: looked at again, not refused",
    { record: record("Resolving"), backup: FOUND, etcd: { ...HEALTHY, seenAt: new Date(NOW.getTime() - 1) } },
    "Resolving/Resolving lookAgain - - hold",
  ],
  [
    "a healthy quorum seen at a look taken after the request: refused",
    { record: record("Resolving"), backup: FOUND, etcd: { ...HEALTHY, seenAt: NOW } },
    "Refused/HealthyQuorum withdraw - Warning:RestoreRefused free",
  ],
  [
    "no member answered a look older than the request: looked at again (etcd may be back)",
    { record: record("Resolving"), backup: FOUND, etcd: { ...DOWN, seenAt: new Date(NOW.getTime() - 60_000) } },
    "Resolving/Resolving lookAgain - - hold",
  ],
  [
    "no member answered a look taken after the request: the instruction is presigned",
    { record: record("Resolving"), backup: FOUND, etcd: { ...DOWN, seenAt: NOW } },
    "Restoring/RestoringBootstrap presign - - hold",
  ],
  [
    "a new cluster: no look is waited for",
    {
      provisioned: false,
      record: record("Resolving"),
      backup: FOUND,
      etcd: { ...DOWN, seenAt: new Date(NOW.getTime() - 60_000) },
    },
    "Restoring/RestoringBootstrap presign - - hold",
  ],
  [
    "a healthy quorum with rewindHealthy: a safety snapshot first",
    { request: { ...REQ, rewindHealthy: true }, record: record("Resolving"), backup: FOUND, etcd: HEALTHY },
    "SafetySnapshot/TakingSafetySnapshot safetySnapshot - - hold",
  ],
  [
    "quorum lost but a member answers: a safety snapshot first",
    { record: record("Resolving"), backup: FOUND, etcd: MINORITY },
    "SafetySnapshot/TakingSafetySnapshot safetySnapshot - - hold",
  ],
  [
    "no member answers: no safety snapshot, the instruction is presigned",
    { record: record("Resolving"), backup: FOUND, etcd: DOWN },
    "Restoring/RestoringBootstrap presign - - hold",
  ],
  [
    "a backup that does not exist: refused",
    { record: record("Resolving"), backup: { kind: "missing", message: "no object c/x.db in bucket b" } },
    "Refused/BackupNotFound withdraw - Warning:RestoreRefused free",
  ],
  [
    "a store that is down: failed before anything changed",
    { record: record("Resolving"), backup: { kind: "unreachable", message: "connection refused" } },
    "Failed/StoreUnreachable withdraw - Warning:RestoreFailed free",
  ],
  [
    "a source cluster without a store: refused",
    { record: record("Resolving"), backup: { kind: "refused", message: "cluster old has no spec.etcd.backup" } },
    "Refused/SourceRefused withdraw - Warning:RestoreRefused free",
  ],
  [
    "the safety snapshot failed: failed, nothing touched",
    { record: record("SafetySnapshot"), safety: { error: "stream cut" } },
    "Failed/SafetySnapshotFailed withdraw - Warning:RestoreFailed free",
  ],
  [
    "the safety snapshot taken: the instruction is presigned next",
    { record: record("SafetySnapshot"), safety: { key: "c/safety.db", marker: MARK } },
    "Restoring/RestoringBootstrap presign - Normal:SafetySnapshotTaken hold",
  ],
  [
    "a record still at its safety snapshot while a node carries the restore (a lost status write): it goes on",
    { record: record("SafetySnapshot"), instruction: "r1", nodes: [node("cp-1", carrying("restore")), node("cp-2")] },
    "Restoring/RestoringBootstrap - cp-1=restore - hold",
  ],
  [
    "the instruction presigned: the bootstrap node restores, every other node held",
    { record: record("Restoring"), instruction: "r1" },
    "Restoring/RestoringBootstrap - cp-1=restore - hold",
  ],
  [
    "an instruction of another request does not count",
    { record: record("Restoring"), instruction: "r0" },
    "Restoring/RestoringBootstrap presign - - hold",
  ],
  [
    "the bootstrap node's apply failed (hash mismatch): failed, the instruction withdrawn",
    {
      record: record("Restoring"),
      instruction: "r1",
      nodes: [node("cp-1", carrying("restore", { failed: "sha256 mismatch" })), node("cp-2"), node("cp-3")],
    },
    "Failed/BootstrapRestoreFailed withdraw - Warning:RestoreFailed free",
  ],
  [
    "the bootstrap node applied but its member does not answer yet: wait",
    { record: record("Restoring"), instruction: "r1", nodes: [node("cp-1", carrying("restore")), node("cp-2")] },
    "Restoring/RestoringBootstrap - cp-1=restore - hold",
  ],
  [
    "the bootstrap node restored: the first other node rejoins",
    {
      record: record("Restoring"),
      instruction: "r1",
      revision: 1041,
      nodes: [node("cp-1", carrying("restore", { member: true })), node("cp-3"), node("cp-2")],
    },
    "Rejoining/Rejoining - cp-1=restore,cp-2=rejoin Normal:EtcdRestored hold",
  ],
  [
    "a rewind: applied and a healthy member, but its data still holds the marker (an earlier apply): wait",
    {
      record: record("Restoring", { marker: MARK }),
      instruction: "r1",
      marked: true,
      nodes: [node("cp-1", carrying("restore", { member: true })), node("cp-2")],
    },
    "Restoring/RestoringBootstrap - cp-1=restore - hold",
  ],
  [
    "a rewind whose member did not say whether it holds the marker: wait",
    {
      record: record("Restoring", { marker: MARK }),
      instruction: "r1",
      nodes: [node("cp-1", carrying("restore", { member: true })), node("cp-2")],
    },
    "Restoring/RestoringBootstrap - cp-1=restore - hold",
  ],
  [
    "a rewind whose member answers without the marker: restored",
    {
      record: record("Restoring", { marker: MARK }),
      instruction: "r1",
      marked: false,
      nodes: [node("cp-1", carrying("restore", { member: true })), node("cp-2")],
    },
    "Rejoining/Rejoining - cp-1=restore,cp-2=rejoin Normal:EtcdRestored hold",
  ],
  [
    "restored while the instruction is gone (a pass whose status write was lost took it back): no new URL",
    {
      record: record("Restoring"),
      nodes: [node("cp-1", carrying("restore", { member: true }))],
    },
    "Succeeded/Restored withdraw - Normal:RestoreSucceeded free",
  ],
  [
    "cp-2 rejoined: cp-3 next, one at a time",
    {
      record: record("Rejoining", { reason: "Rejoining" }),
      instruction: "r1",
      nodes: [
        node("cp-1", carrying("restore", { member: true })),
        node("cp-2", carrying("rejoin", { member: true })),
        node("cp-3"),
      ],
    },
    "Rejoining/Rejoining - cp-1=restore,cp-2=rejoin,cp-3=rejoin Normal:EtcdMemberRejoined hold",
  ],
  [
    "a failed rejoin halts there, the next node waits",
    {
      record: record("Rejoining", { reason: "Rejoining" }),
      nodes: [
        node("cp-1", carrying("restore", { member: true })),
        node("cp-2", carrying("rejoin", { failed: "k3s did not start" })),
        node("cp-3"),
      ],
    },
    "Rejoining/RejoinHalted - cp-1=restore,cp-2=rejoin Warning:RestoreRejoinFailed hold",
  ],
  [
    "every node a member: succeeded, nothing held",
    {
      record: record("Rejoining", { reason: "Rejoining" }),
      nodes: [
        node("cp-1", carrying("restore", { member: true })),
        node("cp-2", carrying("rejoin", { member: true })),
      ],
    },
    "Succeeded/Restored withdraw - Normal:RestoreSucceeded free",
  ],
  [
    "the request withdrawn before any node changed: cancelled",
    { request: undefined, record: record("SafetySnapshot") },
    "Failed/Cancelled withdraw - Warning:RestoreFailed free",
  ],
  [
    "the request withdrawn once a node changed: the restore runs to its end",
    { request: undefined, record: record("Restoring"), instruction: "r1" },
    "Restoring/RestoringBootstrap - cp-1=restore - hold",
  ],
  [
    "a new request while another runs: the running one goes on",
    { request: { ...REQ, requestId: "r2" }, record: record("Restoring"), instruction: "r1" },
    "Restoring/RestoringBootstrap - cp-1=restore - hold",
  ],
  [
    "a new cluster from a backup: no quorum check, no safety snapshot",
    { provisioned: false, etcd: HEALTHY, record: record("Resolving"), backup: FOUND },
    "Restoring/RestoringBootstrap presign - - hold",
  ],
];

Deno.test("the restore planner, step by step", async (t) => {
  for (const [name, f, want] of rows) {
    await t.step(name, () => assert.equal(line(planRestore(facts(f))), want));
  }
});

Deno.test("a refusal says why and how to go on, and records the backup it would have used", () => {
  const p = planRestore(facts({ record: record("Resolving"), backup: FOUND, etcd: HEALTHY }));
  assert.match(p.record!.message, /healthy quorum \(3\/3 voters healthy\)/);
  assert.match(p.record!.message, /rewindHealthy: true/);
  assert.ok(finished(p.record));
  assert.equal(p.record!.finishedAt, NOW.toISOString());
});

Deno.test("a failed bootstrap restore quotes NIO's reason and leaves the others waiting", () => {
  const p = planRestore(facts({
    record: record("Restoring"),
    instruction: "r1",
    nodes: [node("cp-1", carrying("restore", { failed: "sha256 mismatch: got 00ff" })), node("cp-2")],
  }));
  assert.match(p.record!.message, /cp-1 could not restore c\/2026-06-01\.db: sha256 mismatch: got 00ff/);
  assert.deepEqual(p.record!.nodes?.map((n) => n.state), ["Failed", "Waiting"]);
  assert.doesNotMatch(p.record!.message, /restore-url-lifetime/, "no URL hint for a hash mismatch");
});

Deno.test("a download the store refused (an expired URL) says the URL's lifetime and what to change", () => {
  for (const failed of ["curl: (22) The requested URL returned error: 403", "HTTP 403 AccessDenied", "URL expired"]) {
    const p = planRestore(facts({
      record: record("Restoring"),
      instruction: "r1",
      urlLifetime: 15 * 60_000,
      nodes: [node("cp-1", carrying("restore", { failed })), node("cp-2")],
    }));
    assert.equal(p.record!.reason, "BootstrapRestoreFailed");
    assert.match(p.record!.message, new RegExp(`could not restore c/2026-06-01\\.db: ${failed.replace(/[()]/g, ".")}`));
    assert.match(p.record!.message, /valid for 15m from when NICO signs it.*--restore-url-lifetime.*new requestId/);
    assert.match(p.record!.message, /; the instruction is withdrawn and no other node was touched$/);
  }
});

Deno.test("Restoring: True with the step's reason while a restore runs, False with how it ended", () => {
  const running = planRestore(facts({ record: record("Restoring"), instruction: "r1" })).record;
  assert.deepEqual(
    [restoreCondition(running)?.status, restoreCondition(running)?.reason],
    ["True", "RestoringBootstrap"],
  );
  const refused = planRestore(facts({ record: record("Resolving"), backup: FOUND, etcd: HEALTHY })).record;
  assert.deepEqual([restoreCondition(refused)?.status, restoreCondition(refused)?.reason], ["False", "HealthyQuorum"]);
  assert.equal(restoreCondition(undefined), undefined);
  assert.equal(restoreCondition({ ...refused!, reason: "NotARegisteredReason" }), undefined);
});

Deno.test("while a restore runs the rollout is the restore's: only a changed part is written, nothing else", () => {
  const rows: [string, Parameters<typeof restoreRollout>[1], RestoreNode[], string][] = [
    [
      "the bootstrap node is given its part",
      new Map([["cp-1", "restore"]]),
      [node("cp-1"), node("cp-2")],
      "update cp-1",
    ],
    [
      "a part already written is not written again; the next node's is",
      new Map([["cp-1", "restore"], ["cp-2", "rejoin"]]),
      [node("cp-1", carrying("restore")), node("cp-2"), node("cp-3")],
      "update cp-2",
    ],
    [
      "a new cluster from a backup: the bootstrap node is created first and alone",
      new Map([["cp-1", "restore"]]),
      [node("cp-1", { configured: false }), node("cp-2", { configured: false })],
      "create cp-1",
    ],
    ["no part changes: nothing is written", new Map([["cp-1", "restore"]]), [node("cp-1", carrying("restore"))], "-"],
  ];
  for (const [name, roles, nodes, want] of rows) {
    const p = restoreRollout("r1", roles, nodes);
    const got = [...p.create.map((n) => `create ${n}`), ...p.update.map((n) => `update ${n}`)].join(", ") || "-";
    assert.equal(got, want, name);
    assert.deepEqual([p.remove, p.removing], [[], []], name);
    assert.match(p.waiting!, /every other change is held/);
  }
});
