/**
 * What NICO remembers about a cluster between passes, in one place. Each
 * KubernetesCluster (by `namespace/name`, for one uid) has one
 * {@link ClusterMemory}, handed to every pass in its scope; everything else
 * a pass knows it reads again from the API objects. {@link ClusterMemories}
 * holds them and drops a cluster's in one place, {@link ClusterMemories.forget}:
 * when a pass finds the cluster gone, and when its deletion completes. A
 * cluster deleted and created again under the same name (another uid)
 * starts with nothing remembered. {@link ClusterMemories.forgetAll} drops
 * every cluster's at once, when this replica stops leading.
 *
 * A cluster's etcd observer lives in its memory and is closed with it, and
 * so do its backup job and a restore's safety snapshot (aborted).
 *
 * Two things stay shared across clusters by nature, and are released here
 * with the rest: the workload connection cache (one connection per cluster,
 * at most `maxOpen`; closed on forget) and the revision tracker (one commit
 * lookup per repository and ref, for every cluster tracking it; a cluster's
 * use is released on forget, and a revision no cluster uses is dropped).
 *
 * @module
 */
import { WarningLimiter } from "./problem.ts";
import { Races } from "./races.ts";
import type { RevisionTracker } from "./revisions.ts";
import { RunFailures } from "./runs.ts";
import type { WorkloadCache } from "./workload/cache.ts";
import type { EtcdObserver } from "./etcd/observer.ts";
import type { BackupKeeper } from "./backup/keeper.ts";
import type { SafetyJob } from "./restore/safety_job.ts";

/**
 * Everything NICO keeps about one cluster between its passes. Keyed within
 * the cluster (by machine, plane or Job), never by the cluster again.
 */
export class ClusterMemory {
  /** `namespace/name` of the cluster. */
  readonly key: string;
  /** The uid of the cluster this memory is of (absent for a cluster never stored, as in tests). */
  readonly uid: string | undefined;
  /** The Warning last told about the cluster's problem: the same one is told again only after 10 minutes. */
  readonly problems: WarningLimiter = new WarningLimiter();
  /** The phase last announced by an Event: a stale cache does not announce it twice. */
  announcedPhase: string | undefined;
  /** The halt (the `Stalled` message) last announced by a Warning Event: told once per halt. */
  announcedStall: string | undefined;
  /** Races lost in a row (claims, a stale cache), for their backoff. */
  readonly races: Races = new Races();
  /** When a progress-only status change was first held back (ms since the epoch); undefined: none is held. */
  heldSince: number | undefined;
  /** The resourceVersion of the status NICO last wrote: that write's own watch event needs no reconcile. */
  ownStatus: string | undefined;
  /** Remediation refusals told, by plane: told again when the reason changes, or after 10 minutes. */
  readonly refusals: WarningLimiter = new WarningLimiter();
  /** The steps told of each remediation in flight, by machine (`RemediationFinished` once it is gone). */
  readonly remediationSteps: Map<string, Set<string>> = new Map();
  /** Drains: what each waits for as last told (by machine) and the cordon told (by `<machine>/cordon`). */
  readonly drainNotes: WarningLimiter = new WarningLimiter();
  /** When each claimed Machine (by name) was first seen free of configurations; see core/machines/release.ts. */
  readonly freeSince: Map<string, number> = new Map();
  /** NIO v1: why the failing runs of this cluster's nodes failed (read from their Pods once per attempt). */
  readonly runFailures: RunFailures = new RunFailures();
  /** The cluster's etcd observer (controllers/cluster/etcd/observer.ts), once opened; closed when forgotten. */
  etcd: EtcdObserver | undefined;
  /** The cluster's etcd backups (controllers/cluster/backup/keeper.ts), while `spec.etcd.backup` is set. */
  backup: BackupKeeper | undefined;
  /** A restore's safety snapshot under way or just ended (controllers/cluster/restore/safety.ts). */
  safety: SafetyJob | undefined;
  /**
   * How many voting members NICO's last look that saw etcd's members counted; undefined: it has not seen them since
   * it started (controllers/cluster/phases/etcd.ts).
   */
  etcdSeenVoters: number | undefined;
  /** Since when (ms) NICO has not seen etcd's members, after it saw them (controllers/cluster/phases/etcd.ts). */
  etcdUnseenSince: number | undefined;
  /** When NICO first saw each etcd member that had not started, or was a learner (by member id). */
  readonly etcdPending: Map<string, Date> = new Map();
  /** etcd membership changes told as blocked or failed: told again when that changes (or after 10 minutes). */
  readonly etcdNotes: WarningLimiter = new WarningLimiter();
  /**
   * Argo CD registration (`--argocd-namespace`): a digest of the cluster Secret NICO last wrote or found as it
   * should be (`deleted` once deletion removed it; undefined: not known yet, looked up on the next pass).
   */
  argoCd: string | undefined;
  /**
   * Whether this replica found the cluster's children all in its caches, labelled for its shard (adopt.ts): looked
   * for once, on the cluster's first pass here.
   */
  adopted = false;
  /** Argo CD registration failures told: told again when the message changes, or after 10 minutes. */
  readonly argoCdWarnings: WarningLimiter = new WarningLimiter();

  constructor(key: string, uid: string | undefined) {
    this.key = key;
    this.uid = uid;
  }
}

/** What {@link ClusterMemories} releases with a cluster's memory. */
export interface ClusterMemoriesOptions {
  /** The workload connections: a forgotten cluster's is closed. */
  workloads?: WorkloadCache | undefined;
  /** The Git revisions clusters track: a forgotten cluster's use is released. */
  revisionTracker?: RevisionTracker | undefined;
}

/**
 * The memories of every cluster this replica reconciles.
 *
 * @example
 * ```ts
 * import { ClusterMemories } from "./memory.ts";
 * const memories = new ClusterMemories();
 * memories.of("infra/prod", "uid-1").announcedPhase = "Ready";
 * memories.of("infra/prod", "uid-1").announcedPhase; // "Ready"
 * memories.of("infra/prod", "uid-2").announcedPhase; // undefined: created again under the same name
 * memories.forget("infra/prod");
 * memories.size; // 0
 * ```
 */
export class ClusterMemories {
  readonly #byKey = new Map<string, ClusterMemory>();
  readonly #o: ClusterMemoriesOptions;

  constructor(options: ClusterMemoriesOptions = {}) {
    this.#o = options;
  }

  /**
   * The memory of cluster `key` with uid `uid`, made empty on first use. A memory of another uid (the
   * cluster was deleted and created again before a pass saw it gone) is forgotten first.
   */
  of(key: string, uid: string | undefined): ClusterMemory {
    const known = this.#byKey.get(key);
    if (known && known.uid === uid) return known;
    if (known) this.forget(key);
    const fresh = new ClusterMemory(key, uid);
    this.#byKey.set(key, fresh);
    return fresh;
  }

  /** The memory of cluster `key`, if it has one; never makes one (for event filters). */
  peek(key: string): ClusterMemory | undefined {
    return this.#byKey.get(key);
  }

  /** Drops everything remembered about cluster `key`: its memory (its etcd observer closed), its workload connection, its revision. */
  forget(key: string): void {
    this.#byKey.get(key)?.etcd?.close().catch(() => {});
    this.#byKey.get(key)?.backup?.stop().catch(() => {});
    this.#byKey.get(key)?.safety?.stop();
    this.#byKey.delete(key);
    this.#o.workloads?.close(key);
    this.#o.revisionTracker?.release(key);
  }

  /**
   * Forgets every cluster (this replica stopped leading: another one reconciles them now), with every
   * workload connection and tracked revision, whether or not its cluster had a memory.
   */
  forgetAll(): void {
    const keys = new Set([
      ...this.#byKey.keys(),
      ...this.#o.workloads?.keys() ?? [],
      ...this.#o.revisionTracker?.clusters() ?? [],
    ]);
    for (const key of keys) this.forget(key);
  }

  /** Closes every cluster's etcd observer and waits until they are closed (shutting down). */
  async closeEtcd(): Promise<void> {
    await Promise.all([...this.#byKey.values()].map((m) => m.etcd?.close()));
  }

  /** How many clusters have a memory. */
  get size(): number {
    return this.#byKey.size;
  }

  /** The clusters (`namespace/name`) with a memory, sorted. */
  keys(): string[] {
    return [...this.#byKey.keys()].sort();
  }

  /**
   * Every cluster something is kept for, by where: a memory, a workload connection, a tracked revision
   * (sorted; what a test checks is empty once the clusters are gone).
   */
  kept(): { memories: string[]; workloads: string[]; revisions: string[] } {
    return {
      memories: this.keys(),
      workloads: this.#o.workloads?.keys() ?? [],
      revisions: this.#o.revisionTracker?.clusters() ?? [],
    };
  }
}
