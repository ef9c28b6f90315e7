/** Runs NICO's cluster controller in-process for integration tests. */
import { clusterController } from "../controllers/cluster/controller.ts";
import { type ClusterSettings, clusterSettings } from "../controllers/cluster/settings.ts";
import type { ClusterMemories } from "../controllers/cluster/memory.ts";
import type { ClusterInformers } from "../controllers/cluster/reconciler.ts";
import { eventRecorder } from "../lib/events.ts";
import { parseHostPolicy } from "../lib/git/hosts.ts";
import type { KubeClient, KubeObject } from "../lib/kube/client.ts";
import { KUBERNETES_CLUSTERS } from "../crds/kubernetescluster.ts";
import { MACHINES } from "../core/contract/nio.ts";
import { jsonLogger, type Logger, silentLogger } from "../lib/runtime/log.ts";
import type { Machine, NioGeneration } from "../core/contract/nio.ts";
import { eventually } from "./helpers.ts";
import type { ReconcileOutcome } from "../lib/runtime/controller.ts";
import type { TargetPolicy } from "../controllers/cluster/workload/targets.ts";

export interface RunningNico {
  stop(): Promise<void>;
  /**
   * Resolves with the outcome of the first pass over cluster `key`
   * (`namespace/name`) that began after this call and after NICO's cache
   * held the cluster at `resourceVersion` or later (when given; envtest's
   * resourceVersions are etcd revisions, so they compare), once the Events it
   * recorded are written. "Nothing happens" checks wait for this instead of
   * for time: a pass that saw the change has run and is done.
   */
  passAfter(key: string, resourceVersion?: string, timeoutMs?: number): Promise<ReconcileOutcome>;
  /** What NICO remembers about each cluster (and what it releases with it: see `kept()`). */
  memory: ClusterMemories;
  /** The controller's caches, as its passes read them (a shard's hold its own clusters' children). */
  informers: ClusterInformers;
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
  /**
   * Which addresses the workload connections and etcd may reach (default `loopback`: loopback only, and allowed;
   * rules without an allow list show what production refuses).
   */
  targets?: TargetPolicy;
  /** With workload clusters, how often their etcd is looked at (default 500 ms). */
  etcdIntervalMs?: number;
  /** Which NIO the simulator plays (default `v1`, as the simulator's own default). */
  nio?: NioGeneration;
  /** How long a freed Machine stays claimed for NIO to settle (default 1 s in tests). */
  releaseSettleMs?: number;
  /** The longest a progress-only status change is held back (default: NICO's own). */
  statusDelayMs?: number;
  /** Register clusters with the Argo CD of this namespace (default: off). */
  argoCdNamespace?: string;
  /** NIO resources to treat as not served by the API server (what `nico run` finds by discovery). */
  nioMissing?: string[];
  /** Any other setting (controllers/cluster/settings.ts), over the ones above: a new setting needs nothing here. */
  settings?: Partial<ClusterSettings>;
}

/** Starts the cluster controller as NICO would; `stop()` shuts it down cleanly. */
export function startNico(client: KubeClient, opts: NicoTestOptions = {}): RunningNico {
  const nico = client.with({ fieldManager: "nico", userAgent: "nico" });
  const log = opts.log ?? (Deno.env.get("NICO_TEST_LOG") ? jsonLogger({ level: "debug" }) : silentLogger);
  const recorder = eventRecorder(nico, "nico.homystack.com/nico", "test");
  const passes = passLog();
  const { controller, revisions, workloads, informers, memory } = clusterController({
    hooks: { reconciled: passes.ended },
    client: nico,
    recorder,
    log,
    settings: clusterSettings({
      namespace: opts.namespace,
      defaultGitRepo: opts.defaultGitRepo === null
        ? undefined
        : opts.defaultGitRepo ?? "https://git.example.test/default-flake.git",
      workers: opts.workers ?? 2,
      nodeTimeout: opts.nodeTimeoutMs,
      resolveRefs: opts.resolveRefs ?? false,
      refPollInterval: opts.refPollIntervalMs,
      ...(opts.workloadProbeMs ? { etcdInterval: opts.etcdIntervalMs ?? 500, etcdTimeout: 1_000 } : {}),
      nio: opts.nio ?? "v1",
      releaseSettle: opts.releaseSettleMs ?? 1_000,
      statusDelay: opts.statusDelayMs,
      argocdNamespace: opts.argoCdNamespace,
      nioMissing: opts.nioMissing,
      ...opts.settings,
    }),
    // Test git servers listen on loopback, which NICO refuses unless --git-allowed-hosts lists it.
    gitAllowedHosts: parseHostPolicy("*,127.0.0.1"),
    ...(opts.workloadProbeMs
      ? {
        workloads: {
          policy: opts.targets ?? "loopback",
          probeIntervalMs: opts.workloadProbeMs,
          requestTimeoutMs: 2_000,
        },
      }
      : {}),
  });
  // Called in the same synchronous turn as the controller's own handler, so a version's arrival precedes its pass.
  informers.clusters.onEvent((_type, c) =>
    passes.cached(`${c.metadata.namespace}/${c.metadata.name}`, c.metadata.resourceVersion)
  );
  const abort = new AbortController();
  const done = controller.run(abort.signal);
  return {
    memory,
    informers,
    async passAfter(key, resourceVersion, timeoutMs = 60_000) {
      const outcome = await passes.after(key, resourceVersion ? BigInt(resourceVersion) : undefined, timeoutMs);
      await recorder.flush();
      return outcome;
    },
    async stop() {
      abort.abort();
      await done;
      await recorder.flush();
      await revisions?.stop();
      await workloads?.closeAll();
      await memory.closeEtcd();
    },
  };
}

/** An annotation NICO does not read: setting it only makes NICO look at the cluster again. */
export const POKE_ANNOTATION = "test.nico.homystack.com/poke";

/**
 * Makes NICO look at cluster `name` once more and waits until that pass has
 * ended and its Events are written: whatever NICO still had to do for the
 * state the cluster is in now, it has done. "Nothing more happens" checks
 * read after this instead of after a pause.
 */
export async function settled(
  client: KubeClient,
  nico: RunningNico,
  namespace: string,
  name: string,
): Promise<ReconcileOutcome> {
  const poked = await client.mergePatch<KubeObject>(KUBERNETES_CLUSTERS, name, namespace, {
    metadata: { annotations: { [POKE_ANNOTATION]: crypto.randomUUID() } },
  });
  return await nico.passAfter(`${namespace}/${name}`, poked.metadata.resourceVersion);
}

/**
 * What a test may wait on: when NICO's cache first held each version of a
 * cluster, and when each pass began. Both are logged from the start, so a
 * pass that began before the test asked is still found.
 */
function passLog() {
  const seen = new Map<string, { rv: bigint; at: number }[]>();
  const passes: { key: string; began: number; outcome: ReconcileOutcome }[] = [];
  const wake = new Set<() => void>();
  const notify = () => {
    for (const w of wake) w();
  };
  /** When NICO's cache first held `key` at `rv` or later (undefined: not yet). */
  const heldAt = (key: string, rv: bigint) => seen.get(key)?.find((e) => e.rv >= rv)?.at;
  return {
    cached(key: string, resourceVersion: string | undefined) {
      const list = seen.get(key) ?? [];
      list.push({ rv: BigInt(resourceVersion ?? 0), at: performance.now() });
      seen.set(key, list.slice(-50));
      notify();
    },
    ended(outcome: ReconcileOutcome, seconds: number, key: string) {
      passes.push({ key, began: performance.now() - seconds * 1000, outcome });
      if (passes.length > 1000) passes.shift();
      notify();
    },
    /** The first pass over `key` that began after the cache held `rv` (or after now); waits for it. */
    after(key: string, rv: bigint | undefined, timeoutMs: number): Promise<ReconcileOutcome> {
      const asked = performance.now();
      return new Promise((resolve, reject) => {
        const check = () => {
          const since = rv === undefined ? asked : heldAt(key, rv);
          const pass = since === undefined ? undefined : passes.find((p) => p.key === key && p.began >= since);
          if (!pass) return;
          wake.delete(check);
          clearTimeout(timer);
          resolve(pass.outcome);
        };
        const timer = setTimeout(() => {
          wake.delete(check);
          reject(
            new Error(
              `no pass over ${key} began${rv ? ` after resourceVersion ${rv}` : ""} and ended in ${timeoutMs} ms`,
            ),
          );
        }, timeoutMs);
        wake.add(check);
        check();
      });
    },
  };
}

/**
 * Creates Machines (newer NIO shape) with labels and an SSH key Secret reference, on hosts 127.0.<block>.2, .3, …
 * The default block 10 is shared by every file that binds nothing on its Machines' addresses; a test that runs
 * workload clusters (API servers, etcd members on the hosts' addresses) passes a block of its own.
 */
export async function createMachines(
  client: KubeClient,
  namespace: string,
  names: string[],
  labels: Record<string, string> = {},
  block = 10,
): Promise<void> {
  let i = 0;
  for (const name of names) {
    i++;
    await client.create<Machine>(MACHINES, {
      metadata: { name, namespace, labels },
      spec: {
        host: `127.0.${block + Math.floor(i / 200)}.${(i % 200) + 1}`,
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
