/**
 * The simulated NIO against a real API server: it must behave like NIO per
 * shared/docs/nio-contract.md, since NICO's tests trust it.
 */
import assert from "node:assert/strict";
import type { KubeClient } from "../../lib/kube/client.ts";
import { BOOTSTRAP_LABEL } from "../../core/labels.ts";
import {
  findCondition,
  type Machine,
  MACHINES,
  NIXOS_CONFIGURATIONS,
  type NixosConfiguration,
} from "../../core/nio.ts";
import { startControlPlane } from "../../testing/envtest/controlplane.ts";
import { earliestConfiguration } from "../../testing/sim-nio/status.ts";
import {
  FAIL_APPLY_ANNOTATION,
  fakeRevision,
  NEVER_FINISH_ANNOTATION,
  SIM_FINALIZER,
  simConfiguration,
  simMachine,
  type SimNio,
  type SimNioOptions,
  startSimNio,
  UNDISCOVERABLE_ANNOTATION,
  waitFor,
} from "../../testing/sim-nio.ts";

const RFC3339 = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;
const PINNED = "0123456789abcdef0123456789abcdef01234567";

function objects(client: KubeClient, ns: string) {
  const cfg = (name: string) => client.get<NixosConfiguration>(NIXOS_CONFIGURATIONS, name, ns);
  const machine = (name: string) => client.get<Machine>(MACHINES, name, ns);
  return {
    cfg,
    machine,
    /** Waits until the configuration exists and `check` holds. */
    async waitCfg(name: string, what: string, check: (c: NixosConfiguration) => boolean): Promise<NixosConfiguration> {
      const c = await waitFor(() => cfg(name), (c) => c !== undefined && check(c), { what: `${name}: ${what}` });
      return c!;
    },
    async waitMachine(name: string, what: string, check: (m: Machine) => boolean): Promise<Machine> {
      const m = await waitFor(() => machine(name), (m) => m !== undefined && check(m), { what: `${name}: ${what}` });
      return m!;
    },
    createMachine: (m: Machine) => client.create(MACHINES, m),
    createCfg: (c: NixosConfiguration) => client.create(NIXOS_CONFIGURATIONS, c),
    patchCfg: (name: string, patch: unknown) => client.mergePatch(NIXOS_CONFIGURATIONS, name, ns, patch),
    patchMachine: (name: string, patch: unknown) => client.mergePatch(MACHINES, name, ns, patch),
    deleteCfg: (name: string) => client.delete(NIXOS_CONFIGURATIONS, name, ns),
  };
}

const phase = (p: string) => (c: NixosConfiguration) => c.status?.phase === p;

/**
 * Makes the simulator look at configuration `name` twice (an annotation it
 * does not read) and waits until the second look has begun: one key is
 * never worked on twice at once, so the first look has ended and whatever
 * it would write is written. "Nothing more happens" is read after this.
 */
async function twoLooks(o: ReturnType<typeof objects>, sim: SimNio, name: string): Promise<void> {
  for (let i = 0; i < 2; i++) {
    const before = sim.counters.reconciles;
    await o.patchCfg(name, { metadata: { annotations: { "test.nico.homystack.com/poke": crypto.randomUUID() } } });
    await waitFor(() => sim.counters.reconciles, (n) => n > before, { what: "another look" });
  }
}
const cond = (c: { status?: { conditions?: { type: string; status: string; reason?: string }[] } }, type: string) =>
  findCondition(c.status?.conditions, type);
const events = (sim: SimNio, kind: string, name: string) =>
  sim.history.filter((e) => e.kind === kind && e.name === name);

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

Deno.test("simulated NIO against a real API server", async (t) => {
  await using cp = await startControlPlane();
  const debug = Deno.env.get("SIM_NIO_DEBUG") ? (ns: string) => (l: string) => console.log(`[${ns}] ${l}`) : undefined;
  const start = async (prefix: string, opts: Omit<SimNioOptions, "namespace"> = {}) => {
    const ns = await cp.namespace(prefix);
    const log = debug?.(ns);
    return {
      ns,
      o: objects(cp.client, ns),
      sim: startSimNio(cp.client, { namespace: ns, ...(log ? { log } : {}), ...opts }),
    };
  };

  await t.step("without a namespace it watches every namespace", async () => {
    const [a, b] = [await cp.namespace("all-a"), await cp.namespace("all-b")];
    await using _ = startSimNio(cp.client, { applyDelayMs: 50 });
    await objects(cp.client, a).createMachine(simMachine("m", a));
    await objects(cp.client, b).createMachine(simMachine("m", b));
    await objects(cp.client, b).createCfg(simConfiguration("web", b, "m"));
    await objects(cp.client, a).waitMachine("m", "discoverable", (m) => m.status?.discoverable === true);
    await objects(cp.client, b).waitCfg("web", "Ready", phase("Ready"));
    await objects(cp.client, b).waitMachine("m", "write-back", (m) => m.status?.appliedConfiguration === "web");
  });

  await t.step("Machines become discoverable, in both generations' shapes", async () => {
    {
      const { ns, o, sim } = await start("disc-new");
      await using _ = sim;
      await o.createMachine(simMachine("m1", ns, "newer"));
      await o.createMachine(simMachine("m2", ns, "newer", { [UNDISCOVERABLE_ANNOTATION]: "true" }));
      const m1 = await o.waitMachine("m1", "discoverable", (m) => m.status?.discoverable === true);
      assert.equal(cond(m1, "Discoverable")?.status, "True");
      assert.equal(m1.status?.observedGeneration, 1);
      assert.deepEqual((m1.status as { hardwareFacts?: unknown }).hardwareFacts, { architecture: "x86_64" });
      assert.equal(m1.status?.hasConfiguration, undefined, "newer NIO writes hasConfiguration only after an apply");
      const m2 = await o.waitMachine("m2", "undiscoverable", (m) => m.status?.discoverable === false);
      assert.equal(cond(m2, "Discoverable")?.status, "False");
    }
    {
      const { ns, o, sim } = await start("disc-old", { generation: "older" });
      await using _ = sim;
      await o.createMachine(simMachine("m3", ns, "older"));
      const m3 = await o.waitMachine("m3", "discoverable", (m) => m.status?.discoverable === true);
      assert.equal(m3.status?.hasConfiguration, false, "older NIO writes hasConfiguration: false on creation");
      assert.equal(m3.status?.conditions, undefined);
    }
    {
      const { ns, o, sim } = await start("disc-off", { discoverAll: false });
      await using _ = sim;
      await o.createMachine(simMachine("m4", ns));
      const m4 = await o.waitMachine("m4", "seen", (m) => m.status?.observedGeneration === 1);
      assert.equal(m4.status?.discoverable, undefined, "discoverAll: false leaves discovery to the test");
    }
  });

  await t.step(
    "newer: Converging -> Ready with observedGeneration, Machine write-back, re-apply on spec change",
    async () => {
      const { ns, o, sim } = await start("ready", { applyDelayMs: 1000 });
      await using _ = sim;
      await o.createMachine(simMachine("m", ns));
      await o.waitMachine("m", "discoverable", (m) => m.status?.discoverable === true);
      await o.createCfg(simConfiguration("web", ns, "m"));

      const converging = await o.waitCfg("web", "Converging", phase("Converging"));
      assert.ok(converging.metadata.finalizers?.includes(SIM_FINALIZER));
      assert.equal(converging.status?.observedGeneration, undefined);
      assert.equal(cond(converging, "Ready")?.status, "False");
      assert.equal(cond(converging, "Ready")?.reason, "Converging");
      assert.notEqual(
        (await o.machine("m"))?.status?.hasConfiguration,
        true,
        "nothing is written to the Machine before the apply",
      );

      const ready = await o.waitCfg("web", "Ready", phase("Ready"));
      assert.equal(ready.metadata.generation, 1);
      assert.equal(ready.status?.observedGeneration, 1);
      assert.equal(ready.status?.resolvedRevision, await fakeRevision(ready.spec.gitRepo, "main"));
      assert.match(ready.status?.resolvedRevision ?? "", /^[0-9a-f]{40}$/);
      assert.equal(cond(ready, "Ready")?.status, "True");
      assert.equal(cond(ready, "Stalled"), undefined);
      const m = await o.waitMachine("m", "write-back", (m) => m.status?.hasConfiguration === true);
      assert.equal(m.status?.appliedConfiguration, "web");
      assert.equal(m.status?.appliedCommit, ready.status?.resolvedRevision);
      assert.match(m.status?.lastAppliedTime ?? "", RFC3339);

      await o.patchCfg("web", { spec: { ref: PINNED } });
      const lagging = await o.waitCfg(
        "web",
        "re-applying generation 2",
        (c) => c.metadata.generation === 2 && c.status?.phase === "Converging",
      );
      assert.equal(lagging.status?.observedGeneration, 1, "observedGeneration lags until the new spec is applied");
      const again = await o.waitCfg(
        "web",
        "Ready for generation 2",
        (c) => phase("Ready")(c) && c.status?.observedGeneration === 2,
      );
      assert.equal(again.status?.resolvedRevision, PINNED, "a 40-hex ref is the revision");
      await o.waitMachine("m", "new commit", (m) => m.status?.appliedCommit === PINNED);
      assert.equal(events(sim, "applied", "web").length, 2);

      // Settled: no further writes, even when the simulator looks again.
      const writes = sim.counters.writes;
      await twoLooks(o, sim, "web");
      assert.equal(sim.counters.writes, writes, "the simulator stops writing once everything is applied");
      assert.equal(sim.counters.errors, 0);
    },
  );

  await t.step("newer: fullInstall shows Installing", async () => {
    const { ns, o, sim } = await start("install", { applyDelayMs: 800 });
    await using _ = sim;
    await o.createMachine(simMachine("m", ns));
    await o.createCfg(simConfiguration("fresh", ns, "m", { fullInstall: true }));
    const installing = await o.waitCfg("fresh", "Installing", phase("Installing"));
    assert.equal(cond(installing, "Ready")?.reason, "Installing");
    await o.waitCfg("fresh", "Ready", phase("Ready"));
  });

  await t.step(
    "older: Applied=True, appliedCommit, lastAppliedTime, no phase; nothing written on failure or block",
    async () => {
      const { ns, o, sim } = await start("older", { generation: "older", applyDelayMs: 200 });
      await using _ = sim;
      await o.createMachine(simMachine("m", ns, "older"));
      await o.createMachine(simMachine("m2", ns, "older"));
      await o.createCfg(simConfiguration("web", ns, "m"));
      const applied = await o.waitCfg("web", "Applied", (c) => cond(c, "Applied")?.status === "True");
      assert.equal(cond(applied, "Applied")?.reason, "Success");
      assert.equal(applied.status?.appliedCommit, await fakeRevision(applied.spec.gitRepo, "main"));
      assert.match(applied.status?.lastAppliedTime ?? "", RFC3339);
      assert.equal(applied.status?.phase, undefined);
      assert.equal(applied.status?.observedGeneration, undefined);
      assert.equal(applied.status?.resolvedRevision, undefined);
      assert.ok(applied.metadata.finalizers?.includes(SIM_FINALIZER));
      const m = await o.waitMachine("m", "write-back", (m) => m.status?.appliedConfiguration === "web");
      assert.equal(m.status?.hasConfiguration, true);
      assert.equal(m.status?.appliedCommit, applied.status?.appliedCommit);
      assert.equal(m.status?.lastAppliedTime, applied.status?.lastAppliedTime);

      await o.patchCfg("web", { spec: { ref: PINNED } });
      const reapplied = await o.waitCfg("web", "re-applied", (c) => c.status?.appliedCommit === PINNED);
      assert.equal(cond(reapplied, "Applied")?.status, "True");
      assert.ok(Date.parse(reapplied.status!.lastAppliedTime!) >= Date.parse(applied.status!.lastAppliedTime!));
      await o.waitMachine("m", "new commit", (m) => m.status?.appliedCommit === PINNED);

      await o.createCfg(simConfiguration("broken", ns, "m2", {}, { annotations: { [FAIL_APPLY_ANNOTATION]: "true" } }));
      // creationTimestamp has whole seconds and a tie goes to the lower name, so the
      // newcomer's name must sort after "web": this step often runs within one second.
      await o.createCfg(simConfiguration("web-late", ns, "m"));
      await waitFor(() => events(sim, "apply-failed", "broken").length, (n) => n > 0, {
        what: "the failed apply",
      });
      await waitFor(() => events(sim, "blocked", "web-late").length, (n) => n > 0, {
        what: "the blocked configuration",
      });
      assert.equal(events(sim, "apply-started", "web-late").length, 0, "a blocked configuration never applies");
      assert.equal(events(sim, "blocked", "web").length, 0, "the owner keeps its Machine");
      assert.equal((await o.cfg("broken"))?.status, undefined, "older NIO writes nothing on failure");
      assert.equal((await o.cfg("web-late"))?.status, undefined, "older NIO writes nothing when blocked");
      assert.equal((await o.machine("m2"))?.status?.hasConfiguration, false);
      assert.equal((await o.machine("m"))?.status?.appliedConfiguration, "web");
    },
  );

  await t.step("the earliest configuration for a Machine wins; blocked ones apply once it is free", async () => {
    const { ns, o, sim } = await start("earliest", { applyDelayMs: 100, removeDelayMs: 100 });
    await using _ = sim;
    await o.createMachine(simMachine("m", ns));
    await o.createCfg(simConfiguration("a-first", ns, "m"));
    await o.createCfg(simConfiguration("b-second", ns, "m"));
    const blocked = await o.waitCfg("b-second", "Blocked", phase("Blocked"));
    assert.equal(cond(blocked, "Ready")?.status, "False");
    assert.equal(cond(blocked, "Ready")?.reason, "MachineInUse");
    await o.waitCfg("a-first", "Ready", phase("Ready"));
    await o.waitMachine("m", "owned by a-first", (m) => m.status?.appliedConfiguration === "a-first");
    assert.equal(events(sim, "apply-started", "b-second").length, 0, "a blocked configuration never applies");

    await o.deleteCfg("a-first");
    await waitFor(() => o.cfg("a-first"), (c) => c === undefined, { what: "a-first gone" });
    await o.waitCfg("b-second", "Ready once the Machine is free", phase("Ready"));
    await o.waitMachine(
      "m",
      "owned by b-second",
      (m) => m.status?.appliedConfiguration === "b-second" && m.status.hasConfiguration === true,
    );

    // A missing Machine, then one that cannot be reached.
    await o.createCfg(simConfiguration("orphan", ns, "ghost"));
    const orphan = await o.waitCfg("orphan", "Blocked", phase("Blocked"));
    assert.equal(cond(orphan, "Ready")?.reason, "MachineNotReady");
    await o.createMachine(simMachine("ghost", ns));
    await o.waitCfg("orphan", "Ready once the Machine exists", phase("Ready"));
    await o.patchMachine("ghost", { metadata: { annotations: { [UNDISCOVERABLE_ANNOTATION]: "true" } } });
    const lost = await o.waitCfg("orphan", "Blocked when unreachable", phase("Blocked"));
    assert.equal(cond(lost, "Ready")?.reason, "MachineNotReady");
    assert.equal((await o.machine("ghost"))?.status?.discoverable, false);
    await o.patchMachine("ghost", { metadata: { annotations: { [UNDISCOVERABLE_ANNOTATION]: null } } });
    await o.waitCfg("orphan", "Ready once reachable again", phase("Ready"));
  });

  await t.step(
    "fail-apply gives Degraded/Stalled and recovers when the annotation goes; never-finish stays Converging",
    async () => {
      const { ns, o, sim } = await start("faults", { applyDelayMs: 150 });
      await using _ = sim;
      await o.createMachine(simMachine("m", ns));
      await o.createMachine(simMachine("m2", ns));
      await o.createCfg(simConfiguration("web", ns, "m", {}, { annotations: { [FAIL_APPLY_ANNOTATION]: "true" } }));
      await o.createCfg(simConfiguration("slow", ns, "m2", {}, { annotations: { [NEVER_FINISH_ANNOTATION]: "true" } }));

      const degraded = await o.waitCfg("web", "Degraded", phase("Degraded"));
      assert.equal(cond(degraded, "Stalled")?.status, "True");
      assert.equal(cond(degraded, "Stalled")?.reason, "ApplyFailed");
      assert.equal(cond(degraded, "Ready")?.status, "False");
      assert.equal(degraded.status?.observedGeneration, undefined);
      assert.equal(degraded.status?.resolvedRevision, undefined);
      await o.waitCfg("slow", "Converging", phase("Converging"));

      await twoLooks(o, sim, "web"); // the simulator looks at the failed configuration again, and again
      assert.equal(
        events(sim, "apply-started", "web").length,
        1,
        "a failed apply is not retried while the fault stays",
      );
      assert.equal((await o.cfg("web"))?.status?.phase, "Degraded");
      assert.equal((await o.cfg("slow"))?.status?.phase, "Converging", "never-finish stays Converging");
      assert.notEqual((await o.machine("m"))?.status?.hasConfiguration, true);

      await o.patchCfg("web", { metadata: { annotations: { [FAIL_APPLY_ANNOTATION]: null } } });
      const recovered = await o.waitCfg("web", "Ready after the fault is removed", phase("Ready"));
      assert.equal(cond(recovered, "Stalled"), undefined);
      assert.equal(cond(recovered, "Ready")?.status, "True");
      assert.equal(recovered.status?.observedGeneration, 1);
      await o.waitMachine("m", "write-back", (m) => m.status?.appliedConfiguration === "web");

      await o.patchCfg("slow", { metadata: { annotations: { [NEVER_FINISH_ANNOTATION]: null } } });
      await o.waitCfg("slow", "Ready after never-finish is removed", phase("Ready"));
    },
  );

  await t.step(
    "deletion holds the finalizer while removing, then clears the Machine and lets the object go",
    async () => {
      const { ns, o, sim } = await start("delete", { applyDelayMs: 100, removeDelayMs: 1500 });
      await using _ = sim;
      await o.createMachine(simMachine("m", ns));
      // Discovered first, so the history below has no MachineNotReady block from a fast create.
      await o.waitMachine("m", "discoverable", (m) => m.status?.discoverable === true);
      await o.createCfg(simConfiguration("web", ns, "m"));
      await o.waitCfg("web", "Ready", phase("Ready"));
      await o.waitMachine("m", "write-back", (m) => m.status?.appliedConfiguration === "web");

      await o.deleteCfg("web");
      const removing = await o.waitCfg("web", "Removing", phase("Removing"));
      assert.ok(removing.metadata.deletionTimestamp);
      assert.ok(removing.metadata.finalizers?.includes(SIM_FINALIZER));
      const during = await o.machine("m");
      assert.equal(during?.status?.hasConfiguration, true, "the Machine stays configured while onRemoveFlake runs");
      assert.equal(during?.status?.appliedConfiguration, "web");

      await waitFor(() => o.cfg("web"), (c) => c === undefined, { what: "web gone" });
      const m = await o.machine("m");
      assert.equal(m?.status?.hasConfiguration, false);
      assert.equal(m?.status?.appliedConfiguration, undefined);
      assert.deepEqual(sim.history.filter((e) => e.name === "web").map((e) => e.kind), [
        "apply-started",
        "applied",
        "remove-started",
        "removed",
      ]);
    },
  );

  await t.step("a restarted simulator continues mid-apply and mid-removal, and does not re-apply", async () => {
    const ns = await cp.namespace("restart");
    const o = objects(cp.client, ns);
    const first = startSimNio(cp.client, { namespace: ns, applyDelayMs: 60_000 });
    try {
      await o.createMachine(simMachine("m", ns));
      await o.createCfg(simConfiguration("web", ns, "m"));
      await o.waitCfg("web", "Converging", phase("Converging"));
    } finally {
      const t0 = Date.now();
      await first.stop();
      assert.ok(Date.now() - t0 < 5000, "stop() cancels pending apply timers");
    }
    assert.equal((await o.cfg("web"))?.status?.phase, "Converging");

    {
      await using second = startSimNio(cp.client, { namespace: ns, applyDelayMs: 200, removeDelayMs: 60_000 });
      await o.waitCfg("web", "Ready after the restart", phase("Ready"));
      await o.waitMachine("m", "write-back", (m) => m.status?.appliedConfiguration === "web");
      assert.equal(events(second, "applied", "web").length, 1);
      await o.deleteCfg("web");
      await o.waitCfg("web", "Removing", phase("Removing"));
    }
    assert.ok(
      (await o.cfg("web"))?.metadata.finalizers?.includes(SIM_FINALIZER),
      "the finalizer outlives the simulator",
    );

    {
      await using _third = startSimNio(cp.client, { namespace: ns, removeDelayMs: 100 });
      await waitFor(() => o.cfg("web"), (c) => c === undefined, { what: "web gone after the restart" });
      await o.waitMachine("m", "released", (m) => m.status?.hasConfiguration === false);
    }

    // Older generation: an applied configuration is not applied again by a new simulator.
    await o.createMachine(simMachine("m2", ns, "older"));
    await o.createCfg(simConfiguration("old", ns, "m2"));
    {
      await using _older = startSimNio(cp.client, { namespace: ns, generation: "older", applyDelayMs: 100 });
      await o.waitMachine("m2", "write-back", (m) => m.status?.appliedConfiguration === "old");
    }
    await using again = startSimNio(cp.client, { namespace: ns, generation: "older", applyDelayMs: 100 });
    await waitFor(() => again.counters.reconciles, (n) => n >= 2, { what: "the new simulator's first pass" });
    await twoLooks(o, again, "old");
    assert.equal(
      events(again, "apply-started", "old").length,
      0,
      "older: the applied generation is remembered on the object",
    );
  });

  await t.step("hooks run before NIO reports the apply; a failing hook fails the apply and it is retried", async () => {
    const calls: string[] = [];
    let failOnce = true;
    // The bootstrap hook runs until the test lets it finish (a slow workload API server start).
    let hookRunning!: () => void;
    const running = new Promise<void>((r) => (hookRunning = r));
    let finishHook!: () => void;
    const finished = new Promise<void>((r) => (finishHook = r));
    const { ns, o, sim } = await start("hooks", {
      applyDelayMs: 100,
      async onBootstrapApplied(cfg, machine) {
        const live = await cp.client.get<NixosConfiguration>(
          NIXOS_CONFIGURATIONS,
          cfg.metadata.name,
          cfg.metadata.namespace,
        );
        calls.push(`bootstrap ${cfg.metadata.name} on ${machine.metadata.name} while ${live?.status?.phase}`);
        hookRunning();
        await finished;
      },
      // deno-lint-ignore require-await
      async onApplied(cfg) {
        if (cfg.metadata.name === "worker" && failOnce) {
          failOnce = false;
          throw new Error("workload API server did not start");
        }
        calls.push(`applied ${cfg.metadata.name}`);
      },
    });
    await using _ = sim;
    await o.createMachine(simMachine("cp", ns));
    await o.createMachine(simMachine("w", ns));
    await o.createCfg(simConfiguration("first", ns, "cp", {}, { labels: { [BOOTSTRAP_LABEL]: "true" } }));
    await running;
    const writes = sim.counters.writes;
    assert.equal((await o.cfg("first"))?.status?.phase, "Converging", "not Ready while the hook runs");
    finishHook();
    await o.waitCfg("first", "Ready", phase("Ready"));
    assert.ok(sim.counters.writes > writes, "Ready is written once the hook is done");
    assert.deepEqual(
      calls,
      ["bootstrap first on cp while Converging", "applied first"],
      "hooks finish before Ready is reported",
    );

    await o.createCfg(simConfiguration("worker", ns, "w"));
    const degraded = await o.waitCfg("worker", "Degraded by the hook", phase("Degraded"));
    assert.match(degraded.status?.message ?? "", /workload API server did not start/);
    await o.waitCfg("worker", "Ready on retry", phase("Ready"));
    assert.deepEqual(calls, ["bootstrap first on cp while Converging", "applied first", "applied worker"]);
  });
});
