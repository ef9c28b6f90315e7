/**
 * One test's world on the real API server: the run's control plane (or one
 * the test brings), a namespace of its own, the simulated NIO of either
 * generation, optionally workload clusters (API servers and kubelets, see
 * ./workload.ts) fed by the simulator's hooks, and NICO, all stopped by
 * `Symbol.asyncDispose` however the test ends: the test says `await using`.
 *
 * NICO is reached only through {@link startNico} (./nico.ts), the one place
 * that knows the controller's options.
 *
 * @example
 * ```ts
 * await using w = await world("blocked", { nio: { applyDelayMs: 100 }, nico: { defaultGitRepo: null } });
 * await createMachines(w.client, w.ns, ["cp-1"]);
 * await w.until("Ready", (c) => c.status?.phase === "Ready");
 * ```
 * @module
 */
import type { KubernetesCluster } from "../crds/kubernetescluster.ts";
import { KUBERNETES_CLUSTERS } from "../crds/kubernetescluster.ts";
import type { NioGeneration } from "../core/contract/nio.ts";
import type { KubeClient } from "../lib/kube/client.ts";
import type { ReconcileOutcome } from "../lib/runtime/controller.ts";
import type { ControlPlane } from "./envtest/controlplane.ts";
import { sharedControlPlane } from "./helpers.ts";
import { watchUntil } from "./watch.ts";
import { type NicoTestOptions, type RunningNico, settled, startNico } from "./nico.ts";
import { type SimNio, type SimNioOptions, startSimNio } from "./sim-nio.ts";
import { type WorkloadClusterOptions, type WorkloadClusters, workloadClusters } from "./workload.ts";

/** What a world runs; every part has a default. */
export interface WorldOptions {
  /** The control plane (default: the run's shared one). The world never stops it. */
  cp?: ControlPlane;
  /** An existing namespace to work in (default: a fresh `<prefix>-<random>`). */
  namespace?: string | undefined;
  /** Which NIO the simulator plays and NICO is told (default `v1`). */
  generation?: NioGeneration;
  /** The simulated NIO's options (its namespace is the world's); `false`: none is started. */
  nio?: Omit<SimNioOptions, "namespace" | "generation"> | false;
  /**
   * NICO's options (its namespace is the world's); `false`: not started now (see {@link World.startNico}). Progress
   * is held back {@link WORLD_STATUS_DELAY_MS} unless `statusDelayMs` says otherwise.
   */
  nico?: Omit<NicoTestOptions, "namespace" | "nio"> | false;
  /** Workload clusters fed by the simulator's hooks (which run before the `nio` option's own hooks). */
  workloads?: WorkloadClusterOptions | true;
}

/** One test's world; `await using` stops what it started, last started first. */
export interface World extends AsyncDisposable {
  readonly cp: ControlPlane;
  readonly client: KubeClient;
  /** The world's own namespace. */
  readonly ns: string;
  readonly generation: NioGeneration;
  /** The running simulated NIO (throws when none runs). */
  readonly nio: SimNio;
  /** The running NICO (throws when none runs). */
  readonly nico: RunningNico;
  /** The workload clusters (throws unless the world has them). */
  readonly workloads: WorkloadClusters;
  /** Starts NICO with these options over the world's (stopping the one running first); answers it. */
  startNico(opts?: Omit<NicoTestOptions, "namespace" | "nio">): Promise<RunningNico>;
  /** Stops NICO (a restart: {@link startNico} again). */
  stopNico(): Promise<void>;
  /** Starts the simulated NIO with these options over the world's (stopping the one running first). */
  startNio(opts?: Omit<SimNioOptions, "namespace" | "generation">): Promise<SimNio>;
  /** Stops the simulated NIO. */
  stopNio(): Promise<void>;
  /** Stops `stop` with the world (before NICO and NIO): informers, git servers, processes the test started. */
  defer(stop: () => Promise<unknown> | unknown): void;
  /** Cluster `name` (default `c`) as stored now. */
  cluster(name?: string): Promise<KubernetesCluster | undefined>;
  /**
   * Waits until `pred` holds for cluster `name` (default `c`), checking each version a watch brings; answers it,
   * or fails with its conditions.
   */
  until(
    what: string,
    pred: (c: KubernetesCluster) => unknown,
    timeoutMs?: number,
    name?: string,
  ): Promise<KubernetesCluster>;
  /** Makes NICO look at cluster `name` (default `c`) once more and waits for that pass (see {@link settled}). */
  settled(name?: string): Promise<ReconcileOutcome>;
}

const env = sharedControlPlane();

/**
 * How long a world's NICO holds progress back: a second, not NICO's ten (STATUS_DELAY_MS of core/status/write.ts).
 * Tests wait on counts and conditions that are progress (UpToDate, NodesHealthy, the columns); the tests of the
 * coalescing itself (quiet_status_test) and of what GitOps readers see (gitops_status_test) ask for NICO's own.
 */
export const WORLD_STATUS_DELAY_MS = 1_000;

/** Waits (on a watch) until `pred` holds for cluster `name` of `ns`; a timeout names its phase and conditions. */
async function until(
  client: KubeClient,
  at: { ns: string; name: string },
  what: string,
  pred: (c: KubernetesCluster) => unknown,
  timeoutMs: number,
): Promise<KubernetesCluster> {
  let last: KubernetesCluster | undefined;
  const t0 = Date.now();
  try {
    const c = await watchUntil<KubernetesCluster>(client, {
      resource: KUBERNETES_CLUSTERS,
      namespace: at.ns,
      name: at.name,
      what,
      pred,
      timeoutMs,
      seen: (c) => last = c,
    });
    if (Deno.env.get("NICO_TEST_WAITS")) console.error(`WAIT ${((Date.now() - t0) / 1000).toFixed(1)} s ${what}`);
    return c;
  } catch (err) {
    const conds = (last?.status?.conditions ?? []).map((c) => `  ${c.type}=${c.status} ${c.reason}: ${c.message}`);
    throw new Error(`${(err as Error).message}\nphase ${last?.status?.phase}\n${conds.join("\n")}`);
  }
}

/** The simulator's options with the workload clusters' hooks first, then the test's own. */
function withWorkloads(o: SimNioOptions, workloads: WorkloadClusters | undefined): SimNioOptions {
  if (!workloads) return o;
  const chain = (first: NonNullable<SimNioOptions["onApplied"]>, then: SimNioOptions["onApplied"]) =>
    then
      ? async (...args: Parameters<typeof first>) => {
        await first(...args);
        await then(...args);
      }
      : first;
  return {
    ...o,
    onBootstrapApplied: chain(workloads.onBootstrapApplied, o.onBootstrapApplied),
    onApplied: chain(workloads.onApplied, o.onApplied),
    onApplyStarted: chain(workloads.onApplyStarted, o.onApplyStarted),
    onRemoved: chain(workloads.onRemoved, o.onRemoved),
  };
}

/**
 * A world in a fresh namespace `<prefix>-<random>` (or the one given): the simulated NIO and
 * NICO running in it (unless told not to), workload clusters if asked.
 */
export async function world(prefix: string, opts: WorldOptions = {}): Promise<World> {
  const cp = opts.cp ?? await env.get();
  const client = cp.client;
  const ns = opts.namespace ?? await cp.namespace(prefix);
  const generation = opts.generation ?? "v1";
  const workloads = opts.workloads
    ? workloadClusters(client, opts.workloads === true ? {} : opts.workloads)
    : undefined;
  const deferred: (() => Promise<unknown> | unknown)[] = [];
  let nio: SimNio | undefined;
  let nico: RunningNico | undefined;
  const running = <T>(what: string, v: T | undefined): T => {
    if (v === undefined) throw new Error(`the world of ${ns} has no ${what} running`);
    return v;
  };
  const get = (name = "c") => client.get<KubernetesCluster>(KUBERNETES_CLUSTERS, name, ns);
  const w: World = {
    cp,
    client,
    ns,
    generation,
    get nio() {
      return running("simulated NIO", nio);
    },
    get nico() {
      return running("NICO", nico);
    },
    get workloads() {
      return running("workload clusters", workloads);
    },
    async startNico(o = {}) {
      await w.stopNico();
      const base = { statusDelayMs: WORLD_STATUS_DELAY_MS, ...(opts.nico || {}) };
      return nico = startNico(client, { ...base, ...o, namespace: ns, nio: generation });
    },
    async stopNico() {
      const n = nico;
      nico = undefined;
      await n?.stop();
    },
    async startNio(o = {}) {
      await w.stopNio();
      const base = { ...(opts.nio || {}), ...o, namespace: ns, generation };
      return nio = startSimNio(client, withWorkloads(base, workloads));
    },
    async stopNio() {
      const n = nio;
      nio = undefined;
      await n?.stop();
    },
    defer(stop) {
      deferred.push(stop);
    },
    cluster: get,
    until: (what, pred, timeoutMs = 60_000, name = "c") => until(client, { ns, name }, what, pred, timeoutMs),
    settled(name = "c") {
      return settled(client, w.nico, ns, name);
    },
    async [Symbol.asyncDispose]() {
      const stack = new AsyncDisposableStack();
      if (workloads) stack.defer(() => workloads.stop());
      stack.defer(() => w.stopNio());
      stack.defer(() => w.stopNico());
      for (const stop of deferred.splice(0)) stack.defer(async () => void await stop());
      await stack.disposeAsync();
    },
  };
  if (opts.nio !== false) await w.startNio();
  if (opts.nico !== false) await w.startNico();
  return w;
}

/**
 * `w` with what `build` adds to it (a fixture's Machines, a cluster brought up, helpers). If `build` throws, `w` is
 * stopped before the error goes on: the test has no `await using` on it yet.
 *
 * @example
 * ```ts
 * const up = await extend(await world("ca"), async (w) => {
 *   await createMachines(w.client, w.ns, ["cp-1"]);
 *   return { secret: (name: string) => w.client.get(SECRETS, name, w.ns) };
 * });
 * ```
 */
export async function extend<T extends object>(w: World, build: (w: World) => Promise<T> | T): Promise<World & T> {
  try {
    return Object.assign(w, await build(w));
  } catch (err) {
    await w[Symbol.asyncDispose]();
    throw err;
  }
}
