/**
 * The workload-cluster connection cache: at most one connection per
 * KubernetesCluster, opened lazily from the kubeconfig NICO issued, replaced
 * when that kubeconfig changes (re-signed, new endpoint), closed when the
 * cluster goes away, and bounded in number. Only the clusters NICO needed most
 * recently (at most `maxWatches`: core/nodes/watches.ts) watch their Nodes and
 * keep their sockets open; the others are polled once per probe round.
 *
 * @module
 */
import { errorMessage, type Logger, withFields } from "../../../lib/runtime/log.ts";
import { type ConnectionOptions, WorkloadConnection, type WorkloadView } from "./connection.ts";
import { workloadClients } from "./connect.ts";
import { type TargetPolicy, targetPolicy, type TargetRules } from "./targets.ts";
import { watchChanges, watchedClusters } from "../../../core/nodes/watches.ts";
import { RoundGate } from "./rounds.ts";

export interface WorkloadCacheOptions {
  /** A workload cluster's state changed: requeue the KubernetesCluster with this key. */
  onChange: (clusterKey: string) => void;
  log: Logger;
  /** At most this many open connections (default 2,000); more clusters see `Unknown` until one closes. */
  maxOpen?: number;
  /** At most this many connections watch their Nodes and keep their sockets (default 100); the others poll. */
  maxWatches?: number;
  /** At most this many polled rounds at once (default 32; a round that waited 2 s goes anyway: ./rounds.ts). */
  maxRounds?: number;
  /** Which endpoints may be reached (default: {@link targetPolicy}). */
  policy?: TargetPolicy;
  /** How often `/readyz` is asked (default 10 s); the deadline of one probe too. */
  probeIntervalMs?: number;
  /** Deadline of one request to a workload API (default 5 s). */
  requestTimeoutMs?: number;
  /** Stop watching Pods this long after the last drain (default 2 min). */
  podsIdleMs?: number;
  /** How often each control-plane node's own `/version` is asked again (default 15 s; also after each apply). */
  versionIntervalMs?: number;
  now?: () => Date;
}

interface Entry {
  kubeconfig: string;
  conn?: WorkloadConnection;
  error?: string;
  since: Date;
  /** When NICO last needed the cluster (performance clock). */
  neededAt: number;
}

/** The default of {@link WorkloadCacheOptions.maxOpen}. */
export const MAX_OPEN = 2_000;
/** The default of {@link WorkloadCacheOptions.maxWatches}. */
export const MAX_WATCHES = 100;

/** One shared, lazily opened connection per workload cluster. */
export class WorkloadCache {
  readonly #o: WorkloadCacheOptions;
  readonly #policy: TargetRules;
  readonly #now: () => Date;
  readonly #entries = new Map<string, Entry>();
  readonly #closing = new Set<Promise<void>>();
  #closingAll = false;
  /** The turns of polled rounds, shared with the etcd observers of idle clusters. */
  readonly rounds: RoundGate;

  constructor(o: WorkloadCacheOptions) {
    this.#o = o;
    this.#policy = targetPolicy(o.policy);
    this.#now = o.now ?? (() => new Date());
    this.rounds = new RoundGate(o.maxRounds ?? 32, 2_000);
  }

  /** Open connections. */
  get size(): number {
    return [...this.#entries.values()].filter((e) => e.conn).length;
  }

  /** The clusters with an entry, connected or not (what {@link close} would drop), sorted. */
  keys(): string[] {
    return [...this.#entries.keys()].sort();
  }

  /**
   * What is known about the cluster `key` whose current kubeconfig is
   * `kubeconfig` (undefined: none issued yet). Opens or replaces the
   * connection as needed; never waits on the network.
   */
  view(key: string, kubeconfig: string | undefined): WorkloadView {
    const now = this.#now();
    if (!kubeconfig) {
      this.close(key);
      return { api: { state: "Unknown", message: "no kubeconfig issued yet", since: now } };
    }
    let e = this.#entries.get(key);
    if (e && e.kubeconfig !== kubeconfig) {
      this.#o.log.info("workload kubeconfig changed: reconnecting", { cluster: key });
      this.close(key);
      e = undefined;
    }
    if (!e) {
      if (this.size >= (this.#o.maxOpen ?? MAX_OPEN)) {
        return {
          api: {
            state: "Unknown",
            message: `${this.size} workload connections are open, the most allowed; raise --max-workload-connections`,
            since: now,
          },
        };
      }
      e = this.#open(key, kubeconfig, now);
      this.#entries.set(key, e);
    }
    if (!e.conn) return { api: { state: "Unavailable", message: e.error ?? "not connected", since: e.since } };
    return e.conn.view();
  }

  #open(key: string, kubeconfig: string, now: Date): Entry {
    try {
      const timeouts = this.#o.requestTimeoutMs ? { timeoutMs: this.#o.requestTimeoutMs } : {};
      const { client, nodeClient } = workloadClients(kubeconfig, { policy: this.#policy, ...timeouts });
      const opts: ConnectionOptions = {
        client,
        onChange: () => this.#o.onChange(key),
        probeIntervalMs: this.#o.probeIntervalMs ?? 10_000,
        podsIdleMs: this.#o.podsIdleMs ?? 120_000,
        log: withFields(this.#o.log, { workload: key }),
        now: this.#now,
        nodeClient,
        versionIntervalMs: this.#o.versionIntervalMs,
        onNeeded: () => this.#need(key),
        rounds: this.rounds,
      };
      const conn = new WorkloadConnection(opts);
      // A watch if one is free; else polled until NICO needs the cluster (at start, the first opened watch).
      conn.start(this.watchingCount < (this.#o.maxWatches ?? MAX_WATCHES));
      return { kubeconfig, conn, since: now, neededAt: 0 };
    } catch (err) {
      this.#o.log.error("cannot connect to the workload cluster", { cluster: key, error: errorMessage(err) });
      return { kubeconfig, error: `cannot connect: ${errorMessage(err)}`, since: now, neededAt: 0 };
    }
  }

  /** NICO needs cluster `key` now: it watches, and the cluster needed least recently polls if over the budget. */
  #need(key: string): void {
    const e = this.#entries.get(key);
    if (!e?.conn) return;
    e.neededAt = performance.now();
    if (!e.conn.watching) this.#rebalance();
  }

  #rebalance(): void {
    const open = [...this.#entries].filter(([, e]) => e.conn);
    const watching = new Set(open.filter(([, e]) => e.conn!.watching).map(([k]) => k));
    const next = watchedClusters(
      open.map(([key, e]) => ({ key, neededAt: e.neededAt, watching: e.conn!.watching })),
      this.#o.maxWatches ?? MAX_WATCHES,
    );
    const { start, stop } = watchChanges(watching, next);
    for (const k of stop) void this.#entries.get(k)?.conn?.setWatching(false).catch(() => {});
    for (const k of start) void this.#entries.get(k)?.conn?.setWatching(true);
  }

  /** Whether cluster `key`'s connection watches its Nodes (false: polled, or none). */
  watching(key: string): boolean {
    return this.#entries.get(key)?.conn?.watching ?? false;
  }

  /** Connections that watch their Nodes. */
  get watchingCount(): number {
    return [...this.#entries.values()].filter((e) => e.conn?.watching).length;
  }

  /** The open connection of cluster `key`, for writes (cordon, evict, delete a Node). */
  connection(key: string): WorkloadConnection | undefined {
    return this.#entries.get(key)?.conn;
  }

  /** Closes the connection of cluster `key` in the background (its cluster was deleted, or its kubeconfig changed). */
  close(key: string): void {
    const e = this.#entries.get(key);
    if (!e) return;
    this.#entries.delete(key);
    if (!e.conn) return;
    if (e.conn.watching && !this.#closingAll) this.#rebalance(); // its watch goes to the next cluster
    const p = e.conn.close().catch(() => {});
    this.#closing.add(p);
    p.then(() => this.#closing.delete(p));
  }

  /** Closes every connection and waits until they are closed. */
  async closeAll(): Promise<void> {
    this.#closingAll = true;
    for (const key of [...this.#entries.keys()]) this.close(key);
    this.#closingAll = false;
    await Promise.all([...this.#closing]);
  }
}
