import assert from "node:assert/strict";
import { nodeReport, type NodeState } from "../../core/readiness.ts";
import { SPEC_CHANGED_ANNOTATION, SPEC_HASH_ANNOTATION } from "../../core/labels.ts";
import type { Machine, NixosConfiguration } from "../../core/nio.ts";
import { machine, NS, ownedConfig, UID } from "../../testing/objects.ts";

const NOW = new Date("2026-01-01T12:00:00Z");
const HASH = "abc";
const DESIRED = ownedConfig("prod", "m", "worker").spec;

function cfg(
  status: NixosConfiguration["status"],
  o: { generation?: number; flake?: string; changed?: string; deleting?: boolean } = {},
) {
  const c = ownedConfig("prod", "m", "worker");
  c.metadata = { ...c.metadata, generation: o.generation ?? 2 };
  c.metadata.annotations = {
    [SPEC_HASH_ANNOTATION]: HASH,
    [SPEC_CHANGED_ANNOTATION]: o.changed ?? "2026-01-01T11:50:00Z",
  };
  if (o.flake) c.spec.flake = o.flake;
  if (o.deleting) c.metadata = { ...c.metadata, deletionTimestamp: "2026-01-01T11:59:00Z" };
  if (status) c.status = status;
  return c;
}

const applied = (): Machine => machine("m", { applied: ownedConfig("prod", "m", "worker").metadata.name });
const ready = (t: string) => ({ type: "Ready", status: "True", reason: "Ready", lastTransitionTime: t });

const cases: {
  name: string;
  config?: NixosConfiguration;
  m?: Machine;
  state: NodeState;
  reason: string;
  upToDate?: boolean;
}[] = [
  { name: "no configuration yet", m: applied(), state: "Pending", reason: "ConfigurationPending" },
  {
    name: "newer: Ready for the current generation",
    config: cfg({ phase: "Ready", observedGeneration: 2 }),
    m: applied(),
    state: "Ready",
    reason: "Applied",
  },
  {
    name: "newer: Ready condition without phase",
    config: cfg({ observedGeneration: 2, conditions: [ready("2026-01-01T11:55:00Z")] }),
    m: applied(),
    state: "Ready",
    reason: "Applied",
  },
  {
    name: "newer: Ready for an older generation",
    config: cfg({ phase: "Ready", observedGeneration: 1 }),
    m: applied(),
    state: "Applying",
    reason: "Applying",
  },
  {
    name: "newer: Converging",
    config: cfg({ phase: "Converging", observedGeneration: 1 }),
    m: applied(),
    state: "Applying",
    reason: "Applying",
  },
  {
    name: "newer: Converging for the current generation (newer NIO writes observedGeneration when an apply starts)",
    config: cfg({ phase: "Converging", observedGeneration: 2 }),
    m: applied(),
    state: "Applying",
    reason: "Applying",
  },
  {
    name: "newer: Converging for the current generation with a stale Ready condition",
    config: cfg({ phase: "Converging", observedGeneration: 2, conditions: [ready("2026-01-01T11:00:00Z")] }),
    m: applied(),
    state: "Applying",
    reason: "Applying",
  },
  {
    name: "newer: Degraded with Stalled",
    config: cfg({
      phase: "Degraded",
      conditions: [{ type: "Stalled", status: "True", reason: "ApplyFailed", message: "nix build failed" }],
    }),
    m: applied(),
    state: "Failed",
    reason: "ApplyFailed",
  },
  {
    name: "newer: Blocked MachineInUse",
    config: cfg({ phase: "Blocked", conditions: [{ type: "Ready", status: "False", reason: "MachineInUse" }] }),
    m: machine("m"),
    state: "Blocked",
    reason: "MachineInUse",
  },
  {
    name: "applied but the Machine has not written back",
    config: cfg({ phase: "Ready", observedGeneration: 2 }),
    m: machine("m"),
    state: "Applying",
    reason: "WaitingForMachine",
  },
  {
    name: "applied but the Machine names another configuration",
    config: cfg({ phase: "Ready", observedGeneration: 2 }),
    m: machine("m", { applied: "other" }),
    state: "Applying",
    reason: "WaitingForMachine",
  },
  {
    name: "older: Applied after the last change",
    config: cfg({
      appliedCommit: "a".repeat(40),
      lastAppliedTime: "2026-01-01T11:55:00Z",
      conditions: [{ type: "Applied", status: "True", reason: "Success" }],
    }),
    m: applied(),
    state: "Ready",
    reason: "Applied",
  },
  {
    name: "older: Applied before the last change",
    config: cfg({
      appliedCommit: "a".repeat(40),
      lastAppliedTime: "2026-01-01T11:40:00Z",
      conditions: [{ type: "Applied", status: "True", reason: "Success" }],
    }),
    m: applied(),
    state: "Applying",
    reason: "Applying",
  },
  {
    name: "older: nothing written and past the deadline",
    config: cfg(undefined, { changed: "2026-01-01T10:00:00Z" }),
    m: applied(),
    state: "Failed",
    reason: "ApplyTimeout",
  },
  {
    name: "previous spec applied: Ready, not up to date",
    config: cfg({ phase: "Ready", observedGeneration: 2 }, { flake: "#previous" }),
    m: applied(),
    state: "Ready",
    reason: "Applied",
    upToDate: false,
  },
  {
    name: "being removed",
    config: cfg({ phase: "Removing" }, { deleting: true }),
    m: applied(),
    state: "Removing",
    reason: "Removing",
  },
  {
    name: "someone else's configuration with our name",
    config: {
      ...cfg({ phase: "Ready", observedGeneration: 2 }),
      metadata: { name: ownedConfig("prod", "m", "worker").metadata.name, namespace: NS },
    },
    m: applied(),
    state: "Pending",
    reason: "ConfigurationPending",
  },
];

Deno.test("a node NIO has not started on is never described as Ready", () => {
  const r = nodeReport({
    machine: "m",
    plane: "dataPlane",
    cluster: { name: "prod", namespace: NS, uid: UID },
    desired: DESIRED,
    config: cfg({ phase: "Ready", observedGeneration: 1 }),
    machineObj: applied(),
    now: NOW,
    timeoutMs: 30 * 60_000,
  });
  assert.equal(r.state, "Applying");
  assert.equal(r.detail, "waiting for NIO to apply generation 2");
});

Deno.test("nodeReport follows the NIO contract for both generations", async (t) => {
  for (const c of cases) {
    await t.step(c.name, () => {
      const r = nodeReport({
        machine: "m",
        plane: "dataPlane",
        cluster: { name: "prod", namespace: NS, uid: UID },
        desired: DESIRED,
        config: c.config,
        machineObj: c.m,
        now: NOW,
        timeoutMs: 30 * 60_000,
      });
      assert.deepEqual([r.state, r.reason], [c.state, c.reason], r.detail);
      assert.equal(
        r.upToDate,
        c.upToDate ?? (c.config !== undefined && c.name !== "someone else's configuration with our name"),
      );
    });
  }
});
