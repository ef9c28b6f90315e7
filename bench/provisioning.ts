/**
 * Time to a fully applied cluster in both provisioning modes (prints figures;
 * not a timed test). On the local control plane, NICO's cluster controller
 * runs in-process and the simulated NIO takes `--apply-ms` per apply (a
 * NixOS install on real hardware takes minutes). For each mode, `--clusters`
 * clusters of 1 control-plane node and 4 workers are created at once; a
 * cluster's time is from its creation to the last of its nodes applied (the
 * simulator's history), reported as p50/max and as a multiple of one apply.
 *
 * Run: deno run -A bench/provisioning.ts [--clusters 10] [--apply-ms 5000]
 *
 * @module
 */
import { parseArgs } from "node:util";
import { KUBERNETES_CLUSTERS } from "../crds/kubernetescluster.ts";
import { startControlPlane } from "../testing/envtest/controlplane.ts";
import { createMachines, startNico } from "../testing/nico.ts";
import { configName } from "../core/names.ts";
import { startSimNio, waitFor } from "../testing/sim-nio.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: { clusters: { type: "string", default: "10" }, "apply-ms": { type: "string", default: "5000" } },
});
const clusters = Number(values.clusters);
const applyMs = Number(values["apply-ms"]);
const NODES = ["cp-1", "w-1", "w-2", "w-3", "w-4"];

const cp = await startControlPlane();
try {
  console.log(`${clusters} clusters of 1 + 4 nodes at once, simulated apply ${applyMs} ms, NICO in-process`);
  for (const mode of ["BootstrapFirst", "Parallel"] as const) {
    const ns = await cp.namespace(mode.toLowerCase());
    const names = Array.from({ length: clusters }, (_, i) => `c${i}`);
    for (const c of names) await createMachines(cp.client, ns, NODES.map((n) => `${c}-${n}`));
    const nio = startSimNio(cp.client, { namespace: ns, applyDelayMs: applyMs });
    const nico = startNico(cp.client, { namespace: ns, workers: 2 });
    const created = new Map<string, number>();
    try {
      // Machines are discovered before clusters name them (otherwise membership grows and nodes are re-rendered).
      const machines = names.length * NODES.length;
      await waitFor(() => nio.history.filter((e) => e.kind === "discovered").length, (n) => n >= machines, {
        timeoutMs: 60_000,
        what: "every Machine discovered",
      });
      await Promise.all(names.map(async (c) => {
        created.set(c, Date.now());
        await cp.client.create(KUBERNETES_CLUSTERS, {
          metadata: { name: c, namespace: ns },
          spec: {
            gitRepo: "https://git.example.test/flake.git",
            controlPlane: { machines: [`${c}-cp-1`] },
            dataPlane: { machines: NODES.slice(1).map((n) => `${c}-${n}`) },
            rollout: { provisioning: mode },
          },
        });
      }));
      const appliedAt = (c: string) =>
        NODES.map((n) => nio.history.find((e) => e.kind === "applied" && e.name === configName(c, `${c}-${n}`))?.at);
      await waitFor(
        () => names.every((c) => appliedAt(c).every((t) => t !== undefined)),
        (done) => done,
        { timeoutMs: 20 * applyMs + 60_000, intervalMs: 100, what: `every node applied (${mode})` },
      );
      const times = names.map((c) => Math.max(...appliedAt(c).map((t) => t!)) - created.get(c)!).sort((a, b) => a - b);
      const p50 = times[Math.floor(times.length / 2)]!;
      const max = times.at(-1)!;
      console.log(
        `  ${mode.padEnd(15)} all nodes applied: p50 ${(p50 / 1000).toFixed(2)} s (${
          (p50 / applyMs).toFixed(2)
        }x one ` +
          `apply), max ${(max / 1000).toFixed(2)} s (${(max / applyMs).toFixed(2)}x)`,
      );
    } finally {
      await nico.stop();
      await nio.stop();
    }
  }
} finally {
  await cp.stop();
}
