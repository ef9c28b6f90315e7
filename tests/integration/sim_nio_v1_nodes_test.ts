/**
 * The simulated NIO v1 and its nodes against a real API server (shared/docs/nio-contract.md): unreachable and
 * contested Machines, deletion and the leaked second decommission, where files land, hooks while a run's Pod
 * runs, and a restarted simulator. Nothing here sleeps: every wait is on a condition.
 */
import assert from "node:assert/strict";
import { BOOTSTRAP_LABEL } from "../../core/contract/labels.ts";
import { JOBS, NIX_CRON_JOBS, NIX_JOBS } from "../../core/contract/nio.ts";
import { SIM_FINALIZER, UNDISCOVERABLE_ANNOTATION } from "../../testing/sim-nio.ts";
import {
  attemptOf,
  cond,
  type CronJob,
  CRONJOBS,
  env,
  type Job,
  type NixCronJob,
  type NixJob,
  owners,
  PINNED,
  readyNode,
  type SimWorld,
  simWorld,
  YEARLY,
} from "../sim_nio_api_kit.ts";

Deno.test("v1: an unreachable Machine blocks its configuration (Stalled) and suspends the NixCronJob, whose CronJob still runs", async () => {
  // One minute is 100 ms: `*/30` ticks every 3 s.
  await using w = await simWorld("sim-unreachable", { applyDelayMs: 50, minuteMs: 100 });
  await readyNode(w, "web", "m");
  await w.patchMachine("m", { metadata: { annotations: { [UNDISCOVERABLE_ANNOTATION]: "true" } } });
  const blocked = await w.waitCfg("web", "Blocked", (c) => c.status?.phase === "Blocked");
  assert.deepEqual(
    ["Ready", "Stalled", "Reconciling"].map((t) => [t, cond(blocked, t)?.status, cond(blocked, t)?.reason]),
    [["Ready", "False", "MachineNotReady"], ["Stalled", "True", "MachineNotReady"], [
      "Reconciling",
      "False",
      "MachineNotReady",
    ]],
  );
  assert.match(cond(blocked, "Ready")?.message ?? "", /not reachable via SSH/);
  const m = (await w.machine("m"))!;
  assert.equal("discoverable" in (m.status ?? {}), false, "NIO v1 omits discoverable: false");
  assert.equal(cond(m, "Discoverable")?.reason, "SSHFailed");
  const ncj = await w.until(
    "the NixCronJob suspended",
    () => w.get<NixCronJob>(NIX_CRON_JOBS, "web-day2"),
    (n) => n.spec?.nix.suspend === true && n.status?.phase === "Suspended",
  );
  assert.equal(ncj.spec?.nix.suspend, true);
  const mark = w.sim.history.length;
  const ran = await w.happens("a scheduled run while Blocked", () => w.runEvents("web", mark)[0]);
  assert.equal(ran.detail, "scheduled", "NIO v1 does not project a suspended NixCronJob: its CronJob keeps going");
  assert.notEqual((await w.get<CronJob>(CRONJOBS, "web-day2"))?.spec?.suspend, true);
  const failed = await w.happens("the run fails on the host", () => w.events("apply-failed", "web", mark)[0]);
  assert.match(failed.detail ?? "", /ssh: connect to host m\.sim\.invalid port 22/);

  await w.patchMachine("m", { metadata: { annotations: { [UNDISCOVERABLE_ANNOTATION]: null } } });
  await w.waitCfg("web", "Ready once reachable", (c) => c.status?.phase === "Ready");
  assert.equal((await w.get<NixCronJob>(NIX_CRON_JOBS, "web-day2"))?.spec?.nix.suspend, false);
});

Deno.test("v1: the earliest configuration for a Machine wins; a missing Machine blocks too", async () => {
  await using w = await simWorld("sim-earliest", { applyDelayMs: 50, removeDelayMs: 50, decommissionLeak: false });
  await w.addMachine("m");
  // creationTimestamp has whole seconds and a tie goes to the lower name.
  await w.addCfg("a-first", "m");
  await w.addCfg("b-second", "m");
  const loser = await w.waitCfg("b-second", "Blocked", (c) => c.status?.phase === "Blocked");
  assert.equal(cond(loser, "Ready")?.reason, "MachineInUse");
  assert.equal(cond(loser, "Stalled")?.status, "True");
  assert.match(cond(loser, "Ready")?.message ?? "", /already owned by NixosConfiguration "a-first"/);
  await w.waitCfg("a-first", "Ready", (c) => c.status?.phase === "Ready");
  assert.equal(await w.get(NIX_CRON_JOBS, "b-second-day2"), undefined, "the loser gets no NixCronJob");
  assert.equal(w.events("apply-started", "b-second").length, 0);

  await w.deleteCfg("a-first");
  await w.waitCfg("b-second", "Ready once the Machine is free", (c) => c.status?.phase === "Ready");
  await w.waitMachine("m", "owned by b-second", (m) => m.status?.appliedConfiguration === "b-second");

  await w.addCfg("orphan", "ghost");
  const orphan = await w.waitCfg("orphan", "Blocked", (c) => c.status?.phase === "Blocked");
  assert.equal(cond(orphan, "Ready")?.reason, "MachineNotReady");
  assert.match(cond(orphan, "Ready")?.message ?? "", /Machine "ghost" not found/);
  await w.addMachine("ghost");
  await w.waitCfg("orphan", "Ready once the Machine exists", (c) => c.status?.phase === "Ready");
});

Deno.test("v1: deletion decommissions, clears the Machine and lets go; the leaked second decommission runs again, and after its TTL", async () => {
  // One minute is 60 ms: the decommission Job's TTL of 600 s is 600 ms.
  await using w = await simWorld("sim-delete", { applyDelayMs: 50, removeDelayMs: 300, minuteMs: 60 });
  const ready = await readyNode(w, "web", "m");
  await w.waitMachine("m", "write-back", (m) => m.status?.appliedConfiguration === "web");

  await w.deleteCfg("web");
  const removing = await w.waitCfg("web", "Removing", (c) => c.status?.phase === "Removing");
  assert.ok(removing.metadata.deletionTimestamp && removing.metadata.finalizers?.includes(SIM_FINALIZER));
  assert.equal((removing.status as Record<string, unknown>)["decommissionJobRef"], "web-onremove");
  assert.equal(cond(removing, "Ready")?.status, "True", "the removal path sets only the phase");
  assert.equal(removing.status?.observedGeneration, ready.status?.observedGeneration);
  assert.ok(removing.metadata.generation! > removing.status!.observedGeneration!, "deletion moved the generation");
  assert.equal((await w.machine("m"))?.status?.appliedConfiguration, "web", "kept while onRemoveFlake runs");
  assert.equal(await w.get(NIX_CRON_JOBS, "web-day2"), undefined, "day two stopped");
  assert.equal(await w.get(CRONJOBS, "web-day2"), undefined);
  const nj = (await w.get<NixJob>(NIX_JOBS, "web-onremove"))!;
  assert.deepEqual(owners(nj), [], "an orphan: it outlives the configuration");
  assert.equal(nj.metadata.labels?.["nio.homystack.com/operation"], "decommission");
  assert.deepEqual(nj.spec?.nix.args, ["switch", "--flake", ".#minimal", "--target-host", "root@m.sim.invalid"]);
  const [job] = await w.until("its run Job", () => w.list<Job>(JOBS, "nio.homystack.com/workload-name=web-onremove"), (
    j,
  ) => j.length > 0);
  assert.deepEqual(owners(job!), ["NixJob/web-onremove"]);
  assert.equal(job!.spec?.ttlSecondsAfterFinished, 600);

  await w.until("web gone", async () => (await w.cfg("web")) ? undefined : true, () => true);
  const m = (await w.machine("m"))!;
  for (const f of ["hasConfiguration", "appliedConfiguration", "appliedCommit", "lastAppliedTime"]) {
    assert.equal(f in (m.status ?? {}), false, `${f} cleared (omitted, as NIO v1 writes it)`);
  }
  const removal = () => w.sim.history.filter((e) => /^remove-|^removed$|^leaked$/.test(e.kind) && e.name === "web");
  // The first decommission runs, then the configuration is removed; the leak comes from NIO's next reconcile, which
  // may record its start before the removal is recorded on a loaded machine: the order of those two is not fixed.
  await w.until(
    "the removal and the leak",
    () => removal().map((e) => e.kind),
    (k) => k.includes("leaked") && k.includes("removed"),
  );
  const kinds = removal().map((e) => e.kind);
  assert.deepEqual(kinds.slice(0, 2), ["remove-started", "remove-finished"], "the first decommission ran");
  await w.until(
    "the leaked decommission ran #minimal again, and again after its Job expired",
    () => removal().filter((e) => e.kind === "remove-finished").length,
    (n) => n >= 3,
  );
  assert.ok(await w.get(NIX_JOBS, "web-onremove"), "nobody removes the leaked NixJob");
  assert.ok(w.events("run-created", job!.metadata.name).length >= 3, "the same run Job, made three times");
});

Deno.test("v1: files land at the checkout's root: cluster.nix beside a configurationSubdir flake fails, <subdir>/cluster.nix works; a path fixed in the spec reaches the host at the next tick", async () => {
  // One minute is 600 ms: the back-off is 100 ms and up; `*/5` ticks every 3 s.
  await using w = await simWorld("sim-files", { applyDelayMs: 50, minuteMs: 600 });
  const file = (path: string) => [{ path, valueType: "Inline" as const, inline: "{ }" }];
  const spec = (path: string) => ({ configurationSubdir: "clusters/prod", additionalFiles: file(path), ref: PINNED });
  await w.addMachine("m1");
  await w.addMachine("m2");
  await w.addCfg("root", "m1", { ...spec("cluster.nix"), dayTwoSchedule: "*/5 * * * *" });
  await w.addCfg("sub", "m2", spec("clusters/prod/cluster.nix"));
  await w.waitCfg("sub", "Ready", (c) => c.status?.phase === "Ready");
  assert.equal(w.events("apply-failed", "sub").length, 0);
  const failed = await w.happens("root's first attempt failed", () => w.events("apply-failed", "root")[0]);
  assert.match(failed.detail ?? "", /does not provide attribute 'nixosConfigurations\.m1'/);
  assert.match(failed.detail ?? "", /no \.\/cluster\.nix beside flake\.nix in clusters\/prod/);

  // The same commit: no new run; the failing run's retries keep the paths its Pod template was made with.
  const manual = (await w.runs("root")).find((j) => j.metadata.name.endsWith("-manual"))!;
  await w.patchCfg("root", { spec: { additionalFiles: file("clusters/prod/cluster.nix") } });
  await w.until(
    "the NixCronJob re-templated",
    () => w.get<NixCronJob>(NIX_CRON_JOBS, "root-day2"),
    (n) => n.status?.observedGeneration === n.metadata.generation && n.metadata.generation === 2,
  );
  const mark = w.sim.history.length;
  const retry = await w.happens(
    "the next attempt of the same Job",
    () => w.events("apply-started", "root", mark).find((e) => e.detail?.startsWith(`${manual.metadata.name} `)),
  );
  const n = Number(retry.detail!.split(" ").pop());
  const pods = await w.until(
    "its outcome",
    () => w.pods(manual.metadata.name),
    (p) => p.some((x) => attemptOf(x) === n && /Failed|Succeeded/.test(x.status?.phase ?? "")),
  );
  const outcome = pods.find((x) => attemptOf(x) === n)?.status?.phase;
  assert.equal(outcome, "Failed", "a retried attempt runs the Job's template, not the new spec");
  const tick = await w.happens("a scheduled run", () => w.runEvents("root", mark)[0]);
  assert.equal(tick.detail, "scheduled");
  await w.happens(
    "the scheduled run succeeded",
    () => w.sim.history.find((e) => e.kind === "applied" && e.name === "root" && e.detail === tick.name),
  );
});

Deno.test("v1: hooks run while the run's Pod is still running; a throwing hook fails that attempt, which is retried", async () => {
  const calls: string[] = [];
  let failOnce = true;
  const w: SimWorld = await simWorld("sim-hooks", {
    applyDelayMs: 100,
    minuteMs: 600,
    async onBootstrapApplied(cfg, machine) {
      const [job] = await w.runs(cfg.metadata.name);
      const pods = job ? await w.pods(job.metadata.name) : [];
      const live = await w.cfg(cfg.metadata.name);
      calls.push(
        `bootstrap ${cfg.metadata.name} on ${machine.metadata.name}: ${live?.status?.phase}, ${
          pods.map((p) => p.status?.phase).join()
        }`,
      );
    },
    async onApplied(cfg) {
      await Promise.resolve();
      if (cfg.metadata.name === "worker" && failOnce) {
        failOnce = false;
        throw new Error("workload API server did not start");
      }
      calls.push(`applied ${cfg.metadata.name}`);
    },
  });
  await using _ = w;
  await w.addMachine("cp");
  await w.addMachine("w");
  await w.addCfg("first", "cp", { dayTwoSchedule: YEARLY }, { labels: { [BOOTSTRAP_LABEL]: "true" } });
  await w.waitCfg("first", "Ready", (c) => c.status?.phase === "Ready");
  assert.deepEqual(calls, ["bootstrap first on cp: Converging, Running", "applied first"]);

  await w.addCfg("worker", "w", { dayTwoSchedule: YEARLY });
  await w.waitCfg("worker", "Ready after the retry", (c) => c.status?.phase === "Ready");
  const [job] = await w.runs("worker");
  const pods = await w.pods(job!.metadata.name);
  assert.deepEqual(pods.map((p) => p.status?.phase), ["Failed", "Succeeded"]);
  assert.match(
    pods[0]!.status?.containerStatuses?.[0]?.state?.terminated?.message ?? "",
    /apply hook failed: workload API server did not start/,
  );
  assert.deepEqual([job!.status?.failed, job!.status?.succeeded], [1, 1]);
  assert.equal((await w.get<NixCronJob>(NIX_CRON_JOBS, "worker-day2"))?.status?.lastFailedTime, undefined);
  assert.deepEqual(calls, ["bootstrap first on cp: Converging, Running", "applied first", "applied worker"]);
});

Deno.test("v1: a restarted simulator continues mid-run and mid-removal, and runs nothing again", async () => {
  const cp = await env.get();
  const ns = await cp.namespace("sim-restart");
  const o = await simWorld(ns, { applyDelayMs: 60_000 }, cp.client);
  await o.addMachine("m");
  await o.addCfg("web", "m", { dayTwoSchedule: YEARLY });
  const [job] = await o.until("the run", () => o.runs("web"), (j) => j.length > 0);
  await o.until("its Pod running", () => o.pods(job!.metadata.name), (p) => p[0]?.status?.phase === "Running");
  const t0 = Date.now();
  await o[Symbol.asyncDispose]();
  assert.ok(Date.now() - t0 < 5000, "stop() cancels the pending timers");
  assert.equal((await o.cfg("web"))?.status?.phase, "Converging");

  {
    await using second = await simWorld(
      ns,
      { applyDelayMs: 200, removeDelayMs: 60_000, decommissionLeak: false },
      cp.client,
    );
    await second.waitCfg("web", "Ready after the restart", (c) => c.status?.phase === "Ready");
    assert.equal(second.runEvents("web").length, 0, "the run of the first simulator finished; none made anew");
    assert.equal(second.events("apply-started", "web").length, 0, "and no new attempt");
    assert.equal(second.events("applied", "web").length, 1);
    await second.deleteCfg("web");
    await second.waitCfg("web", "Removing", (c) => c.status?.phase === "Removing");
    await second.happens("the removal runs", () => second.events("remove-started", "web")[0]);
  }
  assert.ok((await o.cfg("web"))?.metadata.finalizers?.includes(SIM_FINALIZER), "the finalizer outlives the simulator");
  {
    await using third = await simWorld(ns, { removeDelayMs: 100, decommissionLeak: false }, cp.client);
    await third.until(
      "web gone after the restart",
      async () => (await third.cfg("web")) ? undefined : true,
      () => true,
    );
    assert.equal(third.events("remove-started", "web").length, 0, "the removal already under way was finished");
    assert.equal((await third.machine("m"))?.status?.appliedConfiguration, undefined);
  }
});
