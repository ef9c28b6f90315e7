/**
 * What every part of the simulated NIO shares: its options, the API client,
 * the work queue, the clock and the record of what it did.
 *
 * @module
 */
import type { KubeClient, KubeObject } from "../../lib/kube/client.ts";
import type { Machine, NioGeneration, NixosConfiguration } from "../../core/contract/nio.ts";
import type { SimClock } from "./clock.ts";
import type { WorkQueue } from "./loop.ts";

/** Called when an apply finished, before NIO reports it (so the host "is up" when NICO sees Ready). */
export type ApplyHook = (cfg: NixosConfiguration, machine: Machine) => Promise<void>;

export interface SimNioOptions {
  /** Watch only this namespace (default: all). */
  namespace?: string;
  /** Which NIO to behave like (default `v1`). */
  generation?: NioGeneration;
  /** How long a switch takes (default 300 ms); with v1, how long each run's Pod runs. */
  applyDelayMs?: number;
  /** Each run (v1) or apply (older) takes up to this much longer, by its name (default 0): nodes finish at different times. */
  jitterMs?: number;
  /** How long applying `onRemoveFlake` takes on deletion (default 200 ms). */
  removeDelayMs?: number;
  /**
   * v1: real milliseconds one minute of NIO's own time lasts (default 1000): cron ticks (`*\/30` every 30 s),
   * Kubernetes' Job back-off (10 s is 167 ms) and the decommission Job's TTL run that much faster.
   */
  minuteMs?: number;
  /**
   * v1: after a configuration's removal finished, NIO's next reconcile, still seeing the configuration in its
   * cache, starts a second decommission NixJob that nobody removes and that runs `onRemoveFlake` again
   * whenever its Job expires (seen on the real NIO v1 in 2 of 70 deletions, so rare but real; here every time,
   * the worst case for NICO). Default true.
   */
  decommissionLeak?: boolean;
  /**
   * A run fails when the configuration sends `cluster.nix` but not where a flake in `configurationSubdir`
   * reads it (`<subdir>/cluster.nix` with v1, which writes files at the checkout root). Default true.
   */
  requireFlakeFiles?: boolean;
  /** v1: how often (real ms) NIO re-probes each Machine and rewrites its status (default 60 s; 0: never). */
  machineProbeMs?: number;
  /** Mark every Machine discoverable on sight unless it carries the undiscoverable annotation (default true). */
  discoverAll?: boolean;
  /** On every successful apply of a configuration labelled `nico.homystack.com/bootstrap: "true"`, before `onApplied`. */
  onBootstrapApplied?: ApplyHook;
  /** On every successful apply. A throwing hook fails the apply and it is retried later. */
  onApplied?: ApplyHook;
  /** When an apply starts (the host restarts services); errors go to `onError`. */
  onApplyStarted?: ApplyHook;
  /** After the removal flake ran and the configuration is gone; errors go to `onError`. */
  onRemoved?: ApplyHook;
  /** Progress lines (default: dropped). */
  log?: (line: string) => void;
  /** Unexpected errors (default: `console.warn`). Conflicts and vanished objects are handled silently. */
  onError?: (err: unknown, what: string) => void;
}

export type SimEventKind =
  | "discovered"
  | "undiscoverable"
  | "blocked"
  | "apply-started"
  | "apply-failed"
  | "applied"
  | "remove-started"
  | "remove-finished"
  | "removed"
  | "run-created"
  | "leaked";

/** One thing the simulator did, for assertions on order and count. */
export interface SimEvent {
  at: number;
  kind: SimEventKind;
  namespace: string;
  name: string;
  generation?: number;
  detail?: string;
  /** A switch's events: NICO's hash of the spec the switch applies (its `nico.homystack.com/spec-hash`). */
  specHash?: string;
  /** v1: the run (Job) the event belongs to; a node may have two at once (a scheduled tick beside a new commit's). */
  run?: string;
}

/** The shared state of one simulator. */
export interface SimContext {
  kube: KubeClient;
  generation: NioGeneration;
  opts: SimNioOptions;
  clock: SimClock;
  queue: WorkQueue;
  signal: AbortSignal;
  history: SimEvent[];
  counters: { reconciles: number; writes: number; errors: number };
  /** Configurations as last seen by the informer, by `ns/name`. */
  configs: Map<string, NixosConfiguration>;
  /**
   * NIO v1 only: the Jobs as last seen by the informer, by the uid of each owner, then by `ns/name`. NIO v1 and the
   * CronJob controller read their runs from their caches (`r.List` on the manager's Job cache), never with a LIST
   * per reconcile; by owner, a reconcile reads its own runs without visiting every Job.
   */
  jobs: Map<string, Map<string, KubeObject>>;
  record(
    kind: SimEventKind,
    obj: { metadata: { namespace?: string; name: string; generation?: number; annotations?: Record<string, string> } },
    detail?: string,
    run?: string,
  ): void;
  /** Runs `p` beside the queue (hooks); `stop()` waits for it. */
  background(p: Promise<void>, what: string): void;
  onError(err: unknown, what: string): void;
}

/** The queue key of an object of `kind`. */
export function keyOf(kind: string, ns: string, name: string): string {
  return `${kind}/${ns}/${name}`;
}

/** Every cached configuration in `ns` that targets Machine `machine`. */
export function usersOf(ctx: SimContext, ns: string, machine: string | undefined): NixosConfiguration[] {
  if (!machine) return [];
  return [...ctx.configs.values()].filter((c) => c.metadata.namespace === ns && c.spec?.machineRef?.name === machine);
}
