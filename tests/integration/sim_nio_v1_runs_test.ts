/**
 * The simulated NIO v1's runs against a real API server (shared/docs/nio-contract.md, "How NIO v1 converges a
 * node"): the day-two NixCronJob and its runs, Ready before a host ran anything, scheduled ticks, Kubernetes'
 * back-off and a Job that fails for good. Nothing here sleeps: every wait is on a condition, and every "nothing
 * happened" is bounded by something the simulator did.
 */
import assert from "node:assert/strict";
import { JOBS, NIO_RUN_SELECTOR, NIO_WORKLOAD_KIND_LABEL, NIX_CRON_JOBS } from "../../core/contract/nio.ts";
import { SimClock } from "../../testing/sim-nio/clock.ts";
import {
  FAIL_APPLY_ANNOTATION,
  FAIL_ATTEMPTS_ANNOTATION,
  fakeRevision,
  NEVER_FINISH_ANNOTATION,
  SIM_FINALIZER,
} from "../../testing/sim-nio.ts";
import {
  cond,
  type CronJob,
  CRONJOBS,
  type Job,
  jobDone,
  minuteOf,
  type NixCronJob,
  owners,
  PINNED,
  type Pod,
  readyNode,
  RFC3339,
  type SimWorld,
  simWorld,
  YEARLY,
} from "../sim_nio_api_kit.ts";

Deno.test("v1: the finalizer's full update drops fullInstall: false; observedGeneration comes before any run", async () => {
  await using w = await simWorld("sim-gen", { minuteMs: 60_000 });
  await w.addMachine("m");
  await w.waitMachine("m", "discoverable", (m) => m.status?.discoverable === true);
  await w.addCfg("web", "m", { fullInstall: false }, { annotations: { [NEVER_FINISH_ANNOTATION]: "true" } });
  await w.addCfg("plain", "ghost");

  const web = await w.waitCfg("web", "finalizer", (c) => c.metadata.finalizers?.includes(SIM_FINALIZER) === true);
  assert.equal("fullInstall" in web.spec, false, "Go's omitempty drops fullInstall: false on the full Update");
  assert.equal(web.metadata.generation, 2, "which changes the spec, so the generation moves");
  const plain = await w.waitCfg("plain", "finalizer", (c) => c.metadata.finalizers?.includes(SIM_FINALIZER) === true);
  assert.equal(plain.metadata.generation, 1, "without fullInstall the spec is unchanged");

  // Written at the start of every reconcile: while the run never finishes, and while Blocked.
  const [run] = await w.until("the run", () => w.runs("web"), (jobs) => jobs.length > 0);
  await w.until("its Pod running", () => w.pods(run!.metadata.name), (p) => p[0]?.status?.phase === "Running");
  const converging = await w.waitCfg("web", "observedGeneration 2", (c) => c.status?.observedGeneration === 2);
  assert.equal(converging.status?.phase, "Converging");
  assert.ok(!jobDone((await w.get<Job>(JOBS, run!.metadata.name))!, "Complete"), "nothing has run yet");
  await w.patchCfg("web", { spec: { additionalFiles: [{ path: "extra.nix", valueType: "Inline", inline: "{}" }] } });
  const third = await w.waitCfg("web", "observedGeneration 3", (c) => c.status?.observedGeneration === 3);
  assert.equal(third.metadata.generation, 3);
  assert.equal(w.events("applied", "web").length, 0, "observed, not applied");
  const blocked = await w.waitCfg("plain", "Blocked", (c) => c.status?.phase === "Blocked");
  assert.equal(blocked.status?.observedGeneration, 1, "a Blocked configuration is observed too");
});

/** The day-two NixCronJob `<cfg>-day2` and its batch CronJob, as NIO v1 makes them. */
async function assertDayTwo(w: SimWorld, cfg: string, machine: string) {
  const ncj = await w.get<NixCronJob>(NIX_CRON_JOBS, `${cfg}-day2`);
  assert.ok(ncj, "the NixCronJob is <configuration>-day2");
  assert.deepEqual(owners(ncj), [`NixosConfiguration/${cfg}`]);
  assert.equal(ncj.metadata.labels?.["nio.homystack.com/config"], cfg);
  assert.equal(ncj.metadata.labels?.["nio.homystack.com/machine"], machine);
  const target = `root@${machine}.sim.invalid`;
  assert.deepEqual(ncj.spec?.nix.args, ["switch", "--flake", `.#${machine}`, "--target-host", target]);
  assert.equal(ncj.spec?.nix.source["ref"], "main");
  assert.equal(ncj.spec?.nix.triggerOnChange, true);
  assert.deepEqual(ncj.spec?.cronJobTemplate.schedule, "*/30 * * * *");
  assert.equal(ncj.spec?.cronJobTemplate.concurrencyPolicy, "Forbid");
  const cron = await w.get<CronJob>(CRONJOBS, `${cfg}-day2`);
  assert.deepEqual(cron && owners(cron), [`NixCronJob/${cfg}-day2`]);
  assert.equal(cron?.spec?.schedule, "*/30 * * * *");
  assert.equal(cron?.metadata.labels?.["app.kubernetes.io/managed-by"], "nio");
}

Deno.test("v1: creation makes the day-two NixCronJob, its CronJob and an immediate run; Ready only after it, with the Machine write-back", async () => {
  // NIO's own clock (a minute is a minute): no `*/30` tick comes while this test counts runs.
  await using w = await simWorld("sim-create", { applyDelayMs: 1000, minuteMs: 60_000 });
  await w.addMachine("m");
  await w.waitMachine("m", "discoverable", (m) => m.status?.discoverable === true);
  await w.addCfg("web", "m");

  const running = await w.until("the run's Pod running while web converges", async () => {
    const [job] = await w.runs("web");
    const pods = job ? await w.pods(job.metadata.name) : [];
    const cfg = await w.cfg("web");
    return pods[0]?.status?.phase === "Running" && cfg?.status?.phase === "Converging"
      ? { job: job!, pods }
      : undefined;
  }, () => true);
  assert.equal((await w.machine("m"))?.status?.appliedConfiguration, undefined, "no write-back before the run");

  await assertDayTwo(w, "web", "m");
  const { job, pods } = running;
  assert.match(job.metadata.name, /^web-day2-r-[0-9a-f]{12}-manual$/);
  assert.deepEqual(owners(job), ["NixCronJob/web-day2"]);
  assert.equal(job.metadata.labels?.["nio.homystack.com/workload-name"], "web-day2");
  assert.equal(job.spec?.ttlSecondsAfterFinished, 86_400, "an immediate run stays a day");
  assert.match(job.spec?.template?.metadata?.labels?.["nio.homystack.com/revision"] ?? "", /^r-[0-9a-f]{12}$/);
  assert.deepEqual(owners(pods[0]!), [`Job/${job.metadata.name}`]);
  assert.equal(pods[0]!.metadata.labels?.["batch.kubernetes.io/job-name"], job.metadata.name);

  const ready = await w.waitCfg("web", "Ready", (c) => c.status?.phase === "Ready");
  const done = (await w.get<Job>(JOBS, job.metadata.name))!;
  assert.ok(jobDone(done, "Complete"), "Ready comes after the run completed");
  assert.deepEqual(done.status?.conditions?.map((c) => c.type), ["SuccessCriteriaMet", "Complete"]);
  assert.deepEqual([done.status?.succeeded, done.status?.active], [1, undefined]);
  assert.equal((await w.pods(job.metadata.name))[0]?.status?.phase, "Succeeded");
  assert.equal(ready.status?.lastAppliedTime, done.status?.completionTime);
  assert.equal(ready.status?.resolvedRevision, await fakeRevision(ready.spec.gitRepo, "main"));
  assert.equal(ready.status?.observedGeneration, ready.metadata.generation);
  const extra = ready.status as Record<string, unknown>;
  assert.equal(extra["dayTwoCronJobRef"], "web-day2");
  assert.equal(extra["targetMachine"], "m");
  assert.deepEqual(
    ready.status?.conditions?.map((c) => [c.type, c.status, c.reason]),
    [
      ["Ready", "True", "Succeeded"],
      ["Reconciling", "False", "Succeeded"],
      ["Applied", "True", "ConfigurationApplied"],
      [
        "GitSynced",
        "True",
        "Ready",
      ],
    ],
  );
  const synced = (await w.get<NixCronJob>(NIX_CRON_JOBS, "web-day2"))!;
  assert.deepEqual(synced.status?.conditions?.map((c) => [c.type, c.status, c.reason]), [
    ["Reconciling", "True", "Progressing"],
    ["GitSynced", "True", "Ready"],
    ["Ready", "True", "Ready"],
    ["Progressing", "False", "Ready"],
  ]);
  assert.equal(synced.status?.phase, "Ready");
  assert.equal(cond(ready, "Stalled"), undefined);
  const m = await w.waitMachine("m", "write-back", (m) => m.status?.appliedConfiguration === "web");
  assert.equal(m.status?.hasConfiguration, true);
  assert.equal(m.status?.appliedCommit, ready.status?.resolvedRevision);
  assert.equal(m.status?.lastAppliedTime, ready.status?.lastAppliedTime);
  assert.match(m.status?.lastAppliedTime ?? "", RFC3339);
  assert.deepEqual(w.runEvents("web").map((e) => [e.name, e.detail]), [[job.metadata.name, "immediate"]]);
});

Deno.test("v1: after a new commit, Ready with the new observedGeneration and resolvedRevision while the new run still runs", async () => {
  await using w = await simWorld("sim-lie", { applyDelayMs: 100, minuteMs: 60_000 });
  const first = await readyNode(w, "web", "m");
  const [firstRun] = await w.runs("web");
  await w.patchCfg("web", {
    metadata: { annotations: { [NEVER_FINISH_ANNOTATION]: "true" } },
    spec: { ref: PINNED },
  });
  const lie = await w.waitCfg(
    "web",
    "Ready for the new commit",
    (c) => c.status?.phase === "Ready" && c.status.resolvedRevision === PINNED && c.status.observedGeneration === 2,
  );
  assert.equal(lie.metadata.generation, 2);
  const second = (await w.runs("web")).find((j) => j.metadata.name !== firstRun!.metadata.name);
  assert.ok(second, "the new commit fired a run of its own");
  assert.match(second.metadata.name, /-manual$/);
  const now = (await w.get<Job>(JOBS, second.metadata.name))!;
  assert.ok(!jobDone(now, "Complete") && !jobDone(now, "Failed"), "the new commit's run has not finished");
  // Created Pending, then Running (as a kubelet would report it); it never finishes.
  const [pod] = await w.until(
    "the new run's Pod running",
    () => w.pods(second.metadata.name),
    (p) => p[0]?.status?.phase === "Running",
  );
  assert.equal(pod!.metadata.annotations?.["sim.nio.homystack.com/attempt"], "1", "its first attempt");
  assert.equal(lie.status?.lastAppliedTime, first.status?.lastAppliedTime, "the last success is still the old run");
  const ncj = await w.get<NixCronJob>(NIX_CRON_JOBS, "web-day2");
  assert.equal(ncj?.status?.rolledOutRevision, PINNED, "rolled out before it ran");
  assert.equal(ncj?.status?.activeJobs, undefined, "activeJobs lists only runs the CronJob scheduled, not this one");
  await w.waitMachine("m", "the Machine names the new commit", (m) => m.status?.appliedCommit === PINNED);
  assert.equal(w.events("applied", "web").length, 1, "only the first run ever finished");
});

Deno.test("v1: a change that keeps the commit runs at the next scheduled tick; `* * * * *` runs within a minute, on that node only", async () => {
  // One minute of NIO's time is 200 ms: `*/30` ticks every 6 s.
  await using w = await simWorld("sim-tick", { applyDelayMs: 100, minuteMs: 200 });
  await readyNode(w, "web", "m", { ref: PINNED });
  await readyNode(w, "other", "m2", { ref: PINNED });

  let mark = w.sim.history.length;
  await w.patchCfg("web", { spec: { additionalFiles: [{ path: "extra.nix", valueType: "Inline", inline: "{}" }] } });
  await w.waitCfg(
    "web",
    "the change observed",
    (c) => c.status?.observedGeneration === 2 && c.status.phase === "Ready",
  );
  const run = await w.happens("the next run after the change", () => w.runEvents("web", mark)[0]);
  assert.equal(run.detail, "scheduled", "the same commit fires no immediate run");
  const tick = (await w.get<Job>(JOBS, run.name))!;
  assert.deepEqual(owners(tick), ["CronJob/web-day2"]);
  assert.equal(tick.spec?.ttlSecondsAfterFinished, undefined, "a scheduled run has no TTL");
  assert.equal(tick.metadata.labels?.["nio.homystack.com/workload-name"], "web-day2", "its Pod template's labels");
  assert.equal(tick.metadata.labels?.["job-name"], run.name);
  assert.equal(
    `${NIO_WORKLOAD_KIND_LABEL}=${tick.metadata.labels?.[NIO_WORKLOAD_KIND_LABEL]}`,
    NIO_RUN_SELECTOR,
    "NICO's run informer selects it",
  );
  assert.equal(minuteOf(tick) % 30, 0, "it came at a tick of */30");
  await w.until(
    "the other node's run at the same tick",
    () => w.runs("other"),
    (jobs) => jobs.some((j) => j.metadata.name === `other-day2-${minuteOf(tick)}`),
  );
  await w.happens("the scheduled run done", () => w.events("applied", "web", mark)[0]);

  mark = w.sim.history.length;
  await w.patchCfg("web", { spec: { dayTwoSchedule: "* * * * *" } });
  const soon = await w.happens("a run at the next minute", () => w.runEvents("web", mark)[0]);
  assert.equal(soon.detail, "scheduled");
  const every = (await w.get<Job>(JOBS, soon.name))!;
  assert.ok(minuteOf(every) - minuteOf(tick) < 30, "before the next */30 tick");
  assert.notEqual(minuteOf(every) % 30, 0, "at a minute boundary, not a */30 tick");
  for (const e of w.runEvents("other").filter((e) => e.detail === "scheduled")) {
    assert.equal(Number(e.name.split("-").pop()) % 30, 0, `the other node ran only on */30: ${e.name}`);
  }
  assert.equal(w.runEvents("web").filter((e) => e.detail === "immediate").length, 1, "one immediate run: creation");
});

Deno.test("v1: with fail-attempts the first attempts fail, each a failed Pod, after Kubernetes' back-off; then the run completes", async () => {
  // One minute is 600 ms: the back-off of 10 s and 20 s is 100 ms and 200 ms.
  await using w = await simWorld("sim-attempts", { applyDelayMs: 100, minuteMs: 600 });
  const clock = new SimClock(600);
  await w.addMachine("m");
  await w.addCfg("web", "m", { dayTwoSchedule: YEARLY }, { annotations: { [FAIL_ATTEMPTS_ANNOTATION]: "2" } });
  await w.waitCfg("web", "Ready", (c) => c.status?.phase === "Ready");
  const [job] = await w.runs("web");
  assert.ok(job && jobDone(job, "Complete"));
  assert.equal(cond(job, "Failed"), undefined);
  assert.deepEqual([job.status?.failed, job.status?.succeeded], [2, 1]);
  const pods = await w.pods(job.metadata.name);
  assert.deepEqual(pods.map((p) => p.status?.phase), ["Failed", "Failed", "Succeeded"], "one Pod per attempt");
  assert.match(pods[0]!.status?.containerStatuses?.[0]?.state?.terminated?.message ?? "", /attempt 1/);
  assert.equal(pods[2]!.status?.containerStatuses?.[0]?.state?.terminated?.exitCode, 0);
  const at = (p: Pod, what: "started" | "ended") =>
    Number(p.metadata.annotations?.[`sim.nio.homystack.com/${what}-ms`]);
  for (const [i, backoff] of [[1, 10_000], [2, 20_000]] as const) {
    const waited = at(pods[i]!, "started") - at(pods[i - 1]!, "ended");
    assert.ok(waited >= clock.real(backoff), `attempt ${i + 1} waited ${waited} ms, at least ${clock.real(backoff)}`);
  }
  const ncj = await w.get<NixCronJob>(NIX_CRON_JOBS, "web-day2");
  assert.equal(ncj?.status?.lastFailedTime, undefined, "failed attempts are no failed run");
  assert.deepEqual(w.events("apply-failed", "web").length, 2);
});

Deno.test("v1: with fail-apply seven attempts fail; only then is the Job Failed and the configuration Degraded and Stalled", async () => {
  // One minute is 120 ms: the 630 s of back-off between seven attempts take 1.3 s.
  await using w = await simWorld("sim-degraded", { applyDelayMs: 50, minuteMs: 120 });
  await w.addMachine("m");
  await w.addCfg("web", "m", {}, { annotations: { [FAIL_APPLY_ANNOTATION]: "true" } });
  const runs = await w.until("the run", () => w.runs("web"), (j) => j.some((x) => x.metadata.name.endsWith("-manual")));
  const name = runs.find((x) => x.metadata.name.endsWith("-manual"))!.metadata.name;
  await w.until(
    "six failed attempts",
    () => w.pods(name),
    (p) => p.filter((x) => x.status?.phase === "Failed").length >= 6,
  );
  assert.equal(cond(await w.get<Job>(JOBS, name), "Failed"), undefined, "six failed attempts do not fail the Job");
  assert.equal((await w.cfg("web"))?.status?.phase, "Converging");

  const degraded = await w.waitCfg("web", "Degraded", (c) => c.status?.phase === "Degraded");
  const job = (await w.get<Job>(JOBS, name))!;
  assert.equal(cond(job, "Failed")?.reason, "BackoffLimitExceeded");
  assert.equal(job.status?.failed, 7);
  const pods = await w.pods(name);
  assert.deepEqual(pods.map((p) => p.status?.phase), Array(7).fill("Failed"));
  assert.equal(w.events("apply-started", "web").filter((e) => e.detail?.startsWith(`${name} `)).length, 7);
  assert.deepEqual(
    ["Ready", "Stalled", "Reconciling", "Applied"].map((
      t,
    ) => [t, cond(degraded, t)?.status, cond(degraded, t)?.reason]),
    [["Ready", "False", "ApplyFailed"], ["Stalled", "True", "ApplyFailed"], ["Reconciling", "False", "ApplyFailed"], [
      "Applied",
      "False",
      "Waiting",
    ]],
  );
  assert.equal(degraded.status?.observedGeneration, degraded.metadata.generation);
  assert.equal((await w.machine("m"))?.status?.appliedConfiguration, undefined);
  const ncj = await w.get<NixCronJob>(NIX_CRON_JOBS, "web-day2");
  assert.equal(ncj?.status?.phase, "Degraded");
  assert.equal(cond(ncj, "Ready")?.reason, "RunFailed");
});
