/**
 * Time to a fully applied cluster in both provisioning modes: on its own
 * control plane, NICO's cluster controller in-process and the simulated NIO
 * taking `applyMs` per apply. For each mode, `clusters` clusters of 1 + 4
 * are created at once; a cluster's time runs from its creation to the last
 * of its nodes applied (the simulator's history).
 */
import { KUBERNETES_CLUSTERS } from "../../crds/kubernetescluster.ts";
import { configName } from "../../core/contract/names.ts";
import { startControlPlane } from "../../testing/envtest/controlplane.ts";
import { createMachines, startNico } from "../../testing/nico.ts";
import { startSimNio, waitFor } from "../../testing/sim-nio.ts";

export type ProvisioningMode = "BootstrapFirst" | "Parallel";

export interface ModeFigures {
  mode: ProvisioningMode;
  clusters: number;
  applyMs: number;
  /** Creation to the last node applied, per cluster, in seconds. */
  p50Seconds: number;
  maxSeconds: number;
  /** The same as multiples of one apply. */
  p50Applies: number;
  maxApplies: number;
}

const NODES = ["cp-1", "w-1", "w-2", "w-3", "w-4"];

export async function measureModes(clusters: number, applyMs: number): Promise<ModeFigures[]> {
  const cp = await startControlPlane();
  const out: ModeFigures[] = [];
  try {
    for (const mode of ["BootstrapFirst", "Parallel"] as const) out.push(await oneMode(cp, mode, clusters, applyMs));
  } finally {
    await cp.stop();
  }
  return out;
}

async function oneMode(
  cp: Awaited<ReturnType<typeof startControlPlane>>,
  mode: ProvisioningMode,
  clusters: number,
  applyMs: number,
): Promise<ModeFigures> {
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
    const r2 = (x: number) => Math.round(x * 100) / 100;
    return {
      mode,
      clusters,
      applyMs,
      p50Seconds: r2(p50 / 1000),
      maxSeconds: r2(max / 1000),
      p50Applies: r2(p50 / applyMs),
      maxApplies: r2(max / applyMs),
    };
  } finally {
    await nico.stop();
    await nio.stop();
  }
}

/** One line per mode. */
export function modeLines(figures: ModeFigures[]): string[] {
  return figures.map((f) =>
    `    ${f.mode.padEnd(15)} all nodes applied: p50 ${f.p50Seconds} s (${f.p50Applies}x one apply), ` +
    `max ${f.maxSeconds} s (${f.maxApplies}x)`
  );
}
