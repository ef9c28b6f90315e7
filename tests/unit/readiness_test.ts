import assert from "node:assert/strict";
import { nodeReport, type NodeState } from "../../core/nodes/readiness.ts";
import { SPEC_CHANGED_ANNOTATION, SPEC_HASH_ANNOTATION } from "../../core/contract/labels.ts";
import type { Machine, NioGeneration, NixosConfiguration } from "../../core/contract/nio.ts";
import type { Run } from "../../core/nodes/runs.ts";
import { machine, NS, ownedConfig, UID } from "../../testing/objects.ts";

const NOW = new Date("2026-01-01T12:00:00Z");
const HASH = "abc";
const DESIRED = ownedConfig("prod", "m", "worker").spec;

function cfg(
  status: NixosConfiguration["status"],
  o: { generation?: number; flake?: string; changed?: string; deleting?: boolean; schedule?: string } = {},
) {
  const c = ownedConfig("prod", "m", "worker");
  c.metadata = { ...c.metadata, generation: o.generation ?? 2 };
  c.metadata.annotations = {
    [SPEC_HASH_ANNOTATION]: HASH,
    [SPEC_CHANGED_ANNOTATION]: o.changed ?? "2026-01-01T11:50:00Z",
  };
  if (o.flake) c.spec.flake = o.flake;
  if (o.schedule) c.spec.dayTwoSchedule = o.schedule;
  if (o.deleting) c.metadata = { ...c.metadata, deletionTimestamp: "2026-01-01T11:59:00Z" };
  if (status) c.status = status;
  return c;
}

const applied = (): Machine => machine("m", { applied: ownedConfig("prod", "m", "worker").metadata.name });
const ready = (t: string) => ({ type: "Ready", status: "True", reason: "Succeeded", lastTransitionTime: t });
/** NIO v1's status of a node that ever ran something: Ready, for whatever generation it last saw. */
const v1Ready = { phase: "Ready", observedGeneration: 2, conditions: [ready("2026-01-01T11:00:00Z")] };
/** A run of the node's day-two NixCronJob (`by` CronJob: a scheduled tick). */
function run(created: string, o: Partial<Run> = {}): Run {
  return {
    job: `j-${created}`,
    firedBy: "NixCronJob",
    createdAt: new Date(created),
    active: 0,
    failedAttempts: 0,
    complete: true,
    gaveUp: false,
    ...o,
  };
}

const cases: {
  name: string;
  nio: NioGeneration;
  config?: NixosConfiguration;
  m?: Machine;
  runs?: Run[];
  state: NodeState;
  reason: string;
  upToDate?: boolean;
}[] = [
  { name: "no configuration yet", nio: "v1", m: applied(), state: "Pending", reason: "ConfigurationPending" },
  {
    name: "v1: a run of the current spec completed",
    nio: "v1",
    config: cfg(v1Ready),
    runs: [run("2026-01-01T11:50:01Z")],
    state: "Ready",
    reason: "Applied",
  },
  {
    name: "v1: Ready for the current generation, but no run since the change (v1 says so before running)",
    nio: "v1",
    config: cfg(v1Ready),
    runs: [run("2026-01-01T11:40:00Z")],
    state: "Applying",
    reason: "WaitingForRun",
  },
  {
    name: "v1: a scheduled run in the second of the change does not count",
    nio: "v1",
    config: cfg(v1Ready, { changed: "2026-01-01T11:50:00.600Z" }),
    runs: [run("2026-01-01T11:50:00Z", { firedBy: "CronJob" })],
    state: "Applying",
    reason: "WaitingForRun",
  },
  {
    name: "v1: a run fired by the new commit in the second of the change counts",
    nio: "v1",
    config: cfg(v1Ready, { changed: "2026-01-01T11:50:00.600Z" }),
    runs: [run("2026-01-01T11:50:00Z")],
    state: "Ready",
    reason: "Applied",
  },
  {
    // The audit's gap: a run completed before the change is no run of it, however the new run fares.
    name: "v1: a run completed before the change, the new one running: not applied",
    nio: "v1",
    config: cfg(v1Ready),
    runs: [run("2026-01-01T11:40:00Z"), run("2026-01-01T11:50:01Z", { complete: false, active: 1 })],
    state: "Applying",
    reason: "Running",
  },
  {
    name: "v1: a run completed before the change, the new one failed: Failed, not applied",
    nio: "v1",
    config: cfg(v1Ready),
    runs: [
      run("2026-01-01T11:40:00Z"),
      run("2026-01-01T11:50:01Z", { complete: false, failedAttempts: 7, gaveUp: true }),
    ],
    state: "Failed",
    reason: "RunFailed",
  },
  {
    name: "v1: the run is in progress",
    nio: "v1",
    config: cfg(v1Ready),
    runs: [run("2026-01-01T11:50:01Z", { complete: false, active: 1 })],
    state: "Applying",
    reason: "Running",
  },
  {
    name: "v1: the first attempt failed (NIO still says Ready and retries)",
    nio: "v1",
    config: cfg(v1Ready),
    runs: [run("2026-01-01T11:50:01Z", { complete: false, active: 1, failedAttempts: 1 })],
    state: "Failed",
    reason: "RunFailed",
  },
  {
    name:
      "v1: the run gave up, and NIO's next scheduled run of the same spec runs: still Failed (a retry, not a recovery)",
    nio: "v1",
    config: cfg(v1Ready),
    runs: [
      run("2026-01-01T11:50:01Z", { complete: false, failedAttempts: 7, gaveUp: true }),
      run("2026-01-01T11:58:00Z", { complete: false, active: 1, firedBy: "CronJob" }),
    ],
    state: "Failed",
    reason: "RunFailed",
  },
  {
    name: "v1: the scheduled run after a failed one completed: applied",
    nio: "v1",
    config: cfg(v1Ready),
    runs: [
      run("2026-01-01T11:50:01Z", { complete: false, failedAttempts: 7, gaveUp: true }),
      run("2026-01-01T11:58:00Z", { firedBy: "CronJob" }),
    ],
    state: "Ready",
    reason: "Applied",
  },
  {
    name: "v1: a later attempt succeeded",
    nio: "v1",
    config: cfg(v1Ready),
    runs: [run("2026-01-01T11:50:01Z", { failedAttempts: 2 })],
    state: "Ready",
    reason: "Applied",
  },
  {
    name: "v1: Blocked is not Failed (v1 sets Stalled=True for it too)",
    nio: "v1",
    config: cfg({
      phase: "Blocked",
      conditions: [
        { type: "Ready", status: "False", reason: "MachineNotReady", message: "not reachable via SSH" },
        { type: "Stalled", status: "True", reason: "MachineNotReady" },
      ],
    }),
    state: "Blocked",
    reason: "MachineNotReady",
  },
  {
    name: "v1: a failed full install",
    nio: "v1",
    config: (() => {
      const c = cfg({
        phase: "Degraded",
        conditions: [{ type: "Stalled", status: "True", reason: "ApplyFailed", message: "Full-disk install failed" }],
      });
      c.spec.fullInstall = true;
      return c;
    })(),
    state: "Failed",
    reason: "NioDegraded",
    upToDate: false,
  },
  {
    name: "v1: nothing ran within the node timeout of the first scheduled run after the change",
    nio: "v1",
    config: cfg(v1Ready, { changed: "2026-01-01T11:00:00Z", schedule: "*/15 * * * *" }),
    state: "Failed",
    reason: "ApplyTimeout",
  },
  {
    name: "v1: the previous spec applied: Ready, not up to date",
    nio: "v1",
    config: cfg(v1Ready, { flake: "#previous" }),
    runs: [run("2026-01-01T11:50:01Z")],
    state: "Ready",
    reason: "Applied",
    upToDate: false,
  },
  {
    name: "older: Applied after the last change",
    nio: "older",
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
    // The audit's gap: Kubernetes stamps whole seconds, so an apply in the second of a change at x.500 is stamped
    // x.000, before the change, and must count.
    name: "older: applied in the same second as a change made at x.500",
    nio: "older",
    config: cfg({
      appliedCommit: "a".repeat(40),
      lastAppliedTime: "2026-01-01T11:50:00Z",
      conditions: [{ type: "Applied", status: "True", reason: "Success" }],
    }, { changed: "2026-01-01T11:50:00.500Z" }),
    m: applied(),
    state: "Ready",
    reason: "Applied",
  },
  {
    name: "older: applied in the second before a change made at x.500",
    nio: "older",
    config: cfg({
      appliedCommit: "a".repeat(40),
      lastAppliedTime: "2026-01-01T11:49:59Z",
      conditions: [{ type: "Applied", status: "True", reason: "Success" }],
    }, { changed: "2026-01-01T11:50:00.500Z" }),
    m: applied(),
    state: "Applying",
    reason: "Applying",
  },
  {
    name: "older: applied but the Machine has not written back",
    nio: "older",
    config: cfg({
      lastAppliedTime: "2026-01-01T11:55:00Z",
      conditions: [{ type: "Applied", status: "True", reason: "Success" }],
    }),
    m: machine("m", { applied: "other" }),
    state: "Applying",
    reason: "WaitingForMachine",
  },
  {
    name: "older: Applied before the last change",
    nio: "older",
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
    nio: "older",
    config: cfg(undefined, { changed: "2026-01-01T10:00:00Z" }),
    m: applied(),
    state: "Failed",
    reason: "ApplyTimeout",
  },
  {
    name: "being removed",
    nio: "v1",
    config: cfg({ phase: "Removing" }, { deleting: true }),
    m: applied(),
    state: "Removing",
    reason: "Removing",
  },
  {
    name: "someone else's configuration with our name",
    nio: "v1",
    config: {
      ...cfg(v1Ready),
      metadata: { name: ownedConfig("prod", "m", "worker").metadata.name, namespace: NS },
    },
    m: applied(),
    state: "Pending",
    reason: "ConfigurationPending",
  },
];

const input = (c: Pick<(typeof cases)[number], "nio" | "config" | "m" | "runs">) => ({
  machine: "m",
  plane: "dataPlane" as const,
  cluster: { name: "prod", namespace: NS, uid: UID },
  desired: DESIRED,
  config: c.config,
  machineObj: c.m,
  now: NOW,
  timeoutMs: 30 * 60_000,
  nio: c.nio,
  runs: c.runs,
});

Deno.test("a v1 node with no run since the change says when NIO runs it next, once it is not about to start", () => {
  const config = cfg(v1Ready);
  const r = nodeReport(input({ nio: "v1", config, runs: [] }));
  assert.equal(r.detail, "waiting for NIO's next run of m, due 12:30 UTC");
  config.spec.dayTwoSchedule = "* * * * *";
  assert.equal(
    nodeReport(input({ nio: "v1", config, runs: [] })).detail,
    "waiting for NIO's next run of m, due 12:01 UTC",
  );
  // Changed two seconds ago: a new commit starts a run at once, and NICO brings the schedule forward otherwise;
  // no due time is promised yet.
  const fresh = cfg(v1Ready, { changed: "2026-01-01T11:59:58Z" });
  assert.equal(nodeReport(input({ nio: "v1", config: fresh, runs: [] })).detail, "waiting for NIO to start a run of m");
});

Deno.test("a failing v1 run names the attempt and the Pod's reason", () => {
  const r = nodeReport(input({
    nio: "v1",
    config: cfg(v1Ready),
    runs: [
      run("2026-01-01T11:50:01Z", { complete: false, failedAttempts: 2, lastFailure: "Error (exit code 1): boom" }),
    ],
  }));
  assert.match(r.detail, /attempt 2 of run j-2026-01-01T11:50:01Z: Error \(exit code 1\): boom; NIO retries it/);
});

Deno.test("nodeReport follows the NIO contract for both generations", async (t) => {
  for (const c of cases) {
    await t.step(c.name, () => {
      const r = nodeReport(input(c));
      assert.deepEqual([r.state, r.reason], [c.state, c.reason], r.detail);
      assert.equal(
        r.upToDate,
        c.upToDate ?? (c.config !== undefined && c.name !== "someone else's configuration with our name"),
      );
    });
  }
});
