/**
 * Everything one reconcile pass of a cluster works on, gathered once: the
 * cluster and its parsed spec, its Machines, configurations and Secrets
 * (from the caches), the selection, the bootstrap node and `now`. The
 * phases read it; what each produces it answers (see pass.ts), and the
 * status is computed from that on every exit.
 *
 * @module
 */
import { durationMs, type KubernetesCluster, type KubernetesClusterSpec } from "../../crds/kubernetescluster.ts";
import type { EventRecorder } from "../../lib/events.ts";
import type { KubeClient } from "../../lib/kube/client.ts";
import type { Logger } from "../../lib/runtime/log.ts";
import { BOOTSTRAP_LABEL } from "../../core/contract/labels.ts";
import { isPaused, type PassWrites, passWrites } from "../../core/rollout/pause.ts";
import type { DecommissionJob, Machine, NixosConfiguration } from "../../core/contract/nio.ts";
import type { BatchJob } from "../../core/nodes/runs.ts";
import {
  type ClusterRef,
  configNameOf,
  isOwnedBy,
  type Selection,
  selectMachines,
} from "../../core/machines/selection.ts";
import type { Revision } from "../../lib/git/resolver.ts";
import { ClusterMemory } from "./memory.ts";
import type { RevisionTracker } from "./revisions.ts";
import type { Secret } from "./secrets.ts";
import type { WorkloadCache } from "./workload/cache.ts";
import type { EtcdWatching } from "./etcd/observer.ts";
import { type ClusterSettings, clusterSettings } from "./settings.ts";

/**
 * What the reconciler is given once, for every pass: the settings (controllers/cluster/settings.ts, every knob with
 * its one default, read as `s.deps.<knob>`) and the connections and helpers built from them.
 */
export interface ClusterDeps extends ClusterSettings {
  client: KubeClient;
  recorder: EventRecorder;
  /** Pins each node to the commit `ref` resolves to; absent: `ref` is passed to NIO as written. */
  revisionTracker?: RevisionTracker | undefined;
  /** Connections to workload clusters; absent: NICO does not look inside them (applied counts as Ready). */
  workloads?: WorkloadCache | undefined;
  /** How NICO watches clusters' etcd (with workload connections); absent: it does not. */
  etcd?: EtcdWatching | undefined;
}

/** The dependencies of a pass: `settings` (defaults for what it leaves out) with what is built from them. */
export function clusterDeps(
  parts: Pick<ClusterDeps, "client" | "recorder" | "revisionTracker" | "workloads" | "etcd">,
  settings: ClusterSettings = clusterSettings(),
): ClusterDeps {
  return { ...settings, ...parts };
}

/** The cached objects of the cluster's namespace a pass reads. */
export interface ClusterCache {
  machines: Machine[];
  configs: NixosConfiguration[];
  /** The configuration of that name in the namespace, if any. */
  config(name: string): NixosConfiguration | undefined;
  /** NICO's Secret of that name in the namespace, if any. */
  secret(name: string): Secret | undefined;
  /** NIO v1: the batch Jobs of the namespace (its runs among them); empty with the older NIO. */
  jobs: BatchJob[];
  /** NIO v1: the decommission NixJobs of the namespace. */
  decommissions: DecommissionJob[];
}

/**
 * What a step needs that also runs without a pass's scope (deletion, whose spec may not parse): the
 * dependencies, the cluster, what NICO remembers of it, the cached objects of its namespace, the logger.
 */
export interface ClusterContext {
  readonly deps: ClusterDeps;
  readonly memory: ClusterMemory;
  readonly cluster: KubernetesCluster;
  readonly cache: ClusterCache;
  readonly log: Logger;
}

/** One pass over one cluster. */
export interface ClusterScope extends ClusterContext {
  readonly spec: KubernetesClusterSpec;
  readonly ref: ClusterRef;
  readonly name: string;
  readonly namespace: string;
  readonly now: Date;
  /** Machines of the namespace by name; the claims phase puts what the server answered. */
  readonly machines: Map<string, Machine>;
  /** Configurations this cluster owns (controller reference by uid). */
  readonly ours: NixosConfiguration[];
  readonly selection: Selection;
  /** Control plane then worker members; none while the cluster cannot start and holds nothing yet. */
  readonly members: string[];
  /** The name of a machine's configuration: the one this cluster already has for it, else `<cluster>.<machine>`. */
  readonly nameOf: (machine: string) => string;
  /** The bootstrap node of this pass, if there is a control plane. */
  readonly bootstrap: string | undefined;
  readonly gitRepo: string | undefined;
  /** What is known of the commit `gitRepo` and `ref` resolve to, looked up once per pass; none without pinning. */
  readonly revision: Revision | undefined;
  readonly paused: boolean;
  /** What this pass may write (core/rollout/pause.ts): the one pause gate the phases ask. */
  readonly writes: PassWrites;
  readonly timeoutMs: number;
}

/** Independent writes of one pass (claims, configurations) in flight at once: enough to pipeline, few enough
 * that one cluster does not crowd the API server for the others. */
export const WRITES_IN_FLIGHT = 4;

/**
 * Gathers the scope of one pass; pure over the cache. `memory` is what NICO remembers of the cluster
 * (absent: nothing, a memory of this pass alone).
 */
export function buildScope(
  deps: ClusterDeps,
  cluster: KubernetesCluster,
  spec: KubernetesClusterSpec,
  cache: ClusterCache,
  now: Date,
  log: Logger,
  memory?: ClusterMemory,
): ClusterScope {
  const namespace = cluster.metadata.namespace!;
  const name = cluster.metadata.name;
  const ref: ClusterRef = { name, namespace, uid: cluster.metadata.uid };
  const ours = cache.configs.filter((c) => isOwnedBy(c, ref));
  const recordedBootstrap = cluster.status?.bootstrapNode ??
    ours.find((c) => c.metadata.labels?.[BOOTSTRAP_LABEL] === "true")?.spec.machineRef.name;
  const selection = selectMachines({
    cluster: { ...ref, spec },
    machines: cache.machines,
    configurations: cache.configs,
    bootstrap: recordedBootstrap,
  });
  const cpMembers = selection.controlPlane.members;
  // The bootstrap node stays the bootstrap while it is a member; a departing bootstrap node that is
  // still the API endpoint keeps the role until spec.controlPlaneEndpoint is set (the planner holds it).
  const recordedStays = recordedBootstrap !== undefined && (cpMembers.includes(recordedBootstrap) ||
    (!spec.controlPlaneEndpoint && cpMembers.length > 0 &&
      ours.some((c) => c.spec.machineRef.name === recordedBootstrap)));
  const gitRepo = spec.gitRepo ?? deps.defaultGitRepo;
  const revision = gitRepo === undefined ? undefined : lookupRevision(deps, cluster, spec, gitRepo);
  // A cluster that cannot start (no repository, no control plane, a ref that does not resolve) and has nothing
  // yet holds no Machines: others may use them. It claims them again once it can start.
  const refFails = revision !== undefined && !revision.commit && revision.error !== undefined;
  const paused = isPaused(spec, cluster.metadata.annotations);
  const canStart = ours.length > 0 || (gitRepo !== undefined && cpMembers.length > 0 && !refFails);
  return {
    deps,
    memory: memory ?? new ClusterMemory(`${namespace}/${name}`, cluster.metadata.uid),
    log,
    cluster,
    spec,
    ref,
    name,
    namespace,
    now,
    cache,
    machines: new Map(cache.machines.map((m) => [m.metadata.name, m])),
    ours,
    selection,
    members: canStart ? [...cpMembers, ...selection.dataPlane.members] : [],
    nameOf: configNameOf(ref, cache.configs),
    bootstrap: recordedStays ? recordedBootstrap : cpMembers[0],
    gitRepo,
    revision,
    paused,
    writes: passWrites(paused),
    timeoutMs: spec.rollout.nodeTimeout ? durationMs(spec.rollout.nodeTimeout) : deps.nodeTimeout,
  };
}

/** Looks up (without waiting) the commit the spec's repository and ref resolve to, when NICO pins revisions. */
function lookupRevision(
  deps: ClusterDeps,
  cluster: KubernetesCluster,
  spec: KubernetesClusterSpec,
  gitRepo: string,
): Revision | undefined {
  const ns = cluster.metadata.namespace!;
  return deps.revisionTracker?.lookup(`${ns}/${cluster.metadata.name}`, {
    url: gitRepo,
    ref: spec.ref,
    credentialsSecret: spec.credentialsRef ? { namespace: ns, name: spec.credentialsRef.name } : undefined,
  });
}
