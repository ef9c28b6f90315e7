/**
 * Wires the KubernetesCluster reconciler to its informers: events only
 * enqueue cluster keys; owned NixosConfigurations, Secrets and claimed or
 * selectable Machines map back to their clusters.
 *
 * @module
 */
import type { KubernetesCluster } from "../../crds/kubernetescluster.ts";
import type { EventRecorder } from "../../lib/events.ts";
import type { KubeClient } from "../../lib/kube/client.ts";
import { SECRETS } from "../../lib/kube/resources.ts";
import { KUBERNETES_CLUSTERS } from "../../crds/kubernetescluster.ts";
import {
  JOBS,
  MACHINES,
  NIO_DECOMMISSION,
  NIO_MACHINE_LABEL,
  NIO_OPERATION_LABEL,
  NIX_JOBS,
  NIXOS_CONFIGURATIONS,
} from "../../core/contract/nio.ts";
import { CLUSTER_LABEL } from "../../core/contract/labels.ts";
import type { DecommissionJob, Machine, NioGeneration, NixosConfiguration } from "../../core/contract/nio.ts";
import type { BatchJob } from "../../core/nodes/runs.ts";
import { Controller, type ControllerHooks } from "../../lib/runtime/controller.ts";
import { Informer } from "../../lib/runtime/informer.ts";
import { keyOf } from "../../lib/runtime/keys.ts";
import type { Logger } from "../../lib/runtime/log.ts";
import type { EventType } from "../../lib/runtime/snapshot.ts";
import { isDeepStrictEqual } from "node:util";
import { matches } from "../../lib/selector.ts";
import type { ClusterMemories } from "./memory.ts";
import { type ClusterInformers, ClusterReconciler } from "./reconciler.ts";
import type { Secret } from "./secrets.ts";
import type { HostPolicy } from "../../lib/git/hosts.ts";
import { RevisionResolver } from "../../lib/git/resolver.ts";
import { RevisionTracker } from "./revisions.ts";
import { WorkloadCache, type WorkloadCacheOptions } from "./workload/cache.ts";

export interface ClusterControllerOptions {
  client: KubeClient;
  recorder: EventRecorder;
  log: Logger;
  /** Watch one namespace (default: all). */
  namespace?: string | undefined;
  workers?: number;
  defaultGitRepo?: string | undefined;
  nodeTimeoutMs?: number;
  hooks?: ControllerHooks;
  /** Resync interval of the informers (default 10 min). */
  resyncMs?: number;
  /** Pin nodes to the commit `ref` resolves to (git ls-remote), polling every `refPollIntervalMs`. */
  resolveRefs?: boolean;
  refPollIntervalMs?: number;
  /** Hosts a gitRepo may be on when resolving refs (`--git-allowed-hosts`); default: public hosts only. */
  gitAllowedHosts?: HostPolicy;
  /** Watch workload clusters (absent: NICO does not look inside them; applied counts as Ready). */
  workloads?: Omit<WorkloadCacheOptions, "onChange" | "log">;
  /** Which NIO runs the configurations (default `v1`); see `detectNioGeneration`. */
  nio?: NioGeneration;
  /** How long a freed Machine stays claimed for NIO to settle (core/machines/release.ts). */
  releaseSettleMs?: number;
  /** The longest a progress-only status change is held back (core/status/write.ts). */
  statusDelayMs?: number;
}

/**
 * Events of children (a configuration's progress, then NIO's write-back on
 * its Machine; NICO's own creates) come in bursts: queued this much later,
 * a burst makes one reconcile and at most one status write, not one each.
 */
export const CHILD_EVENT_COALESCE_MS = 200;

/**
 * Whether a cluster update changed only its status. The controller skips
 * such an update when it is NICO's own status write (by resourceVersion):
 * nothing NICO acts on changed. Resyncs (same resourceVersion), changes to
 * the spec or metadata, and status written by anyone else still reconcile.
 */
export function onlyStatusChanged(c: KubernetesCluster, type: EventType, old: KubernetesCluster | undefined): boolean {
  if (type !== "update" || !old || old.metadata.resourceVersion === c.metadata.resourceVersion) return false;
  const meta = (o: KubernetesCluster) => {
    const { resourceVersion: _rv, managedFields: _mf, ...rest } = o.metadata;
    return rest;
  };
  return isDeepStrictEqual(meta(c), meta(old)) && isDeepStrictEqual(c.spec, old.spec);
}

/**
 * The caches a cluster controller reads: clusters, Machines, NixosConfigurations and NICO's own Secrets; with
 * NIO v1 also the batch Jobs its runs are and its decommission NixJobs.
 */
export function clusterInformers(
  client: KubeClient,
  log: Logger,
  namespace?: string,
  resyncMs?: number,
  nio: NioGeneration = "v1",
): ClusterInformers {
  const opts = { logger: log, ...(namespace ? { namespace } : {}), ...(resyncMs !== undefined ? { resyncMs } : {}) };
  return {
    clusters: new Informer<KubernetesCluster>(client, KUBERNETES_CLUSTERS, opts),
    machines: new Informer<Machine>(client, MACHINES, opts),
    configs: new Informer<NixosConfiguration>(client, NIXOS_CONFIGURATIONS, opts),
    // Only the Secrets NICO labels: never every Secret of the cluster.
    secrets: new Informer<Secret>(client, SECRETS, { ...opts, labelSelector: CLUSTER_LABEL }),
    ...(nio === "v1"
      ? {
        // A scheduled run's Job carries none of NIO's labels (its CronJob's template has none): all Jobs, matched
        // to nodes by owner.
        jobs: new Informer<BatchJob>(client, JOBS, opts),
        decommissions: new Informer<DecommissionJob>(client, NIX_JOBS, {
          ...opts,
          labelSelector: `${NIO_OPERATION_LABEL}=${NIO_DECOMMISSION}`,
        }),
      }
      : {}),
  };
}

/**
 * Whether a Machine update can change what NICO decides. NIO v1 rewrites every Machine's status twice a
 * minute (`Reconciling` on and off) without changing anything else: those updates need no reconcile.
 *
 * @example
 * ```ts
 * import { machineChangeMatters } from "./controller.ts";
 * const m = { metadata: { name: "m", labels: {} }, status: { discoverable: true, conditions: [] } };
 * machineChangeMatters(m, { ...m, status: { ...m.status, conditions: [{ type: "Reconciling", status: "True" }] } }); // false
 * machineChangeMatters(m, { ...m, status: { discoverable: false } }); // true
 * ```
 */
export function machineChangeMatters(old: Machine, m: Machine): boolean {
  const facts = (x: Machine) => {
    const { conditions, observedGeneration: _g, ...status } = x.status ?? {};
    const discoverable = conditions?.find((c) => c.type === "Discoverable");
    return {
      labels: x.metadata.labels,
      annotations: x.metadata.annotations,
      deleting: x.metadata.deletionTimestamp,
      spec: x.spec,
      status,
      discoverable: discoverable && { status: discoverable.status, since: discoverable.lastTransitionTime },
    };
  };
  return !isDeepStrictEqual(facts(old), facts(m));
}

/** Clusters of the namespace that may want this Machine: claimant, explicit lists and spares, matching selectors. */
export function clustersInterestedIn(clusters: KubernetesCluster[], machine: Machine, old?: Machine): string[] {
  const name = machine.metadata.name;
  const ns = machine.metadata.namespace;
  const claims = new Set([machine.metadata.labels?.[CLUSTER_LABEL], old?.metadata.labels?.[CLUSTER_LABEL]]);
  const keys: string[] = [];
  for (const c of clusters) {
    if (c.metadata.namespace !== ns) continue;
    const planes = [c.spec?.controlPlane, c.spec?.dataPlane];
    const wants = claims.has(c.metadata.name) ||
      planes.some((p) =>
        p && ((p.machines ?? []).includes(name) || (p.spares ?? []).includes(name) ||
          (!(p.machines?.length) && (matches(p.machineSelector, machine.metadata.labels) ||
            (old !== undefined && matches(p.machineSelector, old.metadata.labels)))))
      );
    if (wants) keys.push(keyOf(ns, c.metadata.name));
  }
  return keys;
}

/** A ready-to-run controller for KubernetesClusters, with its informers. */
export function clusterController(
  opts: ClusterControllerOptions,
): {
  controller: Controller;
  informers: ClusterInformers;
  memory: ClusterMemories;
  revisions?: RevisionResolver;
  workloads?: WorkloadCache;
} {
  const nio = opts.nio ?? "v1";
  const informers = clusterInformers(opts.client, opts.log, opts.namespace, opts.resyncMs, nio);
  let tracker: RevisionTracker | undefined;
  let revisions: RevisionResolver | undefined;
  if (opts.resolveRefs) {
    revisions = new RevisionResolver({
      logger: opts.log,
      ...(opts.refPollIntervalMs ? { intervalMs: opts.refPollIntervalMs } : {}),
      ...(opts.gitAllowedHosts ? { allowedHosts: opts.gitAllowedHosts } : {}),
      // credentialsRef Secrets carry no NICO label, so they are read on demand, never cached.
      secretLookup: async (ns, name) => (await opts.client.get<Secret>(SECRETS, name, ns))?.data ?? undefined,
      onChange: (key) => {
        // Runs only after the controller below exists: resolutions start with the first reconcile.
        for (const c of tracker?.usersOf(key) ?? []) ctl.enqueue(c);
      },
    });
    tracker = new RevisionTracker(revisions);
  }
  // Workload events run only after the controller below exists: connections open in reconciles.
  const workloads = opts.workloads
    ? new WorkloadCache({ ...opts.workloads, log: opts.log, onChange: (key) => ctl.enqueue(key) })
    : undefined;
  const reconciler = new ClusterReconciler({
    client: opts.client,
    informers,
    recorder: opts.recorder,
    log: opts.log,
    defaultGitRepo: opts.defaultGitRepo,
    ...(opts.nodeTimeoutMs ? { nodeTimeoutMs: opts.nodeTimeoutMs } : {}),
    revisionTracker: tracker,
    workloads,
    nio,
    releaseSettleMs: opts.releaseSettleMs,
    statusDelayMs: opts.statusDelayMs,
  });
  const ctl = new Controller(
    {
      name: "kubernetescluster",
      workers: opts.workers ?? 2,
      logger: opts.log,
      ...(opts.hooks ? { hooks: opts.hooks } : {}),
    },
    (key, signal, log) => reconciler.reconcile(key, signal, log),
  );
  const byLabel = (o: { metadata: { namespace?: string; labels?: Record<string, string> } }) => {
    const c = o.metadata.labels?.[CLUSTER_LABEL];
    return c ? keyOf(o.metadata.namespace, c) : undefined;
  };
  const soon = { coalesceMs: CHILD_EVENT_COALESCE_MS };
  ctl
    .watch(informers.clusters, undefined, {
      skip: (c, type, old) => {
        const key = keyOf(c.metadata.namespace, c.metadata.name);
        // Only NICO's own status write is skipped (the resourceVersion its memory recorded): a status changed by
        // anyone else is put right at once.
        return reconciler.memory.peek(key)?.ownStatus === c.metadata.resourceVersion && onlyStatusChanged(c, type, old);
      },
    })
    .watch(informers.configs, (cfg, _type, old) => {
      const owner = byLabel(cfg);
      if (owner) return owner;
      // Someone else's configuration can take a Machine away from a cluster.
      const m = informers.machines.get(
        cfg.metadata.namespace,
        cfg.spec?.machineRef?.name ?? old?.spec?.machineRef?.name ?? "",
      );
      return m ? clustersInterestedIn(informers.clusters.list(cfg.metadata.namespace), m) : undefined;
    }, soon)
    .watch(informers.secrets, byLabel, soon)
    .watch(
      informers.machines,
      (m, _type, old) => clustersInterestedIn(informers.clusters.list(m.metadata.namespace), m, old),
      { ...soon, skip: (m, type, old) => type === "update" && old !== undefined && !machineChangeMatters(old, m) },
    );
  if (informers.jobs) {
    // A run of a node's day-two NixCronJob (or its CronJob, of the same name) belongs to the configuration.
    ctl.watch(informers.jobs, (j) => {
      const owner = j.metadata.ownerReferences?.find((o) => o.kind === "NixCronJob" || o.kind === "CronJob");
      const cfg = owner?.name.endsWith("-day2") ? owner.name.slice(0, -"-day2".length) : undefined;
      const c = cfg ? informers.configs.get(j.metadata.namespace, cfg) : undefined;
      return c ? byLabel(c) : undefined;
    }, soon);
  }
  if (informers.decommissions) {
    ctl.watch(informers.decommissions, (nj) => {
      const m = informers.machines.get(nj.metadata.namespace, nj.metadata.labels?.[NIO_MACHINE_LABEL] ?? "");
      return m ? clustersInterestedIn(informers.clusters.list(nj.metadata.namespace), m) : undefined;
    }, soon);
  }
  return {
    controller: ctl,
    informers,
    memory: reconciler.memory,
    ...(revisions ? { revisions } : {}),
    ...(workloads ? { workloads } : {}),
  };
}
