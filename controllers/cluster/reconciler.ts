/**
 * The KubernetesCluster reconciler: the thin shell around the pure core.
 *
 * Shape: get the cluster (gone: done) → deleting? {@link reconcileDelete} →
 * ensure the finalizer → build the {@link ClusterScope} once (with the
 * cluster's {@link ClusterMemory}: all NICO keeps between passes) → run the
 * phases (pass.ts names every step and every write of a pass) → compute
 * the status with {@link clusterStatus} and write it, on every exit, error or
 * not. A known failure ({@link ClusterProblem}) or an unexpected error shows
 * up as `Ready=False` with its reason and a Warning Event; a lost claim race
 * is a plain requeue. Reads come from the informers' caches; every write is
 * either version-checked or idempotent, so a stale cache costs a retry,
 * never a double-booked Machine. A cluster found gone, or whose deletion
 * completed, is forgotten (controllers/cluster/memory.ts).
 *
 * @module
 */
import { KUBERNETES_CLUSTERS, type KubernetesCluster, KubernetesClusterSpec } from "../../crds/kubernetescluster.ts";
import type { EventRecorder } from "../../lib/events.ts";
import { haltedNow } from "../../core/status/halted.ts";
import type { KubeClient } from "../../lib/kube/client.ts";
import type { ReconcileResult } from "../../lib/runtime/controller.ts";
import type { Informer } from "../../lib/runtime/informer.ts";
import { splitKey } from "../../lib/runtime/keys.ts";
import { errorMessage, type Logger, withFields } from "../../lib/runtime/log.ts";
import { FINALIZER } from "../../core/contract/labels.ts";
import { canJudgeClusters, nioMissingMessage } from "../../core/contract/nioinstall.ts";
import { isConflict, isUnprocessable } from "../../lib/kube/errors.ts";
import { addFinalizer, testResourceVersion } from "../../lib/kube/patch.ts";
import type { DecommissionJob, Machine, NixosConfiguration } from "../../core/contract/nio.ts";
import type { BatchJob } from "../../core/nodes/runs.ts";
import type { NodeReport } from "../../core/nodes/readiness.ts";
import { clusterStatus, type ClusterStatusInput, type Problem } from "../../core/status/cluster.ts";
import { statusWrite } from "../../core/status/write.ts";
import { adoptChildren } from "./adopt.ts";
import { ClaimConflictError } from "./claims.ts";
import { reconcileDelete } from "./phases/delete.ts";
import { newRecord, passNodes, runPhases } from "./pass.ts";
import type { WorkloadCache } from "./workload/cache.ts";
import type { EtcdWatching } from "./etcd/observer.ts";
import { clusterCacheOf, indexClusterInformers } from "./indexes.ts";
import { ClusterMemories } from "./memory.ts";
import { ClusterProblem, problemOf } from "./problem.ts";
import type { RevisionTracker } from "./revisions.ts";
import { buildScope, type ClusterContext, type ClusterDeps, clusterDeps, type ClusterScope } from "./scope.ts";
import { BUSY_REQUEUE_MS, DRAIN_REQUEUE_MS, nextLook, type Requeue } from "./requeue.ts";
import type { Secret } from "./secrets.ts";
import type { ClusterSettings } from "./settings.ts";
import { passStatusInput, withHeld, withShard, writeStatus } from "./status.ts";
import { DEFAULT_SHARD } from "../../core/contract/shards.ts";
import { postEvent } from "../events.ts";
import { isEventReason } from "../../crds/events.ts";

export interface ClusterInformers {
  clusters: Informer<KubernetesCluster>;
  machines: Informer<Machine>;
  /** With shards: the shard's own clusters' configurations (their shard label); else every one. */
  configs: Informer<NixosConfiguration>;
  /**
   * With shards: every other configuration, trimmed to what says which Machine it targets and who owns it
   * (controller.ts `keepTargetOnly`): a Machine another shard's cluster (or someone else) configures is not free.
   */
  others?: Informer<NixosConfiguration>;
  /** NICO's Secrets: with shards, its own clusters' only. */
  secrets: Informer<Secret>;
  /** NIO v1: the batch Jobs of the namespace(s) (its runs among them). */
  jobs?: Informer<BatchJob>;
  /** NIO v1: its decommission NixJobs. */
  decommissions?: Informer<DecommissionJob>;
}

export interface ClusterReconcilerOptions {
  client: KubeClient;
  informers: ClusterInformers;
  recorder: EventRecorder;
  log: Logger;
  /** Every knob, built once (controllers/cluster/settings.ts); handed to every pass as part of its dependencies. */
  settings: ClusterSettings;
  /** Pins each node to the commit `ref` resolves to; absent: `ref` is passed to NIO as written. */
  revisionTracker?: RevisionTracker | undefined;
  /** Connections to workload clusters; absent: NICO does not look inside them. */
  workloads?: WorkloadCache | undefined;
  /** How NICO watches clusters' etcd; absent: it does not. */
  etcd?: EtcdWatching | undefined;
  now?: () => Date;
}

/** Look again this often while a problem only the user can fix stands in the way. */
const PROBLEM_REQUEUE_MS = 30_000;

/** What every exit of a pass needs: the dependencies, the cluster, what NICO remembers of it, the logger. */
type Exit = Pick<ClusterContext, "deps" | "memory" | "cluster" | "log">;

export class ClusterReconciler {
  readonly #o: ClusterReconcilerOptions;
  readonly #deps: ClusterDeps;
  readonly #now: () => Date;
  /** What NICO remembers about each cluster between passes; forgotten when a cluster is. */
  readonly memory: ClusterMemories;

  constructor(opts: ClusterReconcilerOptions) {
    this.#o = opts;
    indexClusterInformers(opts.informers);
    this.memory = new ClusterMemories({ workloads: opts.workloads, revisionTracker: opts.revisionTracker });
    this.#deps = clusterDeps(
      {
        client: opts.client,
        recorder: opts.recorder,
        revisionTracker: opts.revisionTracker,
        workloads: opts.workloads,
        etcd: opts.etcd,
      },
      opts.settings,
    );
    this.#now = opts.now ?? (() => new Date());
  }

  /**
   * Reconciles the cluster behind `namespace/name`. `signal` aborts every
   * request of the pass (forced shutdown); `log` is the runtime's, with the
   * reconcile ID it minted (absent: one is minted here). A cluster no longer
   * in the cache is forgotten: nothing NICO remembered of it stays.
   */
  async reconcile(key: string, signal?: AbortSignal, log?: Logger): Promise<ReconcileResult> {
    const { namespace, name } = splitKey(key);
    const cluster = this.#o.informers.clusters.get(namespace, name);
    if (!cluster) return this.memory.forget(key);
    log = withFields(log ?? withFields(this.#o.log, { reconcileID: crypto.randomUUID().slice(0, 8) }), {
      cluster: name,
      namespace,
    });
    const deps = signal ? { ...this.#deps, client: this.#deps.client.with({ signal }) } : this.#deps;
    const now = this.#now();
    const cache = clusterCacheOf(this.#o.informers, cluster);
    if (cluster.metadata.deletionTimestamp && !(cluster.metadata.finalizers ?? []).includes(FINALIZER)) return;
    const x = { deps, memory: this.memory.of(key, cluster.metadata.uid), cluster, cache, log };
    // Children labelled for the shard it left, or from before children carried the shard label: relabelled first.
    const inf = this.#o.informers;
    const adopting = canJudgeClusters(deps.nioMissing)
      ? await adoptChildren(x, { configs: inf.configs, secrets: inf.secrets, others: inf.others })
      : undefined;
    if (adopting !== undefined) return { requeueAfter: adopting };
    if (cluster.metadata.deletionTimestamp) return await this.#delete(x, now);
    if (!(cluster.metadata.finalizers ?? []).includes(FINALIZER)) {
      try {
        await deps.client.jsonPatch(KUBERNETES_CLUSTERS, name, namespace, [
          testResourceVersion(cluster.metadata.resourceVersion),
          ...addFinalizer(cluster.metadata.finalizers, FINALIZER),
        ]);
      } catch (err) {
        // The resourceVersion test failed (a stale cache) or the write conflicted: a race, not a problem.
        const again = isUnprocessable(err) || isConflict(err) ? x.memory.races.lost(key) : undefined;
        if (again) {
          log.info("finalizer not added: the cache is behind; looking again", {});
          return { requeueAfter: again.after };
        }
        return await this.#stopped(x, problemOf(err), err, now);
      }
      return; // the update event brings us back with the finalizer in place
    }
    const missing = deps.nioMissing;
    if (!canJudgeClusters(missing)) {
      // Without Machines or NixosConfigurations served, nothing NICO could read or write means anything.
      const problem = new ClusterProblem("NIONotInstalled", nioMissingMessage(deps.nio, missing));
      return await this.#stopped(x, problemOf(problem), problem, now);
    }
    const parsed = KubernetesClusterSpec.safeParse(cluster.spec);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      const problem = new ClusterProblem("InvalidSpec", `spec.${issue.path.join(".")}: ${issue.message}`);
      return await this.#stopped(x, problemOf(problem), problem, now);
    }
    return await this.#pass(buildScope(deps, cluster, parsed.data, cache, now, log, x.memory));
  }

  /** A normal pass: the phases in order, then the status, whatever happened. */
  async #pass(s: ClusterScope): Promise<ReconcileResult> {
    let nodes: NodeReport[] = [];
    let problem: Problem | undefined;
    let error: unknown;
    let raced: Requeue | undefined;
    let wishes: (Requeue | undefined)[] = [];
    const rec = newRecord();
    const key = s.memory.key;
    try {
      ({ nodes, wishes } = await runPhases(s, rec));
    } catch (err) {
      raced = err instanceof ClaimConflictError || isConflict(err) ? s.memory.races.lost(key) : undefined;
      if (raced) {
        // Optimistic concurrency at work (a claim race, a stale cache): look again, nothing to report.
        s.log.info("lost a race; looking again", { reason: errorMessage(err) });
      } else {
        problem = problemOf(err);
        error = err;
      }
      nodes = passNodes(s, rec);
    }
    const input = passStatusInput(s, rec, nodes, problem, raced !== undefined);
    if (raced) {
      const held = await this.#finish(s, input, undefined);
      return withHeld({ requeueAfter: raced.after }, held);
    }
    s.memory.races.forget(key);
    const held = await this.#finish(s, input, error);
    if (problem) return withHeld({ requeueAfter: PROBLEM_REQUEUE_MS }, held);
    const next = nextLook(s, { blocked: rec.planned?.blocked !== undefined, members: rec.members ?? [] }, wishes);
    s.log.debug("looking again", { inMs: next.after, why: next.why });
    return withHeld({ requeueAfter: next.after }, held);
  }

  /** A pass over a cluster being deleted; once its finalizer is gone, the cluster is forgotten. */
  async #delete(x: ClusterContext, now: Date): Promise<ReconcileResult> {
    const { cluster } = x;
    const base = { generation: cluster.metadata.generation ?? 0, previous: cluster.status, now };
    try {
      const { remaining, waiting = [] } = await reconcileDelete(x, now);
      if (!remaining.length && !waiting.length) return this.memory.forget(x.memory.key);
      const held = await this.#finish(x, { kind: "deleting", remaining, waiting, ...base }, undefined);
      return withHeld({ requeueAfter: waiting.length ? DRAIN_REQUEUE_MS : BUSY_REQUEUE_MS }, held);
    } catch (err) {
      const problem = problemOf(err);
      const held = await this.#finish(x, { kind: "deleting", remaining: [], problem, ...base }, err);
      return withHeld({ requeueAfter: PROBLEM_REQUEUE_MS }, held);
    }
  }

  /** A cluster another shard reconciled until now (it was relabelled): says so once, in an Event. */
  #announceShard(cluster: KubernetesCluster, log: Logger): void {
    const before = cluster.status?.shard;
    if (!cluster.status?.observedGeneration || before === this.#deps.shard) return;
    const message = `shard ${this.#deps.shard ?? DEFAULT_SHARD} reconciles this cluster now (was ${
      before ?? DEFAULT_SHARD
    })`;
    log.info("cluster moved to this shard", { from: before ?? DEFAULT_SHARD });
    postEvent(this.#o.recorder, cluster, "ShardChanged", message);
  }

  /** A pass that could observe nothing: the spec is invalid, or the first write failed. */
  async #stopped(x: Exit, problem: Problem, err: unknown, now: Date): Promise<ReconcileResult> {
    const input: ClusterStatusInput = {
      kind: "stopped",
      problem,
      generation: x.cluster.metadata.generation ?? 0,
      previous: x.cluster.status,
      now,
    };
    const held = await this.#finish(x, input, err);
    return withHeld({ requeueAfter: PROBLEM_REQUEUE_MS }, held);
  }

  /**
   * The one exit: computes and writes the status (a progress-only change is
   * held back, see core/status/write.ts), records the events it calls for, and
   * rethrows an unexpected error so the runtime backs off. Answers how soon to
   * look again for a held-back write (undefined: none is held).
   */
  async #finish(x: Exit, input: ClusterStatusInput, err: unknown): Promise<number | undefined> {
    const { deps, memory, cluster, log } = x;
    // Cancelled (forced shutdown): no status, no Event; the next leader looks again.
    if (err !== undefined && deps.client.aborted) throw err;
    const status = withShard(clusterStatus(input), this.#deps.shard);
    const problem = input.problem;
    const now = input.now.getTime();
    const when = statusWrite(cluster.status, status, memory.heldSince, now, this.#deps.statusDelay);
    const held = when.kind === "later" ? when.inMs : undefined;
    memory.heldSince = when.kind === "later" ? memory.heldSince ?? now : undefined;
    try {
      if (when.kind === "now") {
        const rv = await writeStatus(deps.client, cluster, status);
        if (rv) memory.ownStatus = rv;
        if (rv) log.debug("status written", { why: when.why });
        if (rv) this.#announceShard(cluster, log);
      }
    } catch (writeErr) {
      if (err === undefined || err instanceof ClusterProblem) throw writeErr;
      log.error("cannot write status", { error: errorMessage(writeErr) });
    }
    const recorder = this.#o.recorder;
    if (problem) {
      if (err instanceof ClusterProblem) log.info("blocked", { reason: problem.reason, message: problem.message });
      if (memory.problems.allow(memory.key, problem.reason, problem.message, now)) {
        postEvent(recorder, cluster, problem.reason, problem.message);
      }
      if (!(err instanceof ClusterProblem)) throw err;
      return held;
    }
    memory.problems.clear(memory.key);
    const stalled = haltedNow(cluster.status?.conditions, status.conditions);
    // The reason of Stalled=True, as NICO wrote it: every one is registered (crds/events.ts).
    if (
      input.kind === "pass" && stalled && isEventReason(stalled.reason) && memory.announcedStall !== stalled.message
    ) {
      memory.announcedStall = stalled.message;
      postEvent(recorder, cluster, stalled.reason, stalled.message);
    }
    if (
      input.kind === "pass" && status.phase && status.phase !== cluster.status?.phase &&
      memory.announcedPhase !== status.phase
    ) {
      memory.announcedPhase = status.phase;
      log.info("phase changed", { from: cluster.status?.phase, to: status.phase });
      const ready = status.conditions?.find((c) => c.type === "Ready");
      postEvent(
        recorder,
        cluster,
        `Phase${status.phase}`,
        `phase ${cluster.status?.phase ?? "(none)"} -> ${status.phase}: ${ready?.message ?? ""}`,
      );
    }
    return held;
  }
}
