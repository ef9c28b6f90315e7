/** NICO as a separate process for the scale benchmark: start, settle, controller figures. */
import { type ControlPlane } from "../../testing/envtest/controlplane.ts";
import { freePort, type Guarded, startGuarded } from "../../testing/envtest/process.ts";
import { findProgram } from "./procfs.ts";
import { delta, histogramQuantile, parseMetrics, type Sample, sum } from "./promtext.ts";
import { Options } from "./options.ts";
import { NICO_USER, ROOT, round, waitHttp } from "./util.ts";

// ---------------------------------------------------------------- NICO

export interface Nico {
  proc: Guarded;
  /** The first (default shard's) process. */
  pid: number;
  /** Every NICO process of the run, one per shard, the default shard's first. */
  pids: number[];
  metricsUrl: string;
  logPath: string;
  /** The samples of every shard's /metrics together (sums and deltas add up across shards). */
  metrics(): Promise<Sample[]>;
  /** Each shard's own /metrics, the default shard's first. */
  metricsEach(): Promise<Sample[][]>;
}

/**
 * `opts.shards` NICO processes: the default shard's, then `--shard=s1` and on (util.ts `shardOf` labels the
 * clusters). One shard is the plain single NICO. Answers them as one: metrics summed, stop stops all.
 */
export async function startNicos(cp: ControlPlane, dir: string, opts: Options): Promise<Nico> {
  const all: Nico[] = [];
  try {
    for (let k = 0; k < opts.shards; k++) all.push(await startNico(cp, dir, opts, k === 0 ? undefined : `s${k}`));
  } catch (err) {
    for (const n of all) await n.proc.stop();
    throw err;
  }
  if (all.length === 1) return all[0]!;
  const first = all[0]!;
  const proc: Guarded = {
    ...first.proc,
    name: "nico shards",
    exited: Promise.all(all.map((n) => n.proc.exited)).then((s) => s[0]!),
    stop: async () => {
      await Promise.all(all.map((n) => n.proc.stop()));
    },
    tail: async (lines?: number) =>
      (await Promise.all(all.map(async (n, k) => `-- shard ${k}:\n${await n.proc.tail(lines)}`))).join("\n"),
  };
  return {
    ...first,
    proc,
    pids: all.map((n) => n.pid),
    metrics: async () => (await Promise.all(all.map((n) => n.metrics()))).flat(),
    metricsEach: async () => await Promise.all(all.map((n) => n.metrics())),
  };
}

async function startNico(cp: ControlPlane, dir: string, opts: Options, shard?: string): Promise<Nico> {
  const kubeconfig = await cp.userKubeconfig(NICO_USER, ["system:masters"]);
  const metricsPort = freePort();
  const healthPort = freePort();
  const logPath = `${dir}/nico${shard ? `-${shard}` : ""}.log`;
  const proc = startGuarded(
    "nico",
    Deno.execPath(),
    [
      "run",
      "--allow-all",
      ...(opts.nicoV8Flags ? [`--v8-flags=${opts.nicoV8Flags}`] : []),
      `${ROOT}main.ts`,
      "run",
      `--kubeconfig=${kubeconfig}`,
      "--leader-elect=false",
      "--webhook-cert-mode=off",
      // The benchmark's git server is on loopback, which NICO refuses unless listed.
      "--git-allowed-hosts=127.0.0.1",
      // The simulated hosts run no workload API servers: NICO would wait for Nodes forever. The cost of
      // workload connections is measured alone by bench/workload.ts.
      "--workload-connections=false",
      "--workload-allowed-cidrs=127.0.0.0/8,::1",
      `--metrics-addr=127.0.0.1:${metricsPort}`,
      `--health-addr=127.0.0.1:${healthPort}`,
      `--log-level=${opts.nicoLogLevel}`,
      `--nio-generation=${opts.nio}`,
      ...(opts.workers ? [`--workers=${opts.workers}`] : []),
      ...(shard ? [`--shard=${shard}`] : []),
    ],
    logPath,
    { NICO_WORKLOAD_TARGETS: "loopback" },
  );
  await waitHttp(`http://127.0.0.1:${healthPort}/readyz`, proc, 60_000);
  const pid = await findProgram(proc.pid, "main.ts");
  const metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
  return {
    proc,
    pid,
    pids: [pid],
    metricsUrl,
    logPath,
    metrics: async () => parseMetrics(await (await fetch(metricsUrl)).text()),
    metricsEach: async () => [parseMetrics(await (await fetch(metricsUrl)).text())],
  };
}

/** Waits until NICO has reconciled nothing for `quietMs` with an empty queue; answers how long that took. */
export async function settle(nico: Nico, quietMs: number, timeoutMs: number): Promise<number> {
  const started = Date.now();
  let last = -1;
  let since = Date.now();
  while (Date.now() - started < timeoutMs) {
    const m = await nico.metrics();
    const n = sum(m, "controller_runtime_reconcile_total") + sum(m, "workqueue_adds_total");
    const depth = sum(m, "workqueue_depth");
    if (n !== last || depth > 0) {
      last = n;
      since = Date.now();
    } else if (Date.now() - since >= quietMs) {
      return since - started;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return Date.now() - started;
}

export function nicoControllerFigures(before: Sample[], after: Sample[], wallS: number, workers: number) {
  const d = (name: string, match: Record<string, string> = {}) => delta(before, after, name, match);
  const reconciles = d("controller_runtime_reconcile_total");
  const reconcileSeconds = d("controller_runtime_reconcile_time_seconds_sum");
  return {
    reconciles,
    /** Time spent in reconciles, all workers together. */
    reconcileSeconds: round(reconcileSeconds, 2),
    byResult: Object.fromEntries(
      ["success", "requeue", "error", "terminal"].map((
        r,
      ) => [r, d("controller_runtime_reconcile_total", { result: r })]),
    ),
    reconcileMeanMs: reconciles ? round((reconcileSeconds / reconciles) * 1000, 1) : null,
    reconcileP50s: histogramQuantile(before, after, "controller_runtime_reconcile_time_seconds", 0.5) ?? null,
    reconcileP99s: histogramQuantile(before, after, "controller_runtime_reconcile_time_seconds", 0.99) ?? null,
    queueAdds: d("workqueue_adds_total"),
    queueRetries: d("workqueue_retries_total"),
    queueWaitMeanMs: d("workqueue_queue_duration_seconds_count")
      ? round((d("workqueue_queue_duration_seconds_sum") / d("workqueue_queue_duration_seconds_count")) * 1000, 1)
      : null,
    /** Reconcile time over (workers × wall time): near 1 means the workers were the bottleneck. */
    workerUtilisation: round(reconcileSeconds / (workers * wallS), 2),
  };
}

/** NICO's own account of its memory (`nico_process_memory_bytes`), in MiB by kind: where its RSS goes. */
export function processMemoryMiB(samples: Sample[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const x of samples) {
    if (x.name === "nico_process_memory_bytes" && x.labels.kind) out[x.labels.kind] = round(x.value / 2 ** 20, 1);
  }
  return out;
}
