/** Runs NICO's cluster controller in-process for integration tests. */
import { clusterController } from "../controllers/cluster/controller.ts";
import { eventRecorder } from "../lib/events.ts";
import { parseHostPolicy } from "../lib/git/hosts.ts";
import type { KubeClient } from "../lib/kube/client.ts";
import { MACHINES } from "../core/nio.ts";
import { jsonLogger, type Logger, silentLogger } from "../lib/runtime/log.ts";
import type { Machine, NioGeneration } from "../core/nio.ts";
import { eventually } from "./helpers.ts";

export interface RunningNico {
  stop(): Promise<void>;
}

export interface NicoTestOptions {
  namespace?: string;
  /** `null`: NICO runs with no default repository. */
  defaultGitRepo?: string | null;
  nodeTimeoutMs?: number;
  workers?: number;
  log?: Logger;
  /** Pin nodes to resolved commits (needs a reachable git server); off by default in tests. */
  resolveRefs?: boolean;
  refPollIntervalMs?: number;
  /** Watch workload clusters (loopback only), asking /readyz this often; off by default. */
  workloadProbeMs?: number;
  /** Which NIO the simulator plays (default `v1`, as the simulator's own default). */
  nio?: NioGeneration;
  /** How long a freed Machine stays claimed for NIO to settle (default 1 s in tests). */
  releaseSettleMs?: number;
}

/** Starts the cluster controller as NICO would; `stop()` shuts it down cleanly. */
export function startNico(client: KubeClient, opts: NicoTestOptions = {}): RunningNico {
  const nico = client.with({ fieldManager: "nico", userAgent: "nico" });
  const log = opts.log ?? (Deno.env.get("NICO_TEST_LOG") ? jsonLogger({ level: "debug" }) : silentLogger);
  const recorder = eventRecorder(nico, "nico.homystack.com/nico", "test");
  const { controller, revisions, workloads } = clusterController({
    client: nico,
    recorder,
    log,
    namespace: opts.namespace,
    defaultGitRepo: opts.defaultGitRepo === null
      ? undefined
      : opts.defaultGitRepo ?? "https://git.example.test/default-flake.git",
    workers: opts.workers ?? 2,
    ...(opts.nodeTimeoutMs ? { nodeTimeoutMs: opts.nodeTimeoutMs } : {}),
    resolveRefs: opts.resolveRefs ?? false,
    // Test git servers listen on loopback, which NICO refuses unless --git-allowed-hosts lists it.
    gitAllowedHosts: parseHostPolicy("*,127.0.0.1"),
    ...(opts.refPollIntervalMs ? { refPollIntervalMs: opts.refPollIntervalMs } : {}),
    ...(opts.workloadProbeMs
      ? { workloads: { policy: "loopback" as const, probeIntervalMs: opts.workloadProbeMs, requestTimeoutMs: 2_000 } }
      : {}),
    nio: opts.nio ?? "v1",
    releaseSettleMs: opts.releaseSettleMs ?? 1_000,
  });
  const abort = new AbortController();
  const done = controller.run(abort.signal);
  return {
    async stop() {
      abort.abort();
      await done;
      await recorder.flush();
      await revisions?.stop();
      await workloads?.closeAll();
    },
  };
}

/** Creates Machines (newer NIO shape) with labels and an SSH key Secret reference. */
export async function createMachines(
  client: KubeClient,
  namespace: string,
  names: string[],
  labels: Record<string, string> = {},
): Promise<void> {
  let i = 0;
  for (const name of names) {
    i++;
    await client.create<Machine>(MACHINES, {
      metadata: { name, namespace, labels },
      spec: {
        host: `127.0.${10 + Math.floor(i / 200)}.${(i % 200) + 1}`,
        sshUser: "root",
        sshKeySecretRef: { name: `${name}-ssh` },
      },
    });
  }
}

/**
 * Waits until NIO (the simulator) reports every Machine of `names` discoverable: a cluster created before
 * that selects only the Machines discovered so far, and the late ones change `cluster.nix` afterwards.
 */
export async function machinesDiscovered(client: KubeClient, namespace: string, names: string[]): Promise<void> {
  await eventually(`Machines ${names.join(", ")} discoverable`, async () => {
    const items = (await client.list<Machine>(MACHINES, { namespace })).items;
    return names.every((n) => items.some((m) => m.metadata.name === n && m.status?.discoverable === true));
  }, 30_000);
}
