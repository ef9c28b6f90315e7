/**
 * Provisioning modes on a real API server, with a simulated NIO whose
 * applies never finish within the test:
 * Parallel (the default) creates every node's configuration at once, while
 * BootstrapFirst creates only the bootstrap node's and waits for it.
 */
import assert from "node:assert/strict";
import type { NixosConfiguration } from "../../core/contract/nio.ts";
import { KUBERNETES_CLUSTERS } from "../../crds/kubernetescluster.ts";
import { type Machine, MACHINES, NIXOS_CONFIGURATIONS } from "../../core/contract/nio.ts";
import { configName } from "../../core/contract/names.ts";
import { eventually } from "../../testing/helpers.ts";
import { createMachines } from "../../testing/nico.ts";
import { world } from "../../testing/world.ts";

async function provision(provisioning: "Parallel" | "BootstrapFirst" | undefined) {
  await using w = await world("prov", { nio: false, nico: false });
  const { cp, ns } = w;
  await createMachines(cp.client, ns, ["cp-1", "cp-2", "cp-3"], { role: "cp" });
  await createMachines(cp.client, ns, ["w-1", "w-2"], { role: "worker" });
  await w.startNio({ applyDelayMs: 10 * 60_000 });
  await w.startNico();
  // Every Machine discovered first, so NICO's first pass selects all five (status is written after its writes).
  await eventually(
    "five Machines discoverable",
    async () =>
      (await cp.client.list<Machine>(MACHINES, { namespace: ns })).items.filter((m) => m.status?.discoverable)
        .length === 5,
  );
  await cp.client.create(KUBERNETES_CLUSTERS, {
    metadata: { name: "prod", namespace: ns },
    spec: {
      gitRepo: "https://git.example.test/prod.git",
      controlPlane: { machines: ["cp-1", "cp-2", "cp-3"] },
      dataPlane: { machines: ["w-1", "w-2"] },
      ...(provisioning ? { rollout: { provisioning } } : {}),
    },
  });
  // Settled: NICO has reported on the spec and says what it waits for.
  const cluster = await w.until(
    "NICO to report on the cluster",
    (c) => c.status?.observedGeneration === c.metadata.generation && c.status?.bootstrapNode,
    60_000,
    "prod",
  );
  const names = async () =>
    (await cp.client.list<NixosConfiguration>(NIXOS_CONFIGURATIONS, { namespace: ns })).items
      .map((c) => c.metadata.name).sort();
  return { cluster, names };
}

Deno.test("Parallel (the default): every configuration is created before any node applied", async () => {
  const { cluster, names } = await provision(undefined);
  assert.equal(cluster.spec.rollout.provisioning, "Parallel");
  await eventually("all five configurations", async () => (await names()).length === 5);
  assert.deepEqual(await names(), ["cp-1", "cp-2", "cp-3", "w-1", "w-2"].map((m) => configName("prod", m)).sort());
});

Deno.test("BootstrapFirst: only the bootstrap node's configuration until it has applied", async () => {
  const { names } = await provision("BootstrapFirst");
  assert.deepEqual(await names(), [configName("prod", "cp-1")]);
});
