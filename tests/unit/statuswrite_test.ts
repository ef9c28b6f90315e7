import assert from "node:assert/strict";
import type { KubernetesClusterStatus } from "../../crds/kubernetescluster.ts";
import { sameStatus, statusPatch, statusWrite } from "../../core/status/write.ts";
import { registeredReasons } from "../../crds/conditions/mod.ts";

type Cond = NonNullable<KubernetesClusterStatus["conditions"]>[number];
const c = (type: string, status: "True" | "False" | "Unknown", reason: string, message = ""): Cond => ({
  type,
  status,
  reason,
  message,
  lastTransitionTime: "2026-12-01T00:00:00Z",
});

const provisioning: KubernetesClusterStatus = {
  phase: "Provisioning",
  observedGeneration: 1,
  controlPlane: { ready: 0, desired: 1, members: ["cp-1"] } as never,
  conditions: [
    c("Ready", "False", "WaitingForControlPlane", "0/1 control-plane nodes ready"),
    c("Reconciling", "True", "Provisioning", "bringing up 5 nodes"),
    c("Stalled", "False", "NotStalled"),
  ],
};

function edit(s: KubernetesClusterStatus, f: (s: KubernetesClusterStatus) => void): KubernetesClusterStatus {
  const copy = structuredClone(s);
  f(copy);
  return copy;
}
const cond = (s: KubernetesClusterStatus, type: string) => s.conditions!.find((x) => x.type === type)!;

Deno.test("statusWrite: what cannot wait goes out at once, progress waits at most the delay", () => {
  const table: [string, KubernetesClusterStatus | undefined, KubernetesClusterStatus, string][] = [
    ["no status yet", undefined, provisioning, "now"],
    ["nothing changed", provisioning, structuredClone(provisioning), "none"],
    [
      "a message",
      provisioning,
      edit(provisioning, (s) => cond(s, "Ready").message = "1/1 control-plane nodes ready"),
      "later",
    ],
    ["a count", provisioning, edit(provisioning, (s) => (s.controlPlane as { ready: number }).ready = 1), "later"],
    [
      "a progress reason",
      provisioning,
      edit(provisioning, (s) => Object.assign(cond(s, "Ready"), { reason: "WaitingForWorkers" })),
      "later",
    ],
    ["the phase", provisioning, edit(provisioning, (s) => s.phase = "Ready"), "now"],
    [
      "observedGeneration while Reconciling stays True",
      provisioning,
      edit(provisioning, (s) => s.observedGeneration = 2),
      "later",
    ],
    [
      "observedGeneration of a settled cluster",
      edit(provisioning, (s) => cond(s, "Reconciling").status = "False"),
      edit(provisioning, (s) => (cond(s, "Reconciling").status = "False", s.observedGeneration = 2)),
      "now",
    ],
    ["Ready flips", provisioning, edit(provisioning, (s) => cond(s, "Ready").status = "True"), "now"],
    ["Reconciling flips", provisioning, edit(provisioning, (s) => cond(s, "Reconciling").status = "False"), "now"],
    ["Stalled flips", provisioning, edit(provisioning, (s) => cond(s, "Stalled").status = "True"), "now"],
    [
      "a remediation starts",
      edit(provisioning, (s) => s.conditions!.push(c("Remediating", "False", "NoUnhealthyNodes"))),
      edit(provisioning, (s) => s.conditions!.push(c("Remediating", "True", "Remediating"))),
      "now",
    ],
    [
      "a remediation refused",
      edit(provisioning, (s) => s.conditions!.push(c("Remediating", "False", "NoUnhealthyNodes"))),
      edit(provisioning, (s) => s.conditions!.push(c("Remediating", "False", "QuorumWouldBeLost"))),
      "now",
    ],
    [
      "a problem as Ready's reason",
      provisioning,
      edit(provisioning, (s) => Object.assign(cond(s, "Ready"), { reason: "IdentityLost" })),
      "now",
    ],
    [
      "the same problem, another message",
      edit(provisioning, (s) => Object.assign(cond(s, "Ready"), { reason: "IdentityLost" })),
      edit(provisioning, (s) => Object.assign(cond(s, "Ready"), { reason: "IdentityLost", message: "again" })),
      "later",
    ],
    [
      "another halt",
      edit(provisioning, (s) => Object.assign(cond(s, "Stalled"), { status: "True", reason: "RolloutHalted" })),
      edit(provisioning, (s) => Object.assign(cond(s, "Stalled"), { status: "True", reason: "NodeFailed" })),
      "now",
    ],
    [
      "Paused appears",
      provisioning,
      edit(provisioning, (s) => s.conditions!.push(c("Paused", "True", "Paused"))),
      "now",
    ],
  ];
  for (const [what, prev, next, want] of table) {
    assert.equal(statusWrite(prev, next, undefined, 1_000, 10_000).kind, want, what);
  }
});

Deno.test("statusWrite: a held change is written once the delay since it was first held has passed", () => {
  const next = edit(provisioning, (s) => cond(s, "Ready").message = "changed");
  assert.deepEqual(statusWrite(provisioning, next, undefined, 5_000, 10_000), { kind: "later", inMs: 10_000 });
  assert.deepEqual(statusWrite(provisioning, next, 5_000, 12_000, 10_000), { kind: "later", inMs: 3_000 });
  assert.equal(statusWrite(provisioning, next, 5_000, 15_000, 10_000).kind, "now");
  // A delay of 0 writes everything at once.
  assert.equal(statusWrite(provisioning, next, undefined, 5_000, 0).kind, "now");
});

Deno.test("sameStatus ignores key order and undefined fields, nothing else", () => {
  assert.ok(sameStatus({ phase: "Ready", endpoint: undefined }, { phase: "Ready" }));
  assert.ok(sameStatus({ phase: "Ready", endpoint: "e" }, { endpoint: "e", phase: "Ready" }));
  assert.ok(!sameStatus({ phase: "Ready", endpoint: "e" }, { phase: "Ready" }));
});

Deno.test("statusPatch: a field the new status lacks is removed at any depth; lists are replaced whole", () => {
  const previous = {
    phase: "Updating" as const,
    revision: "abc",
    rollout: {
      upToDate: 1,
      total: 2,
      pending: ["w-1"],
      draining: [{ node: "w-1", state: "Draining" as const, message: "m" }],
    },
    initialization: { provisioned: true },
  };
  const next = { phase: "Ready" as const, rollout: { upToDate: 2, total: 2, pending: [] }, initialization: {} };
  assert.deepEqual(statusPatch(previous, next), {
    phase: "Ready",
    revision: null,
    rollout: { upToDate: 2, total: 2, pending: [], draining: null },
    initialization: { provisioned: null },
  });
  assert.deepEqual(statusPatch({}, next), next, "nothing to remove from an empty status");
  assert.deepEqual(statusPatch(previous, { ...previous, revision: undefined }), { ...previous, revision: null });
});

Deno.test("statusWrite: a condition taking another reason is written at once exactly where the registry says", () => {
  for (const { type, reason, spec } of registeredReasons()) {
    const others = (provisioning.conditions ?? []).filter((x) => x.type !== type);
    const prev = { ...provisioning, conditions: [...others, c(type, spec.status, "SomethingElse")] };
    const next = { ...provisioning, conditions: [...others, c(type, spec.status, reason)] };
    assert.equal(statusWrite(prev, next, undefined, 1_000, 10_000).kind, spec.urgency, `${type} ${reason}`);
  }
});

Deno.test("the registry's urgent reasons are those the write policy always wrote at once", () => {
  const all = registeredReasons();
  const names = (list: typeof all) => list.map((r) => `${r.type} ${r.reason}`);
  const urgent = all.filter((r) => r.spec.urgency === "now");
  // Ready=False: any reason but plain progress (waiting for something under way) is a problem the user may act on.
  const progress = [
    "WaitingForControlPlane",
    "WaitingForWorkers",
    "WaitingForKubeconfig",
    "RollingOut",
    "ResolvingRef",
  ];
  const readyFalse = all.filter((r) => r.type === "Ready" && r.spec.status === "False");
  assert.deepEqual(
    names(urgent.filter((r) => r.type === "Ready" && r.spec.status === "False")),
    names(readyFalse.filter((r) => ![...progress, "Deleting"].includes(r.reason))),
  );
  // Remediating=False: a refusal is urgent, "no node is unhealthy" is not.
  const remediatingFalse = all.filter((r) => r.type === "Remediating" && r.spec.status === "False");
  assert.deepEqual(names(remediatingFalse.filter((r) => r.spec.urgency === "later")), ["Remediating NoUnhealthyNodes"]);
  // Stalled=True: every new reason.
  assert.ok(all.filter((r) => r.type === "Stalled" && r.spec.status === "True").every((r) => r.spec.urgency === "now"));
  // EtcdHealthy: what endangers quorum (or the data) is told at once; the rest is health, coalesced.
  assert.deepEqual(names(urgent.filter((r) => r.type === "EtcdHealthy")), [
    "EtcdHealthy QuorumAtRisk",
    "EtcdHealthy QuorumLost",
    "EtcdHealthy Alarm",
    "EtcdHealthy MembershipBlocked",
  ]);
  // EtcdBackedUp: every failure (a backup that cannot be taken is data at risk); success and progress coalesce.
  assert.deepEqual(
    names(urgent.filter((r) => r.type === "EtcdBackedUp")),
    names(all.filter((r) => r.type === "EtcdBackedUp" && r.spec.status === "False")),
  );
  // Restoring: a restore's halt and its end are told at once; its steps are coalesced (its start is a flip).
  assert.deepEqual(
    names(all.filter((r) => r.type === "Restoring" && r.spec.urgency === "later")),
    ["Restoring Resolving", "Restoring TakingSafetySnapshot", "Restoring RestoringBootstrap", "Restoring Rejoining"],
  );
  // Nothing else (the True reasons of Ready and Remediating come with their flip).
  assert.deepEqual(
    names(
      urgent.filter((r) =>
        !["Ready", "Stalled", "Remediating", "EtcdHealthy", "EtcdBackedUp", "Restoring"].includes(r.type)
      ),
    ),
    [],
  );
  assert.deepEqual(names(urgent.filter((r) => r.spec.status === "True" && r.type !== "Stalled")), [
    "Ready ClusterReady",
    "Remediating Remediating",
    "Restoring RejoinHalted",
  ]);
});
