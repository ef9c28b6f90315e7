/**
 * Rollouts on a real API server with the simulated NIO: order, halting on a
 * failed node, pause, scale-down, and the safety invariants recorded by an
 * independent watcher while NICO is killed and restarted mid-rollout.
 */
import assert from "node:assert/strict";
import type { KubernetesCluster } from "../../crds/kubernetescluster.ts";
import type { KubeClient } from "../../lib/kube/client.ts";
import { KUBERNETES_CLUSTERS } from "../../crds/kubernetescluster.ts";
import { NIXOS_CONFIGURATIONS } from "../../core/contract/nio.ts";
import { ROLE_LABEL } from "../../core/contract/labels.ts";
import type { NixosConfiguration } from "../../core/contract/nio.ts";
import { changingSwitches, maxConcurrent, switchOrder, switchWindows } from "../../testing/switches.ts";
import { eventually } from "../../testing/helpers.ts";
import { createMachines, machinesDiscovered, settled } from "../../testing/nico.ts";
import { world } from "../../testing/world.ts";

const V1 = "https://git.example.test/v1.git";
const V2 = "https://git.example.test/v2.git";

/**
 * Watches configurations: the order NICO gave nodes the new repository, and how many control-plane
 * configurations were being deleted at once. (What the hosts did comes from the simulator's record:
 * testing/switches.ts; NIO v1's status cannot say it.)
 */
function invariantWatcher(client: KubeClient, ns: string) {
  const abort = new AbortController();
  const state = new Map<string, NixosConfiguration>();
  const firstSeen: string[] = [];
  let deletingCp = 0;
  let listed!: () => void;
  const ready = new Promise<void>((r) => (listed = r));
  const done = (async () => {
    const list = await client.list<NixosConfiguration>(NIXOS_CONFIGURATIONS, { namespace: ns });
    for (const c of list.items) state.set(c.metadata.name, c);
    listed();
    try {
      for await (
        const ev of client.watch<NixosConfiguration>(NIXOS_CONFIGURATIONS, {
          namespace: ns,
          resourceVersion: list.resourceVersion,
          signal: abort.signal,
        })
      ) {
        if (ev.type === "BOOKMARK") continue;
        const prev = state.get(ev.object.metadata.name);
        if (ev.type === "DELETED") state.delete(ev.object.metadata.name);
        else state.set(ev.object.metadata.name, ev.object);
        if (ev.object.spec?.gitRepo === V2 && prev?.spec.gitRepo !== V2) firstSeen.push(ev.object.spec.machineRef.name);
        const all = [...state.values()];
        deletingCp = Math.max(
          deletingCp,
          all.filter((c) => c.metadata.labels?.[ROLE_LABEL] === "control-plane" && c.metadata.deletionTimestamp).length,
        );
      }
    } catch (err) {
      if (!abort.signal.aborted) throw err;
    }
  })();
  return {
    /** Resolves once the watcher has its starting state: start changing things after it. */
    ready,
    firstSeen,
    get maxDeletingCp() {
      return deletingCp;
    },
    async stop() {
      abort.abort();
      await done;
    },
  };
}

async function readyAt(client: KubeClient, ns: string, name: string, gitRepo: string, timeoutMs = 60_000) {
  return await eventually(`cluster ${name} Ready on ${gitRepo}`, async () => {
    const c = await client.get<KubernetesCluster>(KUBERNETES_CLUSTERS, name, ns);
    const cfgs = (await client.list<NixosConfiguration>(NIXOS_CONFIGURATIONS, { namespace: ns })).items;
    return c?.status?.phase === "Ready" && cfgs.every((x) => x.spec.gitRepo === gitRepo) ? c : undefined;
  }, timeoutMs);
}

const cond = (c: KubernetesCluster, type: string) => c.status?.conditions?.find((x) => x.type === type);

for (const generation of ["v1", "older"] as const) {
  Deno.test(
    `a gitRepo change rolls workers one by one, then the control plane one by one, across operator restarts (NIO ${generation})`,
    async () => {
      await using w = await world("roll", { generation, nio: { applyDelayMs: 400, jitterMs: 300 } });
      const { cp, ns, nio } = w;
      await createMachines(cp.client, ns, ["cp-1", "cp-2", "cp-3", "w-1", "w-2", "w-3"]);
      await machinesDiscovered(cp.client, ns, ["cp-1", "cp-2", "cp-3", "w-1", "w-2", "w-3"]);
      await cp.client.create(KUBERNETES_CLUSTERS, {
        metadata: { name: "c", namespace: ns },
        spec: {
          gitRepo: V1,
          controlPlane: { machines: ["cp-1", "cp-2", "cp-3"] },
          dataPlane: { machines: ["w-1", "w-2", "w-3"] },
        },
      });
      await readyAt(cp.client, ns, "c", V1);
      const watcher = invariantWatcher(cp.client, ns);
      await watcher.ready;
      const changedAt = Date.now();
      await cp.client.mergePatch(KUBERNETES_CLUSTERS, "c", ns, { spec: { gitRepo: V2 } });
      // Stop and restart the operator as each of the first four nodes starts converging: mid-rollout, every time.
      for (let i = 0; i < 4; i++) {
        await eventually(`node ${i + 1} of the rollout to start`, () => watcher.firstSeen.length > i, 30_000, 10);
        await w.startNico(); // stops the running one first
      }
      const c = await readyAt(cp.client, ns, "c", V2);
      const readySeen = Date.now();
      await watcher.stop();
      assert.deepEqual(watcher.firstSeen, ["w-1", "w-2", "w-3", "cp-2", "cp-3", "cp-1"]);
      // What the hosts did (the simulator's record, not NIO's status): one switch per plane at a time, in order,
      // and every node ran the new spec before the cluster said Ready.
      const windows = changingSwitches(switchWindows(nio.history)).filter((w) => w.start >= changedAt);
      const isCp = (cfg: string) => cfg.startsWith("c.cp-");
      assert.equal(maxConcurrent(windows, isCp), 1, `control-plane switches at once: ${JSON.stringify(windows)}`);
      assert.equal(maxConcurrent(windows, (x) => !isCp(x)), 1, `worker switches at once: ${JSON.stringify(windows)}`);
      assert.deepEqual(switchOrder(windows, changedAt), ["c.w-1", "c.w-2", "c.w-3", "c.cp-2", "c.cp-3", "c.cp-1"]);
      for (const node of ["cp-1", "cp-2", "cp-3", "w-1", "w-2", "w-3"]) {
        const ran = windows.find((w) => w.config === `c.${node}` && w.ok && w.end! <= readySeen);
        assert.ok(ran, `Ready before ${node} ran the new spec: ${JSON.stringify(windows)}`);
      }
      assert.equal(cond(c, "UpToDate")!.status, "True");
      assert.equal(cond(c, "RollingOut")!.reason, "RolloutComplete");
    },
  );
}

Deno.test("a failing node halts the rollout and says so; it resumes when the node recovers", async () => {
  await using w = await world("halt", { nio: { applyDelayMs: 200 } });
  const { cp, ns, nico } = w;
  await createMachines(cp.client, ns, ["cp-1", "w-1", "w-2", "w-3"]);
  await machinesDiscovered(cp.client, ns, ["cp-1", "w-1", "w-2", "w-3"]);
  await cp.client.create(KUBERNETES_CLUSTERS, {
    metadata: { name: "c", namespace: ns },
    spec: { gitRepo: V1, controlPlane: { machines: ["cp-1"] }, dataPlane: { machines: ["w-1", "w-2", "w-3"] } },
  });
  await readyAt(cp.client, ns, "c", V1);
  await cp.client.mergePatch(NIXOS_CONFIGURATIONS, "c.w-2", ns, {
    metadata: { annotations: { "sim.nio.homystack.com/fail-apply": "true" } },
  });
  await cp.client.mergePatch(KUBERNETES_CLUSTERS, "c", ns, { spec: { gitRepo: V2 } });
  const stalled = await w.until(
    "RolloutStalled",
    (c) => cond(c, "RollingOut")?.reason === "RolloutStalled",
    30_000,
  );
  assert.match(cond(stalled, "RollingOut")!.message, /halted at w-2/);
  assert.equal(stalled.status!.phase, "Failed");
  // Nothing past the failed node is touched, even by a later pass.
  await settled(cp.client, nico, ns, "c");
  const cfgs = (await cp.client.list<NixosConfiguration>(NIXOS_CONFIGURATIONS, { namespace: ns })).items;
  const repo = (m: string) => cfgs.find((x) => x.spec.machineRef.name === m)!.spec.gitRepo;
  assert.deepEqual([repo("w-1"), repo("w-2"), repo("w-3"), repo("cp-1")], [V2, V2, V1, V1]);
  await cp.client.mergePatch(NIXOS_CONFIGURATIONS, "c.w-2", ns, {
    metadata: { annotations: { "sim.nio.homystack.com/fail-apply": null } },
  });
  await readyAt(cp.client, ns, "c", V2);
});

Deno.test("pause freezes every child and shows the plan; unpausing rolls it out", async () => {
  await using w = await world("pause", { nio: { applyDelayMs: 150 } });
  const { cp, ns, nico } = w;
  await createMachines(cp.client, ns, ["cp-1", "w-1", "w-2"]);
  await machinesDiscovered(cp.client, ns, ["cp-1", "w-1", "w-2"]);
  await cp.client.create(KUBERNETES_CLUSTERS, {
    metadata: { name: "c", namespace: ns },
    spec: { gitRepo: V1, controlPlane: { machines: ["cp-1"] }, dataPlane: { machines: ["w-1", "w-2"] } },
  });
  await readyAt(cp.client, ns, "c", V1);
  await cp.client.mergePatch(KUBERNETES_CLUSTERS, "c", ns, {
    metadata: { annotations: { "nico.homystack.com/paused": "true" } },
    spec: { gitRepo: V2 },
  });
  const paused = await w.until(
    "Paused with a plan",
    (c) => cond(c, "Paused")?.status === "True" && c.status?.rollout?.pending?.length === 3,
  );
  assert.deepEqual(paused.status!.rollout!.pending, ["w-1", "w-2", "cp-1"]);
  assert.match(cond(paused, "UpToDate")!.message, /to update, in order: w-1, w-2, cp-1/);
  await settled(cp.client, nico, ns, "c");
  const cfgs = (await cp.client.list<NixosConfiguration>(NIXOS_CONFIGURATIONS, { namespace: ns })).items;
  assert.ok(cfgs.every((x) => x.spec.gitRepo === V1), "a paused cluster changed a child");
  await cp.client.mergePatch(KUBERNETES_CLUSTERS, "c", ns, {
    metadata: { annotations: { "nico.homystack.com/paused": null } },
  });
  await readyAt(cp.client, ns, "c", V2);
});

Deno.test("scaling the control plane down removes one node at a time and keeps quorum", async () => {
  await using w = await world("scale", { nio: { applyDelayMs: 150, removeDelayMs: 500 } });
  const { cp, ns, nio } = w;
  await createMachines(cp.client, ns, ["cp-1", "cp-2", "cp-3", "cp-4", "cp-5"], { role: "cp" });
  await machinesDiscovered(cp.client, ns, ["cp-1", "cp-2", "cp-3", "cp-4", "cp-5"]);
  await cp.client.create(KUBERNETES_CLUSTERS, {
    metadata: { name: "c", namespace: ns },
    spec: { gitRepo: V1, controlPlane: { machineSelector: { matchLabels: { role: "cp" } }, count: 5 } },
  });
  await readyAt(cp.client, ns, "c", V1, 90_000);
  const watcher = invariantWatcher(cp.client, ns);
  await watcher.ready;
  const changedAt = Date.now();
  await cp.client.mergePatch(KUBERNETES_CLUSTERS, "c", ns, { spec: { controlPlane: { count: 3 } } });
  const c = await eventually("3 control-plane nodes", async () => {
    const x = await cp.client.get<KubernetesCluster>(KUBERNETES_CLUSTERS, "c", ns);
    const cfgs = (await cp.client.list(NIXOS_CONFIGURATIONS, { namespace: ns })).items;
    return x?.status?.phase === "Ready" && cfgs.length === 3 && x.status.controlPlane?.summary === "3/3"
      ? x
      : undefined;
  }, 60_000);
  await watcher.stop();
  assert.deepEqual(c.status!.controlPlane!.machines, ["cp-1", "cp-2", "cp-3"]);
  assert.equal(watcher.maxDeletingCp, 1, "control-plane nodes removed at once");
  // What the hosts did: a removal flake or a switch to a new cluster.nix, one control-plane node at a time.
  const windows = changingSwitches(switchWindows(nio.history)).filter((w) => w.start >= changedAt);
  assert.equal(
    maxConcurrent(windows, () => true),
    1,
    `control-plane nodes changing at once: ${JSON.stringify(windows)}`,
  );
});
