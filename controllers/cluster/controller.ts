/**
 * Wires the KubernetesCluster reconciler to its informers: events only
 * enqueue cluster keys; owned NixosConfigurations, Secrets and claimed or
 * selectable Machines map back to their clusters (controllers/cluster/mappers.ts).
 *
 * @module
 */
import { KUBERNETES_CLUSTERS, type KubernetesCluster } from "../../crds/kubernetescluster.ts";
import type { EventRecorder } from "../../lib/events.ts";
import type { KubeClient, KubeObject } from "../../lib/kube/client.ts";
import { type Resource, SECRETS } from "../../lib/kube/resources.ts";
import {
  JOBS,
  MACHINES,
  NIO_DECOMMISSION,
  NIO_GROUP,
  NIO_OPERATION_LABEL,
  NIO_RUN_SELECTOR,
  NIX_JOBS,
  NIXOS_CONFIGURATIONS,
} from "../../core/contract/nio.ts";
import { CLUSTER_LABEL } from "../../core/contract/labels.ts";
import { otherShardsSelector, shardChildSelector, shardSelector } from "../../core/contract/shards.ts";
import type { DecommissionJob, Machine, NioGeneration, NixosConfiguration } from "../../core/contract/nio.ts";
import type { BatchJob } from "../../core/nodes/runs.ts";
import { Controller, type ControllerHooks, type KeyMapper } from "../../lib/runtime/controller.ts";
import { Informer } from "../../lib/runtime/informer.ts";
import { without } from "../../lib/runtime/compact.ts";
import type { Logger } from "../../lib/runtime/log.ts";
import type { HostPolicy } from "../../lib/git/hosts.ts";
import { type RevisionKey, RevisionResolver } from "../../lib/git/resolver.ts";
import {
  clusterOfLabel,
  configurationClusters,
  decommissionClusters,
  machineClusters,
  machineUpdateChangesNothing,
  ofCachedClusters,
  ownStatusWrite,
  runClusters,
} from "./mappers.ts";
import { indexClusterInformers } from "./indexes.ts";
import type { ClusterMemories } from "./memory.ts";
import { type ClusterInformers, ClusterReconciler } from "./reconciler.ts";
import { RevisionTracker } from "./revisions.ts";
import type { Secret } from "./secrets.ts";
import { WorkloadCache, type WorkloadCacheOptions } from "./workload/cache.ts";
import { targetPolicy } from "./workload/targets.ts";
import type { ClusterSettings } from "./settings.ts";

export interface ClusterControllerOptions {
  client: KubeClient;
  recorder: EventRecorder;
  log: Logger;
  /** Every knob, built once (controllers/cluster/settings.ts clusterSettings), handed down to every pass. */
  settings: ClusterSettings;
  hooks?: ControllerHooks;
  /** Resync interval of the informers (default 10 min). */
  resyncMs?: number;
  /** Hosts a gitRepo may be on when resolving refs (`--git-allowed-hosts`); default: public hosts only. */
  gitAllowedHosts?: HostPolicy;
  /** Watch workload clusters (absent: NICO does not look inside them; applied counts as Ready), and their etcd. */
  workloads?: Omit<WorkloadCacheOptions, "onChange" | "log">;
}

/**
 * Events of children (a configuration's progress, then NIO's write-back on
 * its Machine; NICO's own creates) come in bursts: queued this much later,
 * a burst makes one reconcile and at most one status write, not one each.
 */
export const CHILD_EVENT_COALESCE_MS = 200;

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
  nioMissing: readonly string[] = [],
  shard?: string,
): ClusterInformers {
  const opts = { logger: log, ...(namespace ? { namespace } : {}), ...(resyncMs !== undefined ? { resyncMs } : {}) };
  const informers: ClusterInformers = {
    // Only the shard's clusters: one relabelled away leaves this cache (the API server sends its deletion).
    clusters: new Informer<KubernetesCluster>(client, KUBERNETES_CLUSTERS, {
      ...opts,
      labelSelector: shardSelector(shard),
    }),
    // Every Machine: a shard picks from the whole free pool (claims are atomic labels, core/contract/shards.ts).
    machines: new Informer<Machine>(client, MACHINES, { ...opts, trim: dropMachineFacts }),
    // The shard's own clusters' children in full, by the shard label they carry; everyone else's configurations
    // trimmed to whom they belong and which Machine they target (availability and admission read that much).
    configs: new Informer<NixosConfiguration>(client, NIXOS_CONFIGURATIONS, {
      ...opts,
      labelSelector: shardChildSelector(shard),
    }),
    others: new Informer<NixosConfiguration>(client, NIXOS_CONFIGURATIONS, {
      ...opts,
      labelSelector: otherShardsSelector(shard),
      trim: keepTargetOnly,
    }),
    // Only the Secrets NICO labels, of this shard's clusters: never every Secret of the cluster.
    secrets: new Informer<Secret>(client, SECRETS, {
      ...opts,
      labelSelector: shardChildSelector(shard, CLUSTER_LABEL),
    }),
    ...(nio === "v1" && !nioMissing.includes(NIX_JOBS.plural)
      ? { decommissions: decommissionInformer(client, opts) }
      : {}),
    ...(nio === "v1" ? { jobs: runInformer(client, opts) } : {}),
  };
  indexClusterInformers(informers);
  return informers;
}

/**
 * NIO v1's run Jobs only, by the label NIO v1 stamps on its day-two workload (`managedLabels` in its
 * `nix_common.go`): a one-off run carries it itself, and a scheduled run gets it from its Pod template, whose
 * labels the API server copies onto a Job created without labels (the CronJob template NIO renders has
 * none). Never every Job of the management cluster.
 */
function runInformer(client: KubeClient, opts: { namespace?: string }): Informer<BatchJob> {
  return new Informer<BatchJob>(client, JOBS, { ...opts, labelSelector: NIO_RUN_SELECTOR, trim: dropJobSpec });
}

/**
 * A run's spec (its Pod template: the switch's arguments, volumes, files) is half of what a run Job weighs, and NICO
 * reads only a run's metadata and status (core/nodes/runs.ts `BatchJob`): the cache keeps those.
 */
export function dropJobSpec(job: KubeObject): KubeObject {
  return without(job, ["spec"]);
}

/**
 * NIO's hardware facts of a Machine (`status.hardwareFacts`: CPUs, memory, every disk) are for people and flakes;
 * NICO reads none of them (core/contract/nio.ts `Machine`), so the cache keeps the rest.
 */
export function dropMachineFacts(machine: KubeObject): KubeObject {
  const m = machine as { status?: Record<string, unknown> };
  if (m.status) m.status = without(m.status, ["hardwareFacts"]);
  return machine;
}

/**
 * Another shard's configuration (or one NICO did not make), as this shard keeps it: who owns it, its labels, and
 * the Machine it targets; its spec's files (the rendered cluster.nix), status and annotations are the other shard's
 * business.
 */
export function keepTargetOnly(config: KubeObject): KubeObject {
  const c = config as KubeObject & { spec?: { machineRef?: unknown } };
  const metadata: Record<string, unknown> = {};
  for (const k of ["name", "namespace", "uid", "resourceVersion", "labels", "ownerReferences", "deletionTimestamp"]) {
    const v = (c.metadata as Record<string, unknown>)[k];
    if (v !== undefined) metadata[k] = v;
  }
  const { apiVersion, kind } = c;
  return {
    ...(apiVersion !== undefined ? { apiVersion } : {}),
    ...(kind !== undefined ? { kind } : {}),
    metadata: metadata as KubeObject["metadata"],
    spec: { machineRef: c.spec?.machineRef },
  } as KubeObject;
}

/** NIO v1's decommission NixJobs (only those: the label NIO puts on them). */
function decommissionInformer(client: KubeClient, opts: { namespace?: string }): Informer<DecommissionJob> {
  return new Informer<DecommissionJob>(client, NIX_JOBS, {
    ...opts,
    labelSelector: `${NIO_OPERATION_LABEL}=${NIO_DECOMMISSION}`,
  });
}

/** Whether the API server serves `resource` (only NIO's resources can be missing). */
function isServed(resource: Resource, nioMissing: readonly string[]): boolean {
  return !(resource.group === NIO_GROUP && nioMissing.includes(resource.plural));
}

/**
 * The informers to start and wait for: all but those of NIO resources the API server does not serve (they would
 * only fail, every 30 s, and never sync).
 */
export function servedInformers(informers: ClusterInformers, nioMissing: readonly string[] = []): Informer[] {
  return (Object.values(informers) as unknown as Informer[]).filter((i) => isServed(i.resource, nioMissing));
}

/** What {@link clusterController} builds: the controller, its caches, and what it shares with the runtime. */
export interface ClusterControllerParts {
  controller: Controller;
  informers: ClusterInformers;
  /** The informers to start and wait for (those of NIO resources that are not served left out). */
  caches: Informer[];
  /** What NICO remembers about each cluster: `forgetAll()` when this replica stops leading. */
  memory: ClusterMemories;
  revisions?: RevisionResolver;
  workloads?: WorkloadCache;
}

/** A ready-to-run controller for KubernetesClusters, with its informers. */
export function clusterController(opts: ClusterControllerOptions): ClusterControllerParts {
  const settings = opts.settings;
  const informers = clusterInformers(
    opts.client,
    opts.log,
    settings.namespace,
    opts.resyncMs,
    settings.nio,
    settings.nioMissing,
    settings.shard,
  );
  // Revision and workload events run only after the controller below exists: both start in reconciles.
  const revisions = settings.resolveRefs
    ? revisionResolver(opts, (key) => {
      for (const c of tracker?.usersOf(key) ?? []) ctl.enqueue(c);
    })
    : undefined;
  const tracker = revisions && new RevisionTracker(revisions);
  const workloads = opts.workloads
    ? new WorkloadCache({ ...opts.workloads, log: opts.log, onChange: (key) => ctl.enqueue(key) })
    : undefined;
  const reconciler = new ClusterReconciler({
    client: opts.client,
    informers,
    recorder: opts.recorder,
    log: opts.log,
    settings,
    revisionTracker: tracker,
    workloads,
    etcd: opts.workloads
      ? {
        intervalMs: settings.etcdInterval,
        timeoutMs: settings.etcdTimeout,
        policy: targetPolicy(opts.workloads.policy),
        onChange: (key) => ctl.enqueue(key),
        idle: (key) => !workloads?.watching(key),
        rounds: workloads?.rounds,
      }
      : undefined,
  });
  const ctl = new Controller(
    {
      name: "kubernetescluster",
      workers: settings.workers,
      logger: opts.log,
      ...(opts.hooks ? { hooks: opts.hooks } : {}),
    },
    (key, signal, log) => reconciler.reconcile(key, signal, log),
  );
  watchEvents(ctl, informers, reconciler.memory, settings.nioMissing);
  return {
    controller: ctl,
    informers,
    caches: servedInformers(informers, settings.nioMissing),
    memory: reconciler.memory,
    ...(revisions ? { revisions } : {}),
    ...(workloads ? { workloads } : {}),
  };
}

/** The resolver of `gitRepo` refs to commits, polling every `refPollIntervalMs`; `onChange` requeues its users. */
function revisionResolver(opts: ClusterControllerOptions, onChange: (key: RevisionKey) => void): RevisionResolver {
  return new RevisionResolver({
    logger: opts.log,
    intervalMs: opts.settings.refPollInterval,
    ...(opts.gitAllowedHosts ? { allowedHosts: opts.gitAllowedHosts } : {}),
    // credentialsRef Secrets carry no NICO label, so they are read on demand, never cached.
    secretLookup: async (ns, name) => (await opts.client.get<Secret>(SECRETS, name, ns))?.data ?? undefined,
    onChange,
  });
}

/** Which events wake which clusters (controllers/cluster/mappers.ts); children's events are coalesced. */
function watchEvents(
  ctl: Controller,
  informers: ClusterInformers,
  memory: ClusterMemories,
  nioMissing: readonly string[],
): void {
  const soon = { coalesceMs: CHILD_EVENT_COALESCE_MS };
  // Children wake only the clusters of this controller's cache (with shards, its shard's).
  const ours = <T>(map: KeyMapper<T>) => ofCachedClusters(informers.clusters, map);
  ctl
    .watch(informers.clusters, undefined, { skip: ownStatusWrite(memory) })
    .watch(informers.secrets, ours(clusterOfLabel), soon);
  if (isServed(informers.configs.resource, nioMissing)) {
    ctl.watch(informers.configs, ours(configurationClusters(informers)), soon);
    // A stray child of ours (labelled for another shard) wakes its cluster; someone else's, the clusters wanting
    // its Machine; another shard's cluster's, nobody here.
    if (informers.others) ctl.watch(informers.others, ours(configurationClusters(informers)), soon);
  }
  if (isServed(informers.machines.resource, nioMissing)) {
    ctl.watch(informers.machines, ours(machineClusters(informers)), { ...soon, skip: machineUpdateChangesNothing });
  }
  if (informers.jobs) ctl.watch(informers.jobs, ours(runClusters(informers)), soon);
  if (informers.decommissions) ctl.watch(informers.decommissions, ours(decommissionClusters(informers)), soon);
}
