/**
 * Writing a cluster's status through the subresource, only when it changed.
 *
 * @module
 */
import { isDeepStrictEqual } from "node:util";
import type { KubernetesCluster, KubernetesClusterStatus } from "../../crds/kubernetescluster.ts";
import type { KubeClient } from "../../lib/kube/client.ts";
import { isNotFound } from "../../lib/kube/errors.ts";
import { KUBERNETES_CLUSTERS } from "../../crds/kubernetescluster.ts";
import type { ReconcileResult } from "../../lib/runtime/controller.ts";
import { errorMessage } from "../../lib/runtime/log.ts";
import { clusterHash } from "../../core/render/desired.ts";
import { kubeconfigSecret } from "../../core/contract/names.ts";
import type { NodeReport } from "../../core/nodes/readiness.ts";
import type { ClusterStatusInput, Problem } from "../../core/status/cluster.ts";
import { workloadConditions } from "../../core/status/workload.ts";
import { etcdStatus } from "../../core/etcd/health.ts";
import { condition } from "../../core/status/conditions.ts";
import { nioMissingMessage } from "../../core/contract/nioinstall.ts";
import { statusPatch } from "../../core/status/write.ts";
import type { ClusterScope } from "./scope.ts";
import { passPlan, type PassRecord, phaseConditions } from "./pass.ts";

/**
 * Merge-patches `status` when it differs from what `cluster` carries; fields
 * it lacks are removed, nested ones too. Answers the resourceVersion the write produced
 * (undefined when nothing was written).
 */
export async function writeStatus(
  client: KubeClient,
  cluster: KubernetesCluster,
  status: KubernetesClusterStatus,
): Promise<string | undefined> {
  if (isDeepStrictEqual(stripUndefined(status), stripUndefined(cluster.status ?? {}))) return undefined;
  try {
    const written = await client.mergePatch<KubernetesCluster>(
      KUBERNETES_CLUSTERS,
      cluster.metadata.name,
      cluster.metadata.namespace,
      { status: statusPatch(cluster.status ?? {}, status) },
      "status",
    );
    return written.metadata.resourceVersion;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw new Error(`Cannot write status: ${errorMessage(err)}`, { cause: err });
  }
}

/** `status` saying which shard reconciles the cluster (the default shard says nothing: the field is removed). */
export function withShard(status: KubernetesClusterStatus, shard: string | undefined): KubernetesClusterStatus {
  return shard === undefined ? status : { ...status, shard };
}

function stripUndefined<T>(v: T): T {
  return JSON.parse(JSON.stringify(v));
}

/** `r`, looking again no later than `ms` from now when a status write is held back. */
export function withHeld(r: ReconcileResult, ms: number | undefined): ReconcileResult {
  if (ms === undefined) return r;
  return { requeueAfter: Math.min(r?.requeueAfter ?? Infinity, ms) };
}

/** What the status of a normal pass is computed from: the scope, its node reports, and how the pass ended. */
export function passStatusInput(
  s: ClusterScope,
  rec: PassRecord,
  nodes: NodeReport[],
  problem: Problem | undefined,
  cutShort: boolean,
): ClusterStatusInput {
  const { cluster } = s;
  const planned = rec.planned;
  const plan = passPlan(rec);
  return {
    kind: "pass",
    problem,
    cutShort,
    rollout: planned && plan && {
      plan,
      paused: s.paused,
      specHash: clusterHash([...planned.wantedHash.values()]),
      controlPlaneSize: s.selection.controlPlane.members.length,
    },
    generation: cluster.metadata.generation ?? 0,
    previous: cluster.status,
    deleting: false,
    selection: s.selection,
    nodes,
    bootstrap: s.bootstrap,
    endpoint: planned?.endpoint,
    kubeconfigSecret: rec.kubeconfig ??
      (s.cache.secret(kubeconfigSecret(s.name)) ? kubeconfigSecret(s.name) : undefined),
    blocked: planned?.blocked,
    unresolved: planned?.pinned.unresolved,
    revision: planned?.pinned.revision,
    extra: [
      ...phaseConditions(rec),
      ...(s.deps.nioMissing.length
        ? [condition("NIOIncomplete", "True", "ResourcesMissing", nioMissingMessage(s.deps.nio, s.deps.nioMissing))]
        : []),
      ...(rec.workload
        ? workloadConditions({ workload: rec.workload, server: planned?.endpoint, nodes, now: s.now })
        : []),
    ],
    versions: rec.versions && {
      status: rec.versions.versions.status,
      downgrade: rec.versions.versions.plan.downgrade ? rec.versions.versions.plan.waiting : undefined,
    },
    etcd: rec.etcd?.sight.kind === "seen"
      ? {
        ...etcdStatus(rec.etcd.sight.members, rec.etcd.nodes),
        ...(rec.backups ? { backups: rec.backups.status } : {}),
      }
      : undefined,
    restore: rec.restore?.plan.record,
    workloadApi: rec.workload && !rec.workload.disabled
      ? { available: rec.workload.api.state === "Available", message: rec.workload.api.message }
      : undefined,
    now: s.now,
  };
}
