/**
 * The cluster controller's settings: every knob the controller, the
 * reconciler and its phases read, each with its one default
 * ({@link CLUSTER_DEFAULTS}). They are built once ({@link clusterSettings}),
 * by `nico run` from its flags (cli/run.ts copies every flag of the same name)
 * or by a test, and handed down: to the controller, then to every pass as part
 * of its dependencies (`s.deps.<knob>`, controllers/cluster/scope.ts).
 *
 * A new setting takes three files: its field and default here, its flag in
 * cli/options.ts (of the same name, its default taken from here), and the
 * phase that reads it.
 *
 * @module
 */
import type { NioGeneration } from "../../core/contract/nio.ts";
import { RELEASE_SETTLE_MS } from "../../core/machines/release.ts";
import { STATUS_DELAY_MS } from "../../core/status/write.ts";
import { RESTORE_URL_LIFETIME_MS } from "../../core/etcd/restore_url.ts";
import { ETCD_INTERVAL_MS, ETCD_TIMEOUT_MS } from "./etcd/observer.ts";

/** Every knob of the cluster controller. Durations are in milliseconds. */
export interface ClusterSettings {
  /** Watch only this namespace; `undefined`: every namespace. */
  namespace: string | undefined;
  /** Concurrent reconciles. */
  workers: number;
  /** `gitRepo` for clusters that name none. */
  defaultGitRepo: string | undefined;
  /** A node not applied this long after its last change is Failed, unless the spec says otherwise. */
  nodeTimeout: number;
  /** Pin each node to the commit `ref` resolves to (git ls-remote); off: `ref` is passed to NIO as written. */
  resolveRefs: boolean;
  /** How often a tracked ref is resolved again. */
  refPollInterval: number;
  /** With workload connections, how often each cluster's etcd is looked at. */
  etcdInterval: number;
  /** Deadline of one request to an etcd member. */
  etcdTimeout: number;
  /** Which NIO applies the configurations (`nico run` detects it). */
  nio: NioGeneration;
  /** NIO resources the API server did not serve when NICO started (core/contract/nioinstall.ts). */
  nioMissing: readonly string[];
  /** How long a freed Machine stays claimed for NIO to settle (core/machines/release.ts). */
  releaseSettle: number;
  /** The longest a progress-only status change is held back (core/status/write.ts). */
  statusDelay: number;
  /** Argo CD's namespace: NICO keeps an Argo CD cluster Secret there for each cluster; `undefined`: off. */
  argocdNamespace: string | undefined;
  /** The Argo CD project every registered cluster is scoped to; `undefined`: none. */
  argocdProject: string | undefined;
  /**
   * Label keys of a cluster copied onto its Argo CD Secret, comma-separated (a key, or a prefix ending in `/` or
   * `*`: core/render/argocd.ts); empty: none.
   */
  argocdLabelKeys: string;
  /** The shard this controller reconciles (core/contract/shards.ts); `undefined`: the default shard. */
  shard: string | undefined;
  /** How long the presigned URL of a backup given to the bootstrap node for a restore is valid. */
  restoreUrlLifetime: number;
}

/** The most workers the default gives: past that, the API server and NICO's client rate limit are the bound. */
export const MAX_DEFAULT_WORKERS = 16;

/**
 * The default `workers`: the CPUs the process may use (`navigator.hardwareConcurrency`, which follows a
 * container's CPU quota on Linux), at least 2 (a pass mostly waits on the API server) and at most
 * {@link MAX_DEFAULT_WORKERS}.
 *
 * @example
 * ```ts
 * import { defaultWorkers } from "./settings.ts";
 * defaultWorkers(1); // 2
 * defaultWorkers(8); // 8
 * defaultWorkers(96); // 16
 * ```
 */
export function defaultWorkers(cpus: number = navigator.hardwareConcurrency): number {
  const n = Number.isFinite(cpus) && cpus > 0 ? Math.floor(cpus) : 2;
  return Math.min(MAX_DEFAULT_WORKERS, Math.max(2, n));
}

/** The one default of every knob. */
export const CLUSTER_DEFAULTS: Readonly<ClusterSettings> = Object.freeze({
  namespace: undefined,
  workers: defaultWorkers(),
  defaultGitRepo: undefined,
  nodeTimeout: 30 * 60_000,
  resolveRefs: true,
  refPollInterval: 5 * 60_000,
  etcdInterval: ETCD_INTERVAL_MS,
  etcdTimeout: ETCD_TIMEOUT_MS,
  nio: "v1",
  nioMissing: [],
  releaseSettle: RELEASE_SETTLE_MS,
  statusDelay: STATUS_DELAY_MS,
  argocdNamespace: undefined,
  argocdProject: undefined,
  argocdLabelKeys: "",
  shard: undefined,
  restoreUrlLifetime: RESTORE_URL_LIFETIME_MS,
});

/** Values for some knobs (`undefined`: the default), among anything else. */
export type SettingValues = { [K in keyof ClusterSettings]?: ClusterSettings[K] | undefined } & Record<string, unknown>;

/**
 * The settings: `values` where they set a knob (by its name; anything else in `values` is ignored, so `nico run`
 * hands over its parsed flags whole), the default for the rest (a knob given as `undefined` too).
 *
 * @example
 * ```ts
 * import { clusterSettings } from "./settings.ts";
 * const s = clusterSettings({ nodeTimeout: 90_000, logLevel: "debug" });
 * [s.nodeTimeout, s.refPollInterval, "logLevel" in s]; // [90000, 300000, false]
 * ```
 */
export function clusterSettings(values: SettingValues = {}): ClusterSettings {
  const out: Record<string, unknown> = { ...CLUSTER_DEFAULTS };
  for (const key of Object.keys(CLUSTER_DEFAULTS)) if (values[key] !== undefined) out[key] = values[key];
  return out as unknown as ClusterSettings;
}
