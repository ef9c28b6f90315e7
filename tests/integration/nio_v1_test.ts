/**
 * NICO on NIO v1 as NIO v1's source behaves (testing/sim-nio/v1/): its
 * `Ready` comes before a host ran anything, a change that keeps the commit
 * runs only at a scheduled tick, files land at the checkout's root, a failing
 * switch is retried seven times, and a removal can run twice. What the hosts
 * did is read from the simulator's record (testing/switches.ts), never from
 * NIO's status.
 */
import assert from "node:assert/strict";
import { KUBERNETES_CLUSTERS, type KubernetesCluster } from "../../crds/kubernetescluster.ts";
import { CLUSTER_LABEL } from "../../core/contract/labels.ts";
import {
  type Machine,
  MACHINES,
  NIX_JOBS,
  NIXOS_CONFIGURATIONS,
  type NixosConfiguration,
} from "../../core/contract/nio.ts";
import type { KubeClient } from "../../lib/kube/client.ts";
import { eventually } from "../../testing/helpers.ts";
import { createMachines, machinesDiscovered } from "../../testing/nico.ts";
import { FAIL_APPLY_ANNOTATION, type SimNioOptions, UNDISCOVERABLE_ANNOTATION } from "../../testing/sim-nio.ts";
import { extend, world } from "../../testing/world.ts";
import { changingSwitches, maxConcurrent, switchOrder, switchWindows } from "../../testing/switches.ts";
import { RUN_SOON_SCHEDULE, sameSchedule } from "../../core/nodes/runs.ts";

const REPO = "https://git.example.test/flake.git";
const NODES = ["cp-1", "cp-2", "cp-3", "w-1", "w-2"];

const cond = (c: KubernetesCluster | undefined, type: string) => c?.status?.conditions?.find((x) => x.type === type);

/** A world on NIO v1 with the five Machines discovered; `configs()` lists its configurations. */
async function v1World(prefix: string, sim: Omit<SimNioOptions, "namespace" | "generation"> = {}) {
  // A scheduled run every 30 minutes of NIO's time: with a minute of 100 ms, every 3 s.
  const w = await world(prefix, { nio: { applyDelayMs: 300, jitterMs: 400, minuteMs: 100, ...sim } });
  return await extend(w, async () => {
    await createMachines(w.client, w.ns, NODES);
    await machinesDiscovered(w.client, w.ns, NODES);
    return {
      configs: async () => (await w.client.list<NixosConfiguration>(NIXOS_CONFIGURATIONS, { namespace: w.ns })).items,
    };
  });
}

async function createCluster(client: KubeClient, ns: string, extra: Record<string, unknown> = {}) {
  await client.create(KUBERNETES_CLUSTERS, {
    metadata: { name: "c", namespace: ns },
    spec: {
      gitRepo: REPO,
      controlPlane: { machines: ["cp-1", "cp-2", "cp-3"] },
      dataPlane: { machines: ["w-1", "w-2"] },
      ...extra,
    },
  });
}

const isCp = (cfg: string) => cfg.startsWith("c.cp-");
const ready = (c: KubernetesCluster) => c.status?.phase === "Ready";

/** Every node ran (and finished) a switch of its final spec after `since`, before `readySeen`. */
function assertAllRan(windows: ReturnType<typeof switchWindows>, configs: NixosConfiguration[], readySeen: number) {
  for (const cfg of configs) {
    const hash = cfg.metadata.annotations?.["nico.homystack.com/spec-hash"];
    const ran = windows.find((w) =>
      w.config === cfg.metadata.name && w.specHash === hash && w.ok && w.end! <= readySeen
    );
    assert.ok(ran, `Ready before ${cfg.metadata.name} ran spec ${hash}: ${JSON.stringify(windows)}`);
  }
}

Deno.test("a change that keeps the commit (cluster.nix) reaches every node one at a time, each through a run NICO asks for", async () => {
  await using w = await v1World("v1files");
  await createCluster(w.client, w.ns);
  await w.until("Ready", ready);
  const before = await eventually("schedules at rest", async () => {
    const list = await w.client.list<NixosConfiguration>(NIXOS_CONFIGURATIONS, { namespace: w.ns });
    return list.items.every((x) => sameSchedule(x.spec.dayTwoSchedule, undefined)) && list;
  });
  const versions = recordVersions(w.client, w.ns, before.resourceVersion);
  w.defer(() => versions.stop());
  const since = Date.now();
  // A new endpoint changes cluster.nix on every node, and nothing else: the commit stays.
  await w.client.mergePatch(KUBERNETES_CLUSTERS, "c", w.ns, {
    spec: { controlPlaneEndpoint: { host: "127.0.0.99", port: 6443 } },
  });
  await w.until("the new spec everywhere", (c) =>
    cond(c, "UpToDate")?.status === "True" && ready(c) &&
    c.status?.observedGeneration === c.metadata.generation);
  const readySeen = Date.now();
  // NIO v1 never runs such a change by itself: each node's new spec was written with the schedule forward, in the
  // same write (no grace to wait for first, no third write).
  const hashOf = (c: NixosConfiguration) => c.metadata.annotations?.["nico.homystack.com/spec-hash"];
  for (const x of before.items) {
    const seen = versions.of(x.metadata.name);
    const changed = seen.filter((v, i) => hashOf(v) !== hashOf(i ? seen[i - 1]! : x));
    assert.equal(changed.length, 1, `${x.metadata.name}: spec changes ${changed.map(hashOf)}`);
    assert.equal(changed[0]!.spec.dayTwoSchedule, RUN_SOON_SCHEDULE, `${x.metadata.name} written without a run asked`);
  }
  const windows = changingSwitches(switchWindows(w.nio.history)).filter((x) => x.start >= since);
  assert.equal(maxConcurrent(windows, isCp), 1, `control-plane switches at once: ${JSON.stringify(windows)}`);
  assert.equal(maxConcurrent(windows, (x) => !isCp(x)), 1, `worker switches at once: ${JSON.stringify(windows)}`);
  assert.deepEqual(switchOrder(windows, since), ["c.w-1", "c.w-2", "c.cp-2", "c.cp-3", "c.cp-1"]);
  const configs = await w.configs();
  assertAllRan(windows, configs, readySeen);
  // Each node got the every-minute schedule for its step only; at rest they carry NIO's default again: two spec
  // writes per node (the change with the schedule forward, the schedule back).
  const after = await eventually("schedules back at rest", async () => {
    const cfgs = await w.configs();
    return cfgs.every((c) => sameSchedule(c.spec.dayTwoSchedule, undefined)) && cfgs;
  });
  for (const x of before.items) {
    const now = after.find((c) => c.metadata.name === x.metadata.name)!;
    assert.equal(now.metadata.generation! - x.metadata.generation!, 2, `${x.metadata.name}: spec writes`);
  }
});

/** Every version of the namespace's configurations from `resourceVersion` on, by name, until `stop`. */
function recordVersions(client: KubeClient, ns: string, resourceVersion: string | undefined) {
  const abort = new AbortController();
  const seen = new Map<string, NixosConfiguration[]>();
  const done = (async () => {
    for await (
      const ev of client.watch<NixosConfiguration>(NIXOS_CONFIGURATIONS, {
        namespace: ns,
        ...(resourceVersion ? { resourceVersion } : {}),
        signal: abort.signal,
      })
    ) {
      if (ev.type === "BOOKMARK") continue;
      const list = seen.get(ev.object.metadata.name) ?? [];
      seen.set(ev.object.metadata.name, [...list, ev.object]);
    }
  })().catch(() => {});
  return {
    of: (name: string) => seen.get(name) ?? [],
    stop: async () => {
      abort.abort();
      await done;
    },
  };
}

Deno.test("a failing switch halts the rollout within seconds of its first failed Pod, naming node, attempt and reason", async () => {
  await using w = await v1World("v1fail", { minuteMs: 1000 });
  await createCluster(w.client, w.ns);
  await w.until("Ready", ready);
  await w.client.mergePatch(NIXOS_CONFIGURATIONS, "c.w-1", w.ns, {
    metadata: { annotations: { [FAIL_APPLY_ANNOTATION]: "true" } },
  });
  const since = Date.now();
  await w.client.mergePatch(KUBERNETES_CLUSTERS, "c", w.ns, {
    spec: { gitRepo: "https://git.example.test/flake-v2.git" },
  });
  const halted = await w.until("RolloutStalled", (c) => cond(c, "RollingOut")?.reason === "RolloutStalled", 30_000);
  const firstFailure = w.nio.history.find((e) => e.kind === "apply-failed" && e.at >= since);
  assert.ok(firstFailure, "the switch failed");
  const msg = cond(halted, "RollingOut")!.message;
  assert.match(msg, /w-1/);
  assert.match(msg, /attempt 1/);
  assert.match(msg, /nixos-rebuild switch failed/);
  assert.equal(halted.status?.phase, "Failed");
  // Nothing else moved: the other nodes still run the old repository; NIO keeps retrying w-1 meanwhile.
  const others = (await w.configs()).filter((c) => c.metadata.name !== "c.w-1");
  assert.ok(others.every((c) => c.spec.gitRepo === REPO), "a node past the failed one was changed");
  const windows = changingSwitches(switchWindows(w.nio.history)).filter((x) => x.start >= since);
  assert.deepEqual([...new Set(windows.map((x) => x.config))], ["c.w-1"]);
});

Deno.test("with a configurationSubdir, NIO v1 finds cluster.nix next to flake.nix (it writes files at the checkout's root)", async () => {
  await using w = await v1World("v1subdir");
  await createCluster(w.client, w.ns, { configurationSubdir: "clusters/prod/" });
  await w.until("Ready", ready);
  const cfg = (await w.configs())[0]!;
  assert.ok(cfg.spec.additionalFiles.some((f) => f.path === "clusters/prod/cluster.nix"), JSON.stringify(cfg.spec));
  assert.ok(!w.nio.history.some((e) => e.kind === "apply-failed"), "a switch failed");
});

Deno.test("an unreachable Machine is Blocked, not Failed; NICO writes no fullInstall: false; Ready never goes back to Provisioning", async () => {
  await using w = await v1World("v1blocked");
  const phases: string[] = [];
  const abort = new AbortController();
  w.defer(() => abort.abort());
  await createCluster(w.client, w.ns);
  const c = await w.until("Ready", ready);
  const watching = (async () => {
    for await (
      const ev of w.client.watch<KubernetesCluster>(KUBERNETES_CLUSTERS, {
        namespace: w.ns,
        resourceVersion: c.metadata.resourceVersion!,
        signal: abort.signal,
      })
    ) {
      const p = ev.object.status?.phase;
      if (ev.type !== "BOOKMARK" && p && phases.at(-1) !== p) phases.push(p);
    }
  })().catch(() => {});
  // At rest: every node back on NIO's schedule, and no fullInstall written (NIO v1 drops a false one, which
  // used to make NICO write it back, bumping the generation, on every pass).
  const settled = await eventually("schedules at rest", async () => {
    const cfgs = await w.configs();
    return cfgs.every((x) => sameSchedule(x.spec.dayTwoSchedule, undefined)) && cfgs;
  });
  for (const cfg of settled) {
    assert.equal("fullInstall" in cfg.spec, false, `${cfg.metadata.name} carries fullInstall`);
  }
  const generations = new Map(settled.map((x) => [x.metadata.name, x.metadata.generation]));
  await w.client.mergePatch(MACHINES, "w-2", w.ns, {
    metadata: { annotations: { [UNDISCOVERABLE_ANNOTATION]: "true" } },
  });
  const blocked = await w.until("w-2 blocked", (x) => cond(x, "DataPlaneReady")?.status === "False");
  assert.match(cond(blocked, "DataPlaneReady")!.message, /w-2.*Blocked/);
  assert.notEqual(blocked.status?.phase, "Failed");
  await w.client.mergePatch(MACHINES, "w-2", w.ns, {
    metadata: { annotations: { [UNDISCOVERABLE_ANNOTATION]: null } },
  });
  await w.until("Ready again", ready);
  abort.abort();
  await watching;
  assert.ok(!phases.includes("Provisioning") && !phases.includes("Failed"), `phases: ${phases.join(" -> ")}`);
  for (const cfg of await w.configs()) {
    assert.equal(cfg.metadata.generation, generations.get(cfg.metadata.name), `${cfg.metadata.name} was rewritten`);
  }
});

Deno.test("a Machine is released only when NIO can no longer run its removal flake (NIO v1 starts a second one)", async () => {
  await using w = await v1World("v1release", { removeDelayMs: 400 });
  await createCluster(w.client, w.ns);
  await w.until("Ready", ready);
  const released = new Map<string, number>();
  const abort = new AbortController();
  w.defer(() => abort.abort());
  const machines = await w.client.list<Machine>(MACHINES, { namespace: w.ns });
  const watching = (async () => {
    for await (
      const ev of w.client.watch<Machine>(MACHINES, {
        namespace: w.ns,
        resourceVersion: machines.resourceVersion,
        signal: abort.signal,
      })
    ) {
      const m = ev.object;
      if (ev.type !== "BOOKMARK" && !m.metadata.labels?.[CLUSTER_LABEL] && !released.has(m.metadata.name)) {
        released.set(m.metadata.name, Date.now());
      }
    }
  })().catch(() => {});
  await w.client.delete(KUBERNETES_CLUSTERS, "c", w.ns);
  await eventually("cluster gone", async () => (await w.cluster()) === undefined, 60_000);
  await eventually("every Machine released", () => released.size === NODES.length, 30_000);
  abort.abort();
  await watching;
  assert.ok(w.nio.history.some((e) => e.kind === "leaked"), "the simulator left a decommission behind");
  // No removal flake ran on a Machine after it went back to the pool, and none is left that could.
  for (const [machine, at] of released) {
    const late = w.nio.history.filter((e) => e.kind === "remove-started" && e.name === `c.${machine}` && e.at >= at);
    assert.deepEqual(late, [], `#minimal ran on ${machine} after its release`);
  }
  assert.deepEqual((await w.client.list(NIX_JOBS, { namespace: w.ns })).items, []);
});
