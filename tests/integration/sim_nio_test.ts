/**
 * The simulated NIO against a real API server, fact by fact from
 * shared/docs/nio-contract.md ("How NIO v1 converges a node", "Status, as NIO
 * reports it") and NIO v1's source: NICO's tests trust it, so it must do what
 * NIO v1 and the older NIO do, including where NIO v1's status says more
 * than the host did. This file: ownership, revisions, Machines, the older NIO; the v1 runs and nodes are in
 * sim_nio_v1_runs_test.ts and sim_nio_v1_nodes_test.ts. Nothing here sleeps: every wait is on a condition, and
 * every "nothing happened" is bounded by something the simulator did.
 */
import assert from "node:assert/strict";
import { type Machine, MACHINES, NIXOS_CONFIGURATIONS, type NixosConfiguration } from "../../core/contract/nio.ts";
import { ownControlPlane } from "../../testing/helpers.ts";
import { earliestConfiguration } from "../../testing/sim-nio/status.ts";
import {
  FAIL_APPLY_ANNOTATION,
  fakeRevision,
  SIM_FINALIZER,
  simConfiguration,
  simMachine,
  startSimNio,
  UNDISCOVERABLE_ANNOTATION,
  waitFor,
} from "../../testing/sim-nio.ts";
import { cond, env, PINNED, RFC3339, simWorld } from "../sim_nio_api_kit.ts";

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

Deno.test("v1: Machines get NIO v1's status: reachable, credentials, and a rewrite twice per probe", async () => {
  await using w = await simWorld("sim-machines", { machineProbeMs: 100 });
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
  await using w = await simWorld("sim-older", { generation: "older", applyDelayMs: 100 });
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
    await using first = await simWorld(ns, { generation: "older", applyDelayMs: 100 }, cp.client);
    await first.addMachine("m");
    await first.addCfg("old", "m");
    await first.waitMachine("m", "write-back", (m) => m.status?.appliedConfiguration === "old");
  }
  await using again = await simWorld(ns, { generation: "older", applyDelayMs: 100 }, cp.client);
  // Made after the restart, so queued after "old": once it is applied, "old" has been reconciled.
  await again.addMachine("probe");
  await again.addCfg("later", "probe");
  await again.happens("the later configuration applied", () => again.events("applied", "later")[0]);
  assert.equal(again.events("apply-started", "old").length, 0, "the applied generation is remembered on the object");
});
