/**
 * A cluster that cannot create any node's configuration holds no Machine:
 * one blocked on a ref that does not resolve, and one with no control-plane
 * Machine, leave theirs free, and a second cluster that wants the same
 * Machines gets them and comes up.
 */
import assert from "node:assert/strict";
import type { KubernetesCluster } from "../../crds/kubernetescluster.ts";
import { KUBERNETES_CLUSTERS } from "../../crds/kubernetescluster.ts";
import { CLUSTER_LABEL } from "../../core/contract/labels.ts";
import { type Machine, MACHINES } from "../../core/contract/nio.ts";
import type { KubeClient } from "../../lib/kube/client.ts";
import { startGitServer } from "../../testing/git_server.ts";
import { eventually } from "../../testing/helpers.ts";
import { createMachines } from "../../testing/nico.ts";
import { world } from "../../testing/world.ts";

const reasonOf = (c: KubernetesCluster | undefined, type: string) =>
  c?.status?.conditions?.find((x) => x.type === type)?.reason;

async function claimOf(client: KubeClient, ns: string, machine: string): Promise<string | undefined> {
  return (await client.get<Machine>(MACHINES, machine, ns))?.metadata.labels?.[CLUSTER_LABEL];
}

Deno.test("clusters that cannot start leave their Machines to a cluster that can", async () => {
  await using git = await startGitServer();
  await using w = await world("release", {
    nio: { applyDelayMs: 100 },
    nico: { resolveRefs: true, refPollIntervalMs: 300 },
  });
  const { cp, ns } = w;
  const get = (name: string) => cp.client.get<KubernetesCluster>(KUBERNETES_CLUSTERS, name, ns);
  const create = (name: string, spec: Record<string, unknown>) =>
    cp.client.create(KUBERNETES_CLUSTERS, { metadata: { name, namespace: ns }, spec: { gitRepo: git.url, ...spec } });
  await createMachines(cp.client, ns, ["m-1"], { role: "cp" });
  await createMachines(cp.client, ns, ["w-1"], { role: "worker" });

  // A ref that does not exist: Stalled, and m-1 left free.
  await create("stuck", {
    ref: "no-such-branch",
    controlPlane: { machineSelector: { matchLabels: { role: "cp" } }, count: 1 },
  });
  await eventually(
    "stuck: Stalled on its ref",
    async () => reasonOf(await get("stuck"), "Stalled") === "RefResolutionFailed",
    30_000,
  );
  await eventually("m-1 unclaimed", async () => (await claimOf(cp.client, ns, "m-1")) === undefined, 30_000);

  // No control-plane Machine at all: its worker is left free too.
  await create("headless", {
    controlPlane: { machines: ["cp-missing"] },
    dataPlane: { machineSelector: { matchLabels: { role: "worker" } }, count: 1 },
  });
  await eventually(
    "headless: NoControlPlane",
    async () => reasonOf(await get("headless"), "Ready") === "NoControlPlane",
    30_000,
  );
  await eventually("w-1 unclaimed", async () => (await claimOf(cp.client, ns, "w-1")) === undefined, 30_000);

  // Another cluster wants the same Machines: it gets them and comes up.
  await create("good", {
    controlPlane: { machineSelector: { matchLabels: { role: "cp" } }, count: 1 },
    dataPlane: { machineSelector: { matchLabels: { role: "worker" } }, count: 1 },
  });
  const good = await eventually("good: Ready", async () => {
    const c = await get("good");
    return c?.status?.phase === "Ready" ? c : undefined;
  }, 60_000);
  assert.deepEqual([good.status?.controlPlane?.machines, good.status?.dataPlane?.machines], [["m-1"], ["w-1"]]);
  assert.deepEqual([await claimOf(cp.client, ns, "m-1"), await claimOf(cp.client, ns, "w-1")], ["good", "good"]);
  assert.equal(reasonOf(await get("stuck"), "Stalled"), "RefResolutionFailed", "the stuck cluster still says why");
});
