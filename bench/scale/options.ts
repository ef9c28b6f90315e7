/** The scale benchmark's flags. */
import { parseArgs } from "node:util";
import { ROOT } from "./util.ts";

// ---------------------------------------------------------------- options

export interface Size {
  clusters: number;
  machinesPerCluster: number;
}

export interface Options {
  sizes: Size[];
  cp: number;
  idleSeconds: number;
  rolloutClusters: number;
  rolloutApplyMs: number;
  concurrency: number;
  workers: number | undefined;
  /** NICO processes, one per shard (`--shard`), clusters labelled round-robin; 1: one NICO, no labels. */
  shards: number;
  namespaces: number;
  timeoutSeconds: number;
  /** `--v8-flags` for NICO: those of deploy/v8-flags (the image's) unless told otherwise; undefined: none. */
  nicoV8Flags: string | undefined;
  /** Clusters per provisioning mode in the modes phase (0: skipped), and the simulated apply time there. */
  modesClusters: number;
  modesApplyMs: number;
  /** Which NIO the simulator behaves like, and NICO is told it runs against. */
  nio: "v1" | "older";
  /** Each simulated apply takes up to this much longer, by node: nodes finish at different times. */
  jitterMs: number;
  /** Run the webhook's open-loop benchmark (bench/webhook.ts --scenario perf) for its target row. */
  webhook: boolean;
  /** Measure the ceilings after each size (`--skip-ceiling`: not, e.g. to compare shards with shards). */
  ceiling: boolean;
  nicoLogLevel: string;
  keep: boolean;
  out: string;
  quick: boolean;
}

export const USAGE = `Usage: deno run -A bench/scale.ts [flags]
  --clusters N               clusters at the largest size (default 200)
  --machines-per-cluster M   machines per cluster (default 5)
  --cp C                     control-plane machines per cluster; the rest are workers (default 1)
  --sizes LIST               sizes to run, e.g. 20x5,200x5 (default 20xM and NxM)
  --idle-seconds S           idle window after everything is Ready (default 60)
  --rollout-clusters R       clusters in the rollout phase, 0 to skip (default 50)
  --rollout-apply-ms D       simulated apply time during the rollout phase (default 2000)
  --concurrency K            requests in flight for the ceiling and the benchmark's own creates (default 32)
  --workers W                NICO's --workers (default: NICO's default, the CPU count from 2 to 16)
  --shards S                 run S NICO processes, one per shard: the default shard and s1..s(S-1), clusters
                             labelled nico.homystack.com/shard round-robin (default 1: one NICO, no labels)
  --namespaces K             spread clusters over K namespaces, one simulated NIO each (default 8; one
                             simulated NIO reconciles one object at a time and becomes the bottleneck)
  --timeout-seconds T        give up waiting for a phase after T seconds (default 300)
  --nico-v8-flags FLAGS      run NICO with deno --v8-flags=FLAGS (default: deploy/v8-flags, the image's;
                             "none" for V8's defaults)
  --modes-clusters N         clusters per provisioning mode (BootstrapFirst, Parallel) at the end, 0 to skip
                             (default 10)
  --modes-apply-ms D         simulated apply time in the modes phase (default 5000)
  --nio GENERATION           the simulated NIO: v1 (NIO v1's runs, the default) or older
  --jitter-ms J              each simulated apply takes up to J ms longer, by node, so nodes finish at
                             different times as real hosts do (default 2000; 0 for lockstep)
  --skip-ceiling             do not measure the ceilings (no ratios; e.g. to compare shards with one NICO)
  --skip-webhook             do not run the webhook's open-loop benchmark for its target row
  --nico-log-level LEVEL     NICO's --log-level (default info)
  --keep                     keep the temporary folders (NICO's log, the audit log) and print where
  --out DIR                  where the JSON goes (default bench/results)
  --quick                    smoke run: 20x5, idle 10 s, rollout 5 clusters, 3 clusters per mode`;

export function parseOptions(args: string[]): Options {
  const { values } = parseArgs({
    args,
    options: {
      clusters: { type: "string" },
      "machines-per-cluster": { type: "string" },
      cp: { type: "string" },
      sizes: { type: "string" },
      "idle-seconds": { type: "string" },
      "rollout-clusters": { type: "string" },
      "rollout-apply-ms": { type: "string" },
      concurrency: { type: "string" },
      workers: { type: "string" },
      shards: { type: "string" },
      namespaces: { type: "string" },
      "timeout-seconds": { type: "string" },
      "nico-v8-flags": { type: "string" },
      "modes-clusters": { type: "string" },
      "modes-apply-ms": { type: "string" },
      "skip-webhook": { type: "boolean", default: false },
      "skip-ceiling": { type: "boolean", default: false },
      nio: { type: "string" },
      "jitter-ms": { type: "string" },
      "nico-log-level": { type: "string" },
      keep: { type: "boolean", default: false },
      out: { type: "string" },
      quick: { type: "boolean", default: false },
      help: { type: "boolean", short: "h", default: false },
    },
  });
  if (values.help) {
    console.log(USAGE);
    Deno.exit(0);
  }
  const int = (v: string | undefined, d: number, min = 0) => {
    if (v === undefined) return d;
    const n = Number(v);
    if (!Number.isInteger(n) || n < min) throw new Error(`expected an integer >= ${min}, got '${v}'\n${USAGE}`);
    return n;
  };
  const quick = values.quick ?? false;
  const m = int(values["machines-per-cluster"], 5, 1);
  const n = int(values.clusters, quick ? 20 : 200, 1);
  const cp = int(values.cp, 1, 1);
  if (cp > m) throw new Error(`--cp ${cp} is more than --machines-per-cluster ${m}`);
  const sizes: Size[] = values.sizes
    ? values.sizes.split(",").map((s) => {
      const [c, mm] = s.split("x").map(Number);
      if (!Number.isInteger(c) || !Number.isInteger(mm) || c! < 1 || mm! < cp) {
        throw new Error(`bad size '${s}': expected CLUSTERSxMACHINES, e.g. 200x5`);
      }
      return { clusters: c!, machinesPerCluster: mm! };
    })
    : [...new Set(quick ? [n] : [Math.min(20, n), n])].map((c) => ({ clusters: c, machinesPerCluster: m }));
  sizes.sort((a, b) => a.clusters * a.machinesPerCluster - b.clusters * b.machinesPerCluster);
  return {
    sizes,
    cp,
    idleSeconds: int(values["idle-seconds"], quick ? 10 : 60),
    rolloutClusters: int(values["rollout-clusters"], quick ? 5 : 50),
    rolloutApplyMs: int(values["rollout-apply-ms"], 2000, 1),
    concurrency: int(values.concurrency, 32, 1),
    workers: values.workers === undefined ? undefined : int(values.workers, 2, 1),
    shards: int(values.shards, 1, 1),
    namespaces: int(values.namespaces, 8, 1),
    timeoutSeconds: int(values["timeout-seconds"], 300, 1),
    nicoV8Flags: values["nico-v8-flags"] === "none" ? undefined : values["nico-v8-flags"] ?? deploymentV8Flags(),
    modesClusters: int(values["modes-clusters"], quick ? 3 : 10),
    modesApplyMs: int(values["modes-apply-ms"], 5000, 1),
    nio: nioOption(values.nio),
    jitterMs: int(values["jitter-ms"], 2000),
    webhook: !values["skip-webhook"],
    ceiling: !values["skip-ceiling"],
    nicoLogLevel: values["nico-log-level"] ?? "info",
    keep: values.keep ?? false,
    out: values.out ?? `${ROOT}bench/results`,
    quick,
  };
}

function nioOption(v: string | undefined): "v1" | "older" {
  if (v === undefined || v === "v1" || v === "older") return v ?? "v1";
  throw new Error(`--nio must be v1 or older, got '${v}'\n${USAGE}`);
}

/** The V8 flags NICO's binary is built with (`deploy/v8-flags`, which the Deployment also sets): what it runs with when installed. */
export function deploymentV8Flags(): string | undefined {
  return Deno.readTextFileSync(`${ROOT}deploy/v8-flags`).trim() || undefined;
}
