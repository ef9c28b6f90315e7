/**
 * What one size of the scale benchmark measured: the shape of the JSON in
 * `bench/results/` and of the figures `docs/benchmark.md` quotes. Written
 * out, so a change to a phase that changes the JSON shows up here. The
 * leaves computed by small helpers (distributions, CPU, API server
 * counters, request tallies) are named after those helpers.
 *
 * @module
 */
import type { ShardFigures } from "./shards.ts";
import type { tally } from "./audit.ts";
import type { CeilingResult } from "./ceiling.ts";
import type { nicoControllerFigures } from "./nico.ts";
import type { apiserverWork, cpuDelta, dist } from "./util.ts";

/** Seconds: count, min, median, p90, p99, max (see `dist`). */
export type Distribution = ReturnType<typeof dist>;
/** CPU seconds and cores per process over a window. */
export type CpuFigures = ReturnType<typeof cpuDelta>;
/** The API server's request and watch counters over a window. */
export type ApiserverFigures = ReturnType<typeof apiserverWork>;
/** NICO's controller counters over a window (reconciles, queue). */
export type ControllerFigures = ReturnType<typeof nicoControllerFigures>;
/** Audit log requests by verb and resource. */
export type Tally = ReturnType<typeof tally>;

/** Provisioning every cluster of the size from nothing to Ready. */
export interface ProvisionFigures {
  clusters: number;
  machines: number;
  complete: boolean;
  createSeconds: number;
  allConfigurationsSeconds: number | null;
  allReadySeconds: number | null;
  clusterReadySeconds: Distribution;
  /** From a cluster's first to its last NixosConfiguration: what one-at-a-time ordering costs per cluster. */
  orderingSpanSeconds: Distribution;
  /** Bootstrap configuration created → applied by the simulated NIO (apply delay 0). */
  bootstrapApplySeconds: Distribution;
  /** Bootstrap applied → NICO creates the next configuration of the cluster. */
  nicoReactionSeconds: Distribution;
  cpu: CpuFigures;
  /** Everything the API server served meanwhile: NICO, the simulated NIO and the benchmark's watches. */
  apiserver: ApiserverFigures;
  nicoController: ControllerFigures;
}

/** The idle window after everything is Ready. */
export interface IdleWindow {
  settleSeconds: number;
  t0: number;
  t1: number;
  seconds: number;
  nicoCpuSeconds: number;
  nicoCpuPercent: number;
  nicoCpuPer10sSlice: number[];
  reconciles: number;
}

/** A spec change rolled out over `clusters` clusters with a simulated apply time. */
export interface RolloutFigures {
  clusters: number;
  machinesPerCluster: number;
  applyMs: number;
  provisioning: { seconds: number; minimumSeconds: number; steps: number };
  complete: boolean;
  seconds: number | null;
  minimumSeconds: number;
  sequentialSteps: number;
  ratio: number | null;
  overheadPerStepSeconds: number | null;
  clusterSeconds: Distribution;
  /** Previous node applied (or the spec change) → NICO updates the next node's configuration. */
  nicoReactionSeconds: Distribution;
  /** Configuration updated → applied, minus the apply delay: the simulated NIO's own latency. */
  nioLatencySeconds: Distribution;
}

/** The same objects written by the benchmark itself as fast as the API server takes them. */
export interface CeilingFigures extends CeilingResult {
  cpu: CpuFigures;
  apiserver: ApiserverFigures;
}

/** What NICO's informers hold, by resource. */
export type CacheFigures = Record<string, { objects: number; jsonMiB: number; managedFieldsMiB: number }>;

/** Everything one size measured. */
export interface SizeResult {
  /** `<clusters>x<machines per cluster>`. */
  size: string;
  machines: number;
  layout: { controlPlane: number; workers: number };
  provisioning: ProvisionFigures;
  ceiling:
    | (CeilingFigures & {
      withNicoExtras: CeilingFigures | null;
      withAllExtras: CeilingFigures | null;
      ratioReady: number | null;
      ratioConfigurations: number | null;
    })
    | null;
  api: {
    provisioning: {
      requests: number;
      writes: number;
      errors: number;
      requestsPerCluster: number;
      writesPerCluster: number;
      byVerbResource: Record<string, number>;
      /** Requests per cluster by verb and resource. */
      perCluster: Record<string, number>;
      errorCodes: Tally["errorCodes"];
    };
    afterReady: Tally & { seconds: number };
    idle: Tally & { writeRequests: string[] };
    rollout: Tally | null;
  };
  idle: {
    seconds: number;
    writes: number;
    requests: number;
    reconciles: number;
    nicoCpuSeconds: number;
    nicoCpuPercent: number;
    nicoCpuPer10sSlice: number[];
    settleSeconds: number;
  };
  memory: {
    baselineRssMiB: number | null;
    peakRssMiB: number | null;
    peakRssBeforeRolloutMiB: number | null;
    rssAfterIdleMiB: number | null;
    /** VmHWM of each NICO process after the idle window, the default shard's first (one entry without shards). */
    peakRssPerShardMiB: (number | null)[];
    /** After the idle window, each shard's own account (nico_process_memory_bytes): rss, heap_total, heap_used, external. */
    afterIdleByKindMiB: Record<string, number>[];
    cachedObjects: CacheFigures;
  };
  /** The independent shards check (`--shards` > 1). */
  shards: ShardFigures | null;
  rollout: (RolloutFigures & { window: undefined }) | null;
}
