/**
 * The KubernetesCluster reconciler: the thin shell around the pure core.
 *
 * Shape: get the cluster (gone: done) → deleting? {@link reconcileDelete} →
 * ensure the finalizer → build the {@link ClusterScope} once → run the
 * phases (secrets, claims, configurations, releases, remediation, kubeconfig) → compute
 * the status with {@link clusterStatus} and write it, on every exit, error or
 * not. A known failure ({@link ClusterProblem}) or an unexpected error shows
 * up as `Ready=False` with its reason and a Warning Event; a lost claim race
 * is a plain requeue. Reads come from the informers' caches; every write is
 * either version-checked or idempotent, so a stale cache costs a retry,
 * never a double-booked Machine.
 *
 * @module
 */
import { KUBERNETES_CLUSTERS, type KubernetesCluster, KubernetesClusterSpec } from "../../crds/kubernetescluster.ts";
import type { EventRecorder } from "../../lib/events.ts";
import type { KubeClient } from "../../lib/kube/client.ts";
import type { Informer } from "../../lib/runtime/informer.ts";
import { keyOf, splitKey } from "../../lib/runtime/keys.ts";
import { errorMessage, type Logger, withFields } from "../../lib/runtime/log.ts";
import { FINALIZER } from "../../core/contract/labels.ts";
import { isConflict, isUnprocessable } from "../../lib/kube/errors.ts";
import type { DecommissionJob, Machine, NioGeneration, NixosConfiguration } from "../../core/contract/nio.ts";
import type { BatchJob } from "../../core/nodes/runs.ts";
import type { NodeReport } from "../../core/nodes/readiness.ts";
import { clusterStatus, type ClusterStatusInput, type Problem } from "../../core/status/cluster.ts";
import { STATUS_DELAY_MS, statusWrite } from "../../core/status/write.ts";
import { ClaimConflictError } from "./claims.ts";
import { reconcileDelete } from "./phases/delete.ts";
import { newRecord, passNodes, runPhases, viewOf } from "./pass.ts";
import type { WorkloadCache } from "./workload/cache.ts";
import { ClusterProblem, problemOf, WarningLimiter } from "./problem.ts";
import type { RevisionTracker } from "./revisions.ts";
import { buildScope, type ClusterCache, type ClusterDeps, clusterDeps, type ClusterScope } from "./scope.ts";
import { BUSY_REQUEUE_MS, DRAIN_REQUEUE_MS, nextLook, Races, type Requeue } from "./requeue.ts";
import type { Secret } from "./secrets.ts";
import { type PassResult, passStatusInput, withHeld, writeStatus } from "./status.ts";

export interface ClusterInformers {
  clusters: Informer<KubernetesCluster>;
  machines: Informer<Machine>;
  configs: Informer<NixosConfiguration>;
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
  /** `gitRepo` for clusters that name none. */
  defaultGitRepo?: string | undefined;
  /** A node not applied this long after its last change is Failed (default 30 min). */
  nodeTimeoutMs?: number;
  /** Pins each node to the commit `ref` resolves to; absent: `ref` is passed to NIO as written. */
  revisionTracker?: RevisionTracker | undefined;
  /** Connections to workload clusters; absent: NICO does not look inside them. */
  workloads?: WorkloadCache | undefined;
  now?: () => Date;
  /** Told the resourceVersion of each status NICO writes (so its own write's watch event can be told apart). */
  onStatusWritten?: (key: string, resourceVersion: string) => void;
  /** Which NIO applies the configurations (default `v1`). */
  nio?: NioGeneration;
  /** See core/machines/release.ts (tests shorten it). */
  releaseSettleMs?: number | undefined;
  /** The longest a progress-only status change is held back (default {@link STATUS_DELAY_MS}; see core/status/write.ts). */
  statusDelayMs?: number | undefined;
}

const DEFAULT_NODE_TIMEOUT_MS = 30 * 60_000;
/** Look again this often while a problem only the user can fix stands in the way. */
const PROBLEM_REQUEUE_MS = 30_000;

type Result = PassResult;

export class ClusterReconciler {
  readonly #o: ClusterReconcilerOptions;
  readonly #deps: ClusterDeps;
  readonly #now: () => Date;
  readonly #warnings = new WarningLimiter();
  /** The phase last announced by an Event, by cluster key: a stale cache does not announce it twice. */
  readonly #announced = new Map<string, string>();
  /** Races lost in a row, by cluster key. */
  readonly #races = new Races();
  /** When a progress-only status change was first held back, by cluster key. */
  readonly #heldSince = new Map<string, number>();

  constructor(opts: ClusterReconcilerOptions) {
    this.#o = opts;
    this.#deps = clusterDeps({
      client: opts.client,
      recorder: opts.recorder,
      defaultGitRepo: opts.defaultGitRepo,
      nodeTimeoutMs: opts.nodeTimeoutMs ?? DEFAULT_NODE_TIMEOUT_MS,
      revisionTracker: opts.revisionTracker,
      workloads: opts.workloads,
      nio: opts.nio ?? "v1",
      releaseSettleMs: opts.releaseSettleMs,
    });
    this.#now = opts.now ?? (() => new Date());
  }

  /**
   * Reconciles the cluster behind `namespace/name`. `signal` aborts every
   * request of the pass (forced shutdown); `log` is the runtime's, with the
   * reconcile ID it minted (absent: one is minted here).
   */
  async reconcile(key: string, signal?: AbortSignal, log?: Logger): Promise<Result> {
    const { namespace, name } = splitKey(key);
    const cluster = this.#o.informers.clusters.get(namespace, name);
    if (!cluster) {
      this.#warnings.clear(key);
      this.#races.forget(key);
      this.#announced.delete(key);
      this.#heldSince.delete(key);
      this.#deps.workloads?.close(key);
      return;
    }
    log = withFields(log ?? withFields(this.#o.log, { reconcileID: crypto.randomUUID().slice(0, 8) }), {
      cluster: name,
      namespace,
    });
    const deps = signal ? { ...this.#deps, client: this.#deps.client.with({ signal }) } : this.#deps;
    const now = this.#now();
    const cache = this.#cache(cluster.metadata.namespace!);
    if (cluster.metadata.deletionTimestamp) {
      if (!(cluster.metadata.finalizers ?? []).includes(FINALIZER)) return;
      return await this.#delete(deps, cluster, cache, log, now);
    }
    if (!(cluster.metadata.finalizers ?? []).includes(FINALIZER)) {
      try {
        await deps.client.jsonPatch(KUBERNETES_CLUSTERS, name, namespace, [
          { op: "test", path: "/metadata/resourceVersion", value: cluster.metadata.resourceVersion },
          cluster.metadata.finalizers
            ? { op: "add", path: "/metadata/finalizers/-", value: FINALIZER }
            : { op: "add", path: "/metadata/finalizers", value: [FINALIZER] },
        ]);
      } catch (err) {
        // The resourceVersion test failed (a stale cache) or the write conflicted: a race, not a problem.
        const again = isUnprocessable(err) || isConflict(err) ? this.#races.lost(key) : undefined;
        if (again) {
          log.info("finalizer not added: the cache is behind; looking again", {});
          return { requeueAfter: again.after };
        }
        return await this.#stopped(deps, cluster, problemOf(err), err, log, now);
      }
      return; // the update event brings us back with the finalizer in place
    }
    const parsed = KubernetesClusterSpec.safeParse(cluster.spec);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      const problem = new ClusterProblem("InvalidSpec", `spec.${issue.path.join(".")}: ${issue.message}`);
      return await this.#stopped(deps, cluster, problemOf(problem), problem, log, now);
    }
    return await this.#pass(buildScope(deps, cluster, parsed.data, cache, now, log));
  }

  #cache(ns: string): ClusterCache {
    const inf = this.#o.informers;
    return {
      machines: inf.machines.list(ns),
      configs: inf.configs.list(ns),
      config: (n) => inf.configs.get(ns, n),
      secret: (n) => inf.secrets.get(ns, n),
      jobs: inf.jobs?.list(ns) ?? [],
      decommissions: inf.decommissions?.list(ns) ?? [],
    };
  }

  /** A normal pass: the phases in order, then the status, whatever happened. */
  async #pass(s: ClusterScope): Promise<Result> {
    let nodes: NodeReport[] = [];
    let problem: Problem | undefined;
    let error: unknown;
    let raced: Requeue | undefined;
    let wishes: (Requeue | undefined)[] = [];
    const rec = newRecord();
    const key = keyOf(s.namespace, s.name);
    try {
      ({ nodes, wishes } = await runPhases(s, rec));
    } catch (err) {
      raced = err instanceof ClaimConflictError || isConflict(err) ? this.#races.lost(key) : undefined;
      if (raced) {
        // Optimistic concurrency at work (a claim race, a stale cache): look again, nothing to report.
        s.log.info("lost a race; looking again", { reason: errorMessage(err) });
      } else {
        problem = problemOf(err);
        error = err;
      }
      nodes = passNodes(s, rec);
    }
    const cluster = s.cluster;
    const input = passStatusInput(s, rec, nodes, problem, raced !== undefined);
    if (raced) {
      const held = await this.#finish(s.deps, cluster, input, undefined, s.log);
      return withHeld({ requeueAfter: raced.after }, held);
    }
    this.#races.forget(key);
    const held = await this.#finish(s.deps, cluster, input, error, s.log);
    if (problem) return withHeld({ requeueAfter: PROBLEM_REQUEUE_MS }, held);
    const next = nextLook(s, { ...viewOf(rec), blocked: rec.planned?.blocked !== undefined }, nodes, wishes);
    s.log.debug("looking again", { inMs: next.after, why: next.why });
    return withHeld({ requeueAfter: next.after }, held);
  }

  async #delete(
    deps: ClusterDeps,
    cluster: KubernetesCluster,
    cache: ClusterCache,
    log: Logger,
    now: Date,
  ): Promise<Result> {
    const base = { generation: cluster.metadata.generation ?? 0, previous: cluster.status, now };
    try {
      const { remaining, waiting = [] } = await reconcileDelete(deps, cluster, cache, log);
      if (!remaining.length && !waiting.length) {
        this.#warnings.clear(keyOf(cluster.metadata.namespace, cluster.metadata.name));
        this.#deps.workloads?.close(keyOf(cluster.metadata.namespace, cluster.metadata.name));
        return;
      }
      const held = await this.#finish(deps, cluster, { kind: "deleting", remaining, waiting, ...base }, undefined, log);
      return withHeld({ requeueAfter: waiting.length ? DRAIN_REQUEUE_MS : BUSY_REQUEUE_MS }, held);
    } catch (err) {
      const problem = problemOf(err);
      const held = await this.#finish(deps, cluster, { kind: "deleting", remaining: [], problem, ...base }, err, log);
      return withHeld({ requeueAfter: PROBLEM_REQUEUE_MS }, held);
    }
  }

  /** A pass that could observe nothing: the spec is invalid, or the first write failed. */
  async #stopped(
    deps: ClusterDeps,
    cluster: KubernetesCluster,
    problem: Problem,
    err: unknown,
    log: Logger,
    now: Date,
  ): Promise<Result> {
    const input: ClusterStatusInput = {
      kind: "stopped",
      problem,
      generation: cluster.metadata.generation ?? 0,
      previous: cluster.status,
      now,
    };
    const held = await this.#finish(deps, cluster, input, err, log);
    return withHeld({ requeueAfter: PROBLEM_REQUEUE_MS }, held);
  }

  /**
   * The one exit: computes and writes the status (a progress-only change is
   * held back, see core/status/write.ts), records the events it calls for, and
   * rethrows an unexpected error so the runtime backs off. Answers how soon to
   * look again for a held-back write (undefined: none is held).
   */
  async #finish(
    deps: ClusterDeps,
    cluster: KubernetesCluster,
    input: ClusterStatusInput,
    err: unknown,
    log: Logger,
  ): Promise<number | undefined> {
    // Cancelled (forced shutdown): no status, no Event; the next leader looks again.
    if (err !== undefined && deps.client.aborted) throw err;
    const status = clusterStatus(input);
    const problem = input.problem;
    const key = keyOf(cluster.metadata.namespace, cluster.metadata.name);
    const when = statusWrite(
      cluster.status,
      status,
      this.#heldSince.get(key),
      input.now.getTime(),
      this.#o.statusDelayMs ?? STATUS_DELAY_MS,
    );
    let held: number | undefined;
    if (when.kind === "later") {
      if (!this.#heldSince.has(key)) this.#heldSince.set(key, input.now.getTime());
      held = when.inMs;
    } else this.#heldSince.delete(key);
    try {
      if (when.kind === "now") {
        const rv = await writeStatus(deps.client, cluster, status);
        if (rv) this.#o.onStatusWritten?.(key, rv);
        if (rv) log.debug("status written", { why: when.why });
      }
    } catch (writeErr) {
      if (err === undefined || err instanceof ClusterProblem) throw writeErr;
      log.error("cannot write status", { error: errorMessage(writeErr) });
    }
    const recorder = this.#o.recorder;
    if (problem) {
      if (err instanceof ClusterProblem) log.info("blocked", { reason: problem.reason, message: problem.message });
      if (this.#warnings.allow(key, problem.reason, problem.message, input.now.getTime())) {
        recorder.post(cluster, "Warning", problem.reason, problem.message);
      }
      if (!(err instanceof ClusterProblem)) throw err;
      return held;
    }
    this.#warnings.clear(key);
    if (
      input.kind === "pass" && status.phase !== cluster.status?.phase && this.#announced.get(key) !== status.phase
    ) {
      this.#announced.set(key, status.phase!);
      log.info("phase changed", { from: cluster.status?.phase, to: status.phase });
      const ready = status.conditions?.find((c) => c.type === "Ready");
      recorder.post(
        cluster,
        status.phase === "Failed" ? "Warning" : "Normal",
        `Phase${status.phase}`,
        `phase ${cluster.status?.phase ?? "(none)"} -> ${status.phase}: ${ready?.message ?? ""}`,
      );
    }
    return held;
  }
}
