/**
 * Quiet status (core/status/write.ts): a bring-up on a NIO whose nodes finish at different times writes the
 * cluster's status a few times, not once per node step, and what readers wait on is never held back.
 */
import assert from "node:assert/strict";
import type { KubernetesCluster, KubernetesClusterStatus } from "../../crds/kubernetescluster.ts";
import { KUBERNETES_CLUSTERS } from "../../crds/kubernetescluster.ts";
import type { NioGeneration } from "../../core/contract/nio.ts";
import type { KubeClient } from "../../lib/kube/client.ts";
import { NIXOS_CONFIGURATIONS } from "../../core/contract/nio.ts";
import { configName } from "../../core/contract/names.ts";
import { NEVER_FINISH_ANNOTATION } from "../../testing/sim-nio.ts";
import { eventually } from "../../testing/helpers.ts";
import { createMachines, machinesDiscovered } from "../../testing/nico.ts";
import { world } from "../../testing/world.ts";
import { STATUS_DELAY_MS } from "../../core/status/write.ts";

const MACHINES = ["cp-1", "w-1", "w-2", "w-3", "w-4"];

/** Every distinct status the cluster `name` carried, as a watch saw it, in order. */
function statusLog(client: KubeClient, ns: string, name: string) {
  const seen: KubernetesClusterStatus[] = [];
  const abort = new AbortController();
  const done = (async () => {
    const list = await client.list<KubernetesCluster>(KUBERNETES_CLUSTERS, { namespace: ns });
    for await (
      const ev of client.with({ signal: abort.signal }).watch<KubernetesCluster>(KUBERNETES_CLUSTERS, {
        namespace: ns,
        resourceVersion: list.resourceVersion,
        fieldSelector: `metadata.name=${name}`,
        timeoutSeconds: 300,
      })
    ) {
      if (ev.type !== "ADDED" && ev.type !== "MODIFIED") continue;
      const s = ev.object.status;
      if (s && JSON.stringify(s) !== JSON.stringify(seen.at(-1))) seen.push(s);
    }
  })().catch((err) => {
    if (!abort.signal.aborted) throw err;
  });
  return { seen, stop: async () => (abort.abort(), await done) };
}

const ready = (s: KubernetesClusterStatus | undefined) =>
  s?.phase === "Ready" && s.conditions?.find((c) => c.type === "Ready")?.status === "True";

for (const generation of ["v1", "older"] as NioGeneration[]) {
  Deno.test(`a 1 + 4 bring-up on a jittered NIO ${generation} writes its status a few times, the last one complete`, async () => {
    await using w = await world(`quiet-${generation}`, {
      generation,
      nio: { applyDelayMs: 300, jitterMs: 2000 },
      nico: { statusDelayMs: STATUS_DELAY_MS },
    });
    const { cp, ns } = w;
    const log = statusLog(cp.client, ns, "c");
    w.defer(() => log.stop());
    await createMachines(cp.client, ns, MACHINES);
    await machinesDiscovered(cp.client, ns, MACHINES);
    await cp.client.create(KUBERNETES_CLUSTERS, {
      metadata: { name: "c", namespace: ns },
      spec: {
        gitRepo: "https://git.example.test/flake.git",
        controlPlane: { machines: ["cp-1"] },
        dataPlane: { machines: ["w-1", "w-2", "w-3", "w-4"] },
      },
    });
    await eventually("Ready", () => ready(log.seen.at(-1)), 60_000);
    // Nine node steps (five applies at different times, the Machine write-backs, the kubeconfig) and the
    // first answer: one status each before; now the first status, the Ready one, and at most one held-back
    // progress write if the bring-up outlasted the delay on a busy machine.
    assert.ok(log.seen.length <= 3, `status written ${log.seen.length} times: ${log.seen.map((s) => s.phase)}`);
    assert.equal(log.seen[0]!.phase, "Provisioning");
    assert.equal(log.seen[0]!.conditions?.find((c) => c.type === "Reconciling")?.status, "True");
    const last = log.seen.at(-1)!;
    assert.equal(last.controlPlane?.ready, 1);
    assert.equal(last.dataPlane?.ready, 4);
    assert.equal(last.rollout?.upToDate, 5);
    assert.equal(last.kubeconfigSecret, "c-kubeconfig");
  });
}

Deno.test("progress is written at most the delay after it was seen, while the phase stays", async () => {
  await using w = await world("quiet-slow", { nio: { applyDelayMs: 300 }, nico: { statusDelayMs: 1000 } });
  const { cp, ns } = w;
  const log = statusLog(cp.client, ns, "c");
  const hang = (value: string | null) =>
    cp.client.mergePatch(NIXOS_CONFIGURATIONS, configName("c", "w-1"), ns, {
      metadata: { annotations: { [NEVER_FINISH_ANNOTATION]: value } },
    });
  w.defer(() => log.stop());
  await createMachines(cp.client, ns, ["cp-1", "w-1"]);
  await machinesDiscovered(cp.client, ns, ["cp-1", "w-1"]);
  await cp.client.create(KUBERNETES_CLUSTERS, {
    metadata: { name: "c", namespace: ns },
    spec: {
      gitRepo: "https://git.example.test/flake.git",
      controlPlane: { machines: ["cp-1"] },
      dataPlane: { machines: ["w-1"] },
    },
  });
  // w-1's host hangs: the cluster stays Provisioning, and only progress changes (the control plane comes up).
  await eventually("w-1's configuration", () => cp.client.get(NIXOS_CONFIGURATIONS, configName("c", "w-1"), ns));
  await hang("true");
  const progress = await eventually(
    "the control plane's progress, written while the phase stays Provisioning",
    () => log.seen.find((s) => s.phase === "Provisioning" && s.controlPlane?.ready === 1),
    30_000,
  );
  assert.equal(progress.conditions?.find((c) => c.type === "Ready")?.reason, "WaitingForWorkers");
  await hang(null);
  await eventually("Ready", () => ready(log.seen.at(-1)), 60_000);
});
