/**
 * The simulated NIO against a real API server, fact by fact from
 * shared/docs/nio-contract.md ("How NIO v1 converges a node", "Status, as NIO
 * reports it") and NIO v1's source: NICO's tests trust it, so it must do what
 * NIO v1 and the older NIO do, including where NIO v1's status says more
 * than the host did. Nothing here sleeps: every wait is on a condition, and
 * every "nothing happened" is bounded by something the simulator did.
 */
import assert from "node:assert/strict";
import type { KubeClient } from "../../lib/kube/client.ts";
import type { KubeObject } from "../../lib/kube/types.ts";
import { PODS, type Resource, resource } from "../../lib/kube/resources.ts";
import { BOOTSTRAP_LABEL } from "../../core/contract/labels.ts";
import {
  findCondition,
  JOBS,
  type Machine,
  MACHINES,
  NIX_CRON_JOBS,
  NIX_JOBS,
  NIXOS_CONFIGURATIONS,
  type NixosConfiguration,
  type NixosConfigurationSpec,
} from "../../core/contract/nio.ts";
import { ownControlPlane, sharedControlPlane } from "../../testing/helpers.ts";
import { earliestConfiguration } from "../../testing/sim-nio/status.ts";
import { SimClock } from "../../testing/sim-nio/clock.ts";
import {
  FAIL_APPLY_ANNOTATION,
  FAIL_ATTEMPTS_ANNOTATION,
  fakeRevision,
  NEVER_FINISH_ANNOTATION,
  SIM_FINALIZER,
  simConfiguration,
  simMachine,
  type SimNioOptions,
  startSimNio,
  UNDISCOVERABLE_ANNOTATION,
  waitFor,
} from "../../testing/sim-nio.ts";

const env = sharedControlPlane();
const CRONJOBS = resource("batch", "v1", "CronJob", "cronjobs");
const RFC3339 = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;
const PINNED = "0123456789abcdef0123456789abcdef01234567";
const DEBUG = Deno.env.get("SIM_NIO_DEBUG") !== undefined;
/** Once a year of NIO's time: where counting runs, no scheduled run may come in between. */
const YEARLY = "0 0 1 1 *";

interface Cond {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
}
type Conditioned = { status?: { conditions?: Cond[] } };
type Job = KubeObject & {
  spec?: { ttlSecondsAfterFinished?: number; template?: { metadata?: { labels?: Record<string, string> } } };
  status?: { active?: number; failed?: number; succeeded?: number; completionTime?: string; conditions?: Cond[] };
};
type Pod = KubeObject & {
  status?: {
    phase?: string;
    containerStatuses?: { state?: { terminated?: { exitCode: number; message?: string } } }[];
  };
};
type NixCronJob = KubeObject & {
  spec?: {
    nix: { suspend?: boolean; source: Record<string, string>; args: string[]; triggerOnChange?: boolean };
    cronJobTemplate: { schedule: string; concurrencyPolicy?: string };
  };
  status?: {
    phase?: string;
    observedGeneration?: number;
    activeJobs?: string[];
    lastFailedTime?: string;
    rolledOutRevision?: string;
    conditions?: Cond[];
  };
};
type CronJob = KubeObject & { spec?: { schedule: string; suspend?: boolean; concurrencyPolicy?: string } };
type NixJob = KubeObject & {
  spec?: { nix: { args: string[] }; jobTemplate?: { ttlSecondsAfterFinished?: number } };
};

const cond = (o: Conditioned | undefined, type: string) => findCondition(o?.status?.conditions, type);
const jobDone = (j: Job, type: "Complete" | "Failed") => cond(j, type)?.status === "True";
const owners = (o: KubeObject) => (o.metadata.ownerReferences ?? []).map((r) => `${r.kind}/${r.name}`);
const attemptOf = (p: Pod) => Number(p.metadata.annotations?.["sim.nio.homystack.com/attempt"]);
const minuteOf = (job: Job) => Number(job.metadata.name.split("-").pop());

/** A namespace on the shared control plane with a simulator watching it, and ways to look at it. */
async function world(prefix: string, opts: Omit<SimNioOptions, "namespace"> = {}, client?: KubeClient) {
  const cp = client ? undefined : await env.get();
  const kube = client ?? cp!.client;
  const ns = cp ? await cp.namespace(prefix) : prefix;
  const log = DEBUG ? (l: string) => console.log(`[${ns}] ${l}`) : undefined;
  // A control plane just started answers 429 while its watch cache fills: the simulator retries, as NIO would.
  const errors: string[] = [];
  const onError = (err: unknown, what: string) => {
    const line = `${what}: ${(err as Error).message ?? err}`;
    if (!/ 429 /.test(line)) errors.push(line);
  };
  const sim = startSimNio(kube, { namespace: ns, ...(log ? { log } : {}), onError, ...opts });
  const get = <T extends KubeObject>(r: Resource, name: string) => kube.get<T>(r, name, ns);
  const list = async <T extends KubeObject>(r: Resource, labelSelector?: string) =>
    (await kube.list<T>(r, { namespace: ns, ...(labelSelector ? { labelSelector } : {}) })).items;
  const w = {
    ns,
    kube,
    sim,
    get,
    list,
    cfg: (name: string) => get<NixosConfiguration>(NIXOS_CONFIGURATIONS, name),
    machine: (name: string) => get<Machine>(MACHINES, name),
    /** Reads until `check` holds of a defined reading, and answers it. */
    async until<T>(
      what: string,
      read: () => T | undefined | Promise<T | undefined>,
      check: (v: T) => boolean,
      timeoutMs = 20_000,
    ) {
      return (await waitFor(read, (v) => v !== undefined && check(v), { what, timeoutMs }))!;
    },
    /** Waits until the simulator did something (`find` answers it from the history). */
    happens: <T>(what: string, find: () => T | undefined) => w.until(what, find, () => true),
    waitCfg: (name: string, what: string, check: (c: NixosConfiguration) => boolean, timeoutMs?: number) =>
      w.until(`${name}: ${what}`, () => w.cfg(name), check, timeoutMs),
    waitMachine: (name: string, what: string, check: (m: Machine) => boolean) =>
      w.until(`${name}: ${what}`, () => w.machine(name), check),
    addMachine: (name: string, annotations?: Record<string, string>) =>
      kube.create(MACHINES, simMachine(name, ns, opts.generation ?? "v1", annotations)),
    addCfg: (
      name: string,
      machine: string,
      spec: Partial<NixosConfigurationSpec> = {},
      meta: Parameters<typeof simConfiguration>[4] = {},
    ) => kube.create<NixosConfiguration>(NIXOS_CONFIGURATIONS, simConfiguration(name, ns, machine, spec, meta)),
    patchCfg: (name: string, patch: unknown) => kube.mergePatch(NIXOS_CONFIGURATIONS, name, ns, patch),
    patchMachine: (name: string, patch: unknown) => kube.mergePatch(MACHINES, name, ns, patch),
    deleteCfg: (name: string) => kube.delete(NIXOS_CONFIGURATIONS, name, ns),
    /** The run Jobs of a configuration's day-two NixCronJob (its own and its CronJob's), oldest first. */
    runs: async (cfg: string) =>
      (await list<Job>(JOBS)).filter((j) => j.metadata.ownerReferences?.some((o) => o.name === `${cfg}-day2`))
        .sort((a, b) => (a.metadata.creationTimestamp ?? "").localeCompare(b.metadata.creationTimestamp ?? "")),
    /** A Job's Pods, by attempt. */
    pods: async (job: string) => (await list<Pod>(PODS, `job-name=${job}`)).sort((a, b) => attemptOf(a) - attemptOf(b)),
    events: (kind: string, name: string, since = 0) =>
      sim.history.slice(since).filter((e) => e.kind === kind && e.name === name),
    /** The runs the simulator created for a configuration's day two (named after their Jobs). */
    runEvents: (cfg: string, since = 0) =>
      sim.history.slice(since).filter((e) => e.kind === "run-created" && e.name.startsWith(`${cfg}-day2-`)),
    async [Symbol.asyncDispose]() {
      await sim.stop();
      assert.deepEqual(errors, [], "the simulator met no unexpected error");
    },
  };
  return w;
}
type World = Awaited<ReturnType<typeof world>>;

/** A Machine the simulator found reachable, and a configuration for it that NIO v1 reports Ready. */
async function readyNode(w: World, cfg: string, machine: string, spec: Partial<NixosConfigurationSpec> = {}) {
  await w.addMachine(machine);
  await w.waitMachine(machine, "discoverable", (m) => m.status?.discoverable === true);
  await w.addCfg(cfg, machine, spec);
  return await w.waitCfg(cfg, "Ready", (c) => c.status?.phase === "Ready");
}

Deno.test("the owner of a Machine is the earliest-created configuration, then the lowest name, ignoring deleting ones", () => {
  const at = (name: string, creationTimestamp: string, deletionTimestamp?: string): NixosConfiguration => {
    const cfg = simConfiguration(name, "ns", "m");
    cfg.metadata = { ...cfg.metadata, creationTimestamp, ...(deletionTimestamp ? { deletionTimestamp } : {}) };
    return cfg;
  };
  const cases: [string, NixosConfiguration[], string | undefined][] = [
    ["older wins", [at("b", "2026-01-01T00:00:01Z"), at("a", "2026-01-01T00:00:02Z")], "b"],
    ["same second: lower name wins", [at("b", "2026-01-01T00:00:01Z"), at("a", "2026-01-01T00:00:01Z")], "a"],
    ["a deleting one does not count", [
      at("a", "2026-01-01T00:00:01Z", "2026-01-01T00:01:00Z"),
      at("b", "2026-01-01T00:00:02Z"),
    ], "b"],
    ["none left", [at("a", "2026-01-01T00:00:01Z", "2026-01-01T00:01:00Z")], undefined],
  ];
  for (const [what, cfgs, want] of cases) assert.equal(earliestConfiguration(cfgs)?.metadata.name, want, what);
});

Deno.test("the resolved revision is the pinned ref, else a stable fake commit", async () => {
  assert.equal(await fakeRevision("https://x/y.git", PINNED.toUpperCase()), PINNED);
  const a = await fakeRevision("https://x/y.git", "main");
  assert.match(a, /^[0-9a-f]{40}$/);
  assert.equal(await fakeRevision("https://x/y.git", "main"), a);
  assert.notEqual(await fakeRevision("https://x/y.git", "dev"), a);
  assert.notEqual(await fakeRevision("https://x/z.git", "main"), a);
});

Deno.test("v1: the finalizer's full update drops fullInstall: false; observedGeneration comes before any run", async () => {
  await using w = await world("sim-gen", { minuteMs: 60_000 });
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
async function assertDayTwo(w: World, cfg: string, machine: string) {
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
  await using w = await world("sim-create", { applyDelayMs: 1000, minuteMs: 60_000 });
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
  await using w = await world("sim-lie", { applyDelayMs: 100, minuteMs: 60_000 });
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
  await using w = await world("sim-tick", { applyDelayMs: 100, minuteMs: 200 });
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
  await using w = await world("sim-attempts", { applyDelayMs: 100, minuteMs: 600 });
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
  await using w = await world("sim-degraded", { applyDelayMs: 50, minuteMs: 120 });
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

Deno.test("v1: an unreachable Machine blocks its configuration (Stalled) and suspends the NixCronJob, whose CronJob still runs", async () => {
  // One minute is 100 ms: `*/30` ticks every 3 s.
  await using w = await world("sim-unreachable", { applyDelayMs: 50, minuteMs: 100 });
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
  await using w = await world("sim-earliest", { applyDelayMs: 50, removeDelayMs: 50, decommissionLeak: false });
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
  await using w = await world("sim-delete", { applyDelayMs: 50, removeDelayMs: 300, minuteMs: 60 });
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
  await using w = await world("sim-files", { applyDelayMs: 50, minuteMs: 600 });
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
  const w: World = await world("sim-hooks", {
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
  const o = await world(ns, { applyDelayMs: 60_000 }, cp.client);
  await o.addMachine("m");
  await o.addCfg("web", "m", { dayTwoSchedule: YEARLY });
  const [job] = await o.until("the run", () => o.runs("web"), (j) => j.length > 0);
  await o.until("its Pod running", () => o.pods(job!.metadata.name), (p) => p[0]?.status?.phase === "Running");
  const t0 = Date.now();
  await o[Symbol.asyncDispose]();
  assert.ok(Date.now() - t0 < 5000, "stop() cancels the pending timers");
  assert.equal((await o.cfg("web"))?.status?.phase, "Converging");

  {
    await using second = await world(
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
    await using third = await world(ns, { removeDelayMs: 100, decommissionLeak: false }, cp.client);
    await third.until(
      "web gone after the restart",
      async () => (await third.cfg("web")) ? undefined : true,
      () => true,
    );
    assert.equal(third.events("remove-started", "web").length, 0, "the removal already under way was finished");
    assert.equal((await third.machine("m"))?.status?.appliedConfiguration, undefined);
  }
});

Deno.test("v1: Machines get NIO v1's status: reachable, credentials, and a rewrite twice per probe", async () => {
  await using w = await world("sim-machines", { machineProbeMs: 100 });
  await w.addMachine("m");
  await w.addMachine("far", { [UNDISCOVERABLE_ANNOTATION]: "true" });
  await w.kube.create(MACHINES, { metadata: { name: "nokey", namespace: w.ns }, spec: { host: "nokey.sim.invalid" } });
  const m = await w.waitMachine("m", "discoverable", (m) => m.status?.discoverable === true);
  assert.deepEqual(
    ["Discoverable", "Ready"].map((t) => [t, cond(m, t)?.status, cond(m, t)?.reason]),
    [["Discoverable", "True", "SSHConnected"], ["Ready", "True", "SSHConnected"]],
  );
  assert.equal(m.status?.observedGeneration, 1);
  assert.deepEqual((m.status as { hardwareFacts?: unknown }).hardwareFacts, { architecture: "x86_64" });
  assert.equal(m.status?.hasConfiguration, undefined, "written only after an apply");
  const far = await w.waitMachine("far", "probed", (m) => cond(m, "Discoverable") !== undefined);
  assert.equal(far.status?.discoverable, undefined, "false is omitted");
  assert.equal(cond(far, "Discoverable")?.reason, "SSHFailed");
  const nokey = await w.waitMachine("nokey", "probed", (m) => cond(m, "Discoverable") !== undefined);
  assert.equal(cond(nokey, "Discoverable")?.reason, "CredentialsMissing", "no SSH key or password: never reachable");

  // Each probe writes twice (Reconciling True, then False), though nothing else changes.
  const seen: string[] = [];
  const since = new Set<string>();
  const abort = new AbortController();
  const deadline = setTimeout(() => abort.abort(), 20_000);
  try {
    for await (
      const ev of w.kube.watch<Machine>(MACHINES, {
        namespace: w.ns,
        fieldSelector: "metadata.name=m",
        resourceVersion: m.metadata.resourceVersion!,
        signal: abort.signal,
      })
    ) {
      if (ev.type !== "MODIFIED") continue;
      seen.push(`${cond(ev.object, "Reconciling")?.status}`);
      since.add(cond(ev.object, "Discoverable")?.lastTransitionTime ?? "");
      if (seen.length >= 6) break;
    }
  } finally {
    clearTimeout(deadline);
  }
  assert.equal(seen.length, 6, "three probes seen");
  assert.ok(seen.every((s, i) => i === 0 || s !== seen[i - 1]), `Reconciling flips on every write: ${seen}`);
  assert.deepEqual([...since], [cond(m, "Discoverable")?.lastTransitionTime], "reachability did not change");
});

Deno.test("without a namespace the simulator watches every namespace", async () => {
  const cp = await ownControlPlane({}).get();
  const [a, b] = [await cp.namespace("all-a"), await cp.namespace("all-b")];
  await using _ = startSimNio(cp.client, { applyDelayMs: 50 });
  await cp.client.create(MACHINES, simMachine("m", a));
  await cp.client.create(MACHINES, simMachine("m", b));
  await cp.client.create(NIXOS_CONFIGURATIONS, simConfiguration("web", b, "m"));
  await waitFor(() => cp.client.get<Machine>(MACHINES, "m", a), (m) => m?.status?.discoverable === true);
  await waitFor(() => cp.client.get<Machine>(MACHINES, "m", b), (m) => m?.status?.appliedConfiguration === "web");
});

Deno.test("older: Applied=True with appliedCommit and lastAppliedTime, no phase; nothing written on failure or block", async () => {
  await using w = await world("sim-older", { generation: "older", applyDelayMs: 100 });
  await w.addMachine("m");
  await w.addMachine("m2");
  const m3 = await w.waitMachine("m2", "discoverable", (m) => m.status?.discoverable === true);
  assert.equal(m3.status?.hasConfiguration, false, "older NIO writes hasConfiguration: false on sight");
  assert.equal(m3.status?.conditions, undefined);
  await w.addCfg("web", "m");
  const applied = await w.waitCfg("web", "Applied", (c) => cond(c, "Applied")?.status === "True");
  assert.equal(cond(applied, "Applied")?.reason, "Success");
  assert.equal(applied.status?.appliedCommit, await fakeRevision(applied.spec.gitRepo, "main"));
  assert.match(applied.status?.lastAppliedTime ?? "", RFC3339);
  assert.deepEqual(
    [applied.status?.phase, applied.status?.observedGeneration, applied.status?.resolvedRevision],
    [undefined, undefined, undefined],
  );
  assert.ok(applied.metadata.finalizers?.includes(SIM_FINALIZER));
  const m = await w.waitMachine("m", "write-back", (m) => m.status?.appliedConfiguration === "web");
  assert.equal(m.status?.hasConfiguration, true);
  assert.equal(m.status?.appliedCommit, applied.status?.appliedCommit);
  assert.equal(m.status?.lastAppliedTime, applied.status?.lastAppliedTime);

  await w.patchCfg("web", { spec: { ref: PINNED } });
  const again = await w.waitCfg("web", "re-applied", (c) => c.status?.appliedCommit === PINNED);
  assert.ok(Date.parse(again.status!.lastAppliedTime!) >= Date.parse(applied.status!.lastAppliedTime!));
  await w.waitMachine("m", "the new commit", (m) => m.status?.appliedCommit === PINNED);

  await w.addCfg("broken", "m2", {}, { annotations: { [FAIL_APPLY_ANNOTATION]: "true" } });
  // A tie of creationTimestamp goes to the lower name: the newcomer sorts after "web".
  await w.addCfg("web-late", "m");
  await w.happens("the failed apply", () => w.events("apply-failed", "broken")[0]);
  await w.happens("the blocked configuration", () => w.events("blocked", "web-late")[0]);
  assert.equal(w.events("apply-started", "web-late").length, 0, "a blocked configuration never applies");
  assert.equal(w.events("blocked", "web").length, 0, "the owner keeps its Machine");
  assert.equal((await w.cfg("broken"))?.status, undefined, "older NIO writes nothing on failure");
  assert.equal((await w.cfg("web-late"))?.status, undefined, "older NIO writes nothing when blocked");
  assert.equal((await w.machine("m2"))?.status?.hasConfiguration, false);
  assert.equal((await w.machine("m"))?.status?.appliedConfiguration, "web");

  await w.deleteCfg("web-late");
  await w.until("web-late gone", async () => (await w.cfg("web-late")) ? undefined : true, () => true);
  await w.deleteCfg("web");
  await w.until("web gone", async () => (await w.cfg("web")) ? undefined : true, () => true);
  const released = (await w.machine("m"))!;
  assert.equal(released.status?.hasConfiguration, false, "older NIO writes hasConfiguration: false on release");
  assert.equal(released.status?.appliedConfiguration, undefined);
  assert.deepEqual(w.sim.history.filter((e) => e.name === "web").map((e) => e.kind), [
    "apply-started",
    "applied",
    "apply-started",
    "applied",
    "remove-started",
    "removed",
  ]);
});

Deno.test("older: a restarted simulator remembers the applied generation and applies nothing again", async () => {
  const cp = await env.get();
  const ns = await cp.namespace("sim-older-restart");
  {
    await using first = await world(ns, { generation: "older", applyDelayMs: 100 }, cp.client);
    await first.addMachine("m");
    await first.addCfg("old", "m");
    await first.waitMachine("m", "write-back", (m) => m.status?.appliedConfiguration === "old");
  }
  await using again = await world(ns, { generation: "older", applyDelayMs: 100 }, cp.client);
  // Made after the restart, so queued after "old": once it is applied, "old" has been reconciled.
  await again.addMachine("probe");
  await again.addCfg("later", "probe");
  await again.happens("the later configuration applied", () => again.events("applied", "later")[0]);
  assert.equal(again.events("apply-started", "old").length, 0, "the applied generation is remembered on the object");
});
