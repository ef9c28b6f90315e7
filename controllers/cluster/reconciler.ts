/**
 * The KubernetesCluster reconciler: the thin shell around the pure core.
 *
 * Shape: get the cluster (gone: done) → deleting? {@link reconcileDelete} →
 * ensure the finalizer → build the {@link ClusterScope} once → run the
 * phases (secrets, claims, configurations, releases, kubeconfig) → compute
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
import { FINALIZER } from "../../core/labels.ts";
import { kubeconfigSecret } from "../../core/names.ts";
import { isConflict, isUnprocessable } from "../../lib/kube/errors.ts";
import type { Machine, NixosConfiguration } from "../../core/nio.ts";
import type { NodeReport } from "../../core/readiness.ts";
import { clusterHash } from "../../core/desired.ts";
import { clusterStatus, type ClusterStatusInput, type Problem } from "../../core/status.ts";
import { ClaimConflictError } from "./claims.ts";
import { reconcileClaims } from "./phases/claims.ts";
import { reconcileConfigurations } from "./phases/configurations.ts";
import { reconcileDelete } from "./phases/delete.ts";
import { reconcileKubeconfig } from "./phases/kubeconfig.ts";
import { reconcileReleases } from "./phases/releases.ts";
import { reconcileSecrets } from "./phases/secrets.ts";
import { observeWorkload, settleWorkloadNodes } from "./phases/workload.ts";
import type { WorkloadCache } from "./workload/cache.ts";
import { workloadConditions } from "../../core/workloadstatus.ts";
import { ClusterProblem, problemOf, WarningLimiter } from "./problem.ts";
import type { RevisionTracker } from "./revisions.ts";
import {
  buildScope,
  BUSY_REQUEUE_MS,
  type ClusterCache,
  type ClusterDeps,
  type ClusterScope,
  nextLookMs,
  nodeReports,
} from "./scope.ts";
import type { Secret } from "./secrets.ts";
import { writeStatus } from "./status.ts";

export interface ClusterInformers {
  clusters: Informer<KubernetesCluster>;
  machines: Informer<Machine>;
  configs: Informer<NixosConfiguration>;
  secrets: Informer<Secret>;
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
}

const DEFAULT_NODE_TIMEOUT_MS = 30 * 60_000;
/** Look again this soon after losing a race (doubling while it repeats): the cache catches up. */
const RACE_REQUEUE_MS = 500;
/** Races in a row after which a race is an error the user sees (a cache that does not catch up). */
const MAX_RACES = 6;
/** Look again this often while a problem only the user can fix stands in the way. */
const PROBLEM_REQUEUE_MS = 30_000;

type Result = { requeueAfter?: number } | void;

export class ClusterReconciler {
  readonly #o: ClusterReconcilerOptions;
  readonly #deps: ClusterDeps;
  readonly #now: () => Date;
  readonly #warnings = new WarningLimiter();
  /** The phase last announced by an Event, by cluster key: a stale cache does not announce it twice. */
  readonly #announced = new Map<string, string>();
  /** Races in a row, by cluster key. */
  readonly #races = new Map<string, number>();

  constructor(opts: ClusterReconcilerOptions) {
    this.#o = opts;
    this.#deps = {
      client: opts.client,
      recorder: opts.recorder,
      defaultGitRepo: opts.defaultGitRepo,
      nodeTimeoutMs: opts.nodeTimeoutMs ?? DEFAULT_NODE_TIMEOUT_MS,
      revisionTracker: opts.revisionTracker,
      workloads: opts.workloads,
    };
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
      this.#races.delete(key);
      this.#announced.delete(key);
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
        const races = isUnprocessable(err) || isConflict(err) ? (this.#races.get(key) ?? 0) + 1 : 0;
        if (races > 0 && races < MAX_RACES) {
          this.#races.set(key, races);
          log.info("finalizer not added: the cache is behind; looking again", {});
          return { requeueAfter: RACE_REQUEUE_MS * 2 ** (races - 1) };
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
    };
  }

  /** A normal pass: the phases in order, then the status, whatever happened. */
  async #pass(s: ClusterScope): Promise<Result> {
    let nodes: NodeReport[] = [];
    let problem: Problem | undefined;
    let error: unknown;
    let raced = false;
    const key = keyOf(s.namespace, s.name);
    try {
      await reconcileSecrets(s);
      await reconcileClaims(s);
      observeWorkload(s);
      await reconcileConfigurations(s);
      await reconcileReleases(s);
      nodes = s.out.blocked ? [] : nodeReports(s);
      await reconcileKubeconfig(s, nodes);
      await settleWorkloadNodes(s, nodes);
    } catch (err) {
      const races = (err instanceof ClaimConflictError || isConflict(err)) ? (this.#races.get(key) ?? 0) + 1 : 0;
      if (races > 0 && races < MAX_RACES) {
        this.#races.set(key, races);
        // Optimistic concurrency at work (a claim race, a stale cache): look again, nothing to report.
        s.log.info("lost a race; looking again", { reason: errorMessage(err) });
        raced = true;
      } else {
        problem = problemOf(err);
        error = err;
      }
      nodes = s.out.blocked ? [] : nodeReports(s);
    }
    const { cluster, out } = s;
    const input: ClusterStatusInput = {
      kind: "pass",
      problem,
      cutShort: raced,
      rollout: out.plan && {
        plan: out.plan,
        paused: s.paused,
        specHash: clusterHash([...out.wantedHash.values()]),
        controlPlaneSize: s.selection.controlPlane.members.length,
      },
      generation: cluster.metadata.generation ?? 0,
      previous: cluster.status,
      deleting: false,
      selection: s.selection,
      nodes,
      bootstrap: s.bootstrap,
      endpoint: out.endpoint,
      kubeconfigSecret: out.kubeconfig ??
        (s.cache.secret(kubeconfigSecret(s.name)) ? kubeconfigSecret(s.name) : undefined),
      blocked: out.blocked,
      unresolved: out.unresolved,
      revision: out.revision,
      extra: [
        ...out.extra,
        ...(out.workload
          ? workloadConditions({ workload: out.workload, server: out.endpoint, nodes, now: s.now })
          : []),
      ],
      workloadApi: out.workload && !out.workload.disabled
        ? { available: out.workload.api.state === "Available", message: out.workload.api.message }
        : undefined,
      now: s.now,
    };
    if (raced) {
      await this.#finish(s.deps, cluster, input, undefined, s.log);
      return { requeueAfter: RACE_REQUEUE_MS * 2 ** ((this.#races.get(key) ?? 1) - 1) };
    }
    this.#races.delete(key);
    await this.#finish(s.deps, cluster, input, error, s.log);
    if (problem) return { requeueAfter: PROBLEM_REQUEUE_MS };
    return { requeueAfter: nextLookMs(s, nodes) };
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
      const { remaining } = await reconcileDelete(deps, cluster, cache, log);
      if (!remaining.length) {
        this.#warnings.clear(keyOf(cluster.metadata.namespace, cluster.metadata.name));
        this.#deps.workloads?.close(keyOf(cluster.metadata.namespace, cluster.metadata.name));
        return;
      }
      await this.#finish(deps, cluster, { kind: "deleting", remaining, ...base }, undefined, log);
      return { requeueAfter: BUSY_REQUEUE_MS };
    } catch (err) {
      const problem = problemOf(err);
      await this.#finish(deps, cluster, { kind: "deleting", remaining: [], problem, ...base }, err, log);
      return { requeueAfter: PROBLEM_REQUEUE_MS };
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
    await this.#finish(deps, cluster, input, err, log);
    return { requeueAfter: PROBLEM_REQUEUE_MS };
  }

  /**
   * The one exit: computes and writes the status, records the events it
   * calls for, and rethrows an unexpected error so the runtime backs off.
   */
  async #finish(
    deps: ClusterDeps,
    cluster: KubernetesCluster,
    input: ClusterStatusInput,
    err: unknown,
    log: Logger,
  ): Promise<void> {
    // Cancelled (forced shutdown): no status, no Event; the next leader looks again.
    if (err !== undefined && deps.client.aborted) throw err;
    const status = clusterStatus(input);
    const problem = input.problem;
    const key = keyOf(cluster.metadata.namespace, cluster.metadata.name);
    try {
      const rv = await writeStatus(deps.client, cluster, status);
      if (rv) this.#o.onStatusWritten?.(key, rv);
    } catch (writeErr) {
      if (err === undefined || err instanceof ClusterProblem) throw writeErr;
      log.error("cannot write status", { error: errorMessage(writeErr) });
    }
    const recorder = this.#o.recorder;
    if (problem) {
      if (err instanceof ClusterProblem) log.info("blocked", { reason: problem.reason, message: problem.message });
      if (this.#warnings.allow(key, problem.reason, problem.message, input.now.getTime())) {
        await recorder.event(cluster, "Warning", problem.reason, problem.message);
      }
      if (!(err instanceof ClusterProblem)) throw err;
      return;
    }
    this.#warnings.clear(key);
    if (
      input.kind === "pass" && status.phase !== cluster.status?.phase && this.#announced.get(key) !== status.phase
    ) {
      this.#announced.set(key, status.phase!);
      log.info("phase changed", { from: cluster.status?.phase, to: status.phase });
      const ready = status.conditions?.find((c) => c.type === "Ready");
      await recorder.event(
        cluster,
        status.phase === "Failed" ? "Warning" : "Normal",
        `Phase${status.phase}`,
        `phase ${cluster.status?.phase ?? "(none)"} -> ${status.phase}: ${ready?.message ?? ""}`,
      );
    }
  }
}
