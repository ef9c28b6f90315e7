/**
 * Cordon, drain, uncordon and delete Nodes in a workload cluster. One call
 * of {@link drainNode} does one bounded pass (evictions through the
 * Eviction API, so PodDisruptionBudgets apply; a 429 means "not now") and
 * reports progress; the reconciler calls it again until the node is drained
 * or the drain times out. The drain's start is kept on the Node itself.
 *
 * @module
 */
import type { KubeClient } from "../../../lib/kube/client.ts";
import { isNotFound } from "../../../lib/kube/errors.ts";
import { ApiError } from "../../../lib/kube/errors.ts";
import { NODES } from "../../../lib/kube/resources.ts";
import { formatDuration } from "../../../lib/duration.ts";
import { errorMessage } from "../../../lib/runtime/log.ts";
import { DRAIN_STARTED_ANNOTATION } from "../../../core/contract/labels.ts";
import { type DrainSettings, planDrain, type PodRef } from "../../../core/nodes/workload.ts";
import { listNames } from "../../../core/status/conditions.ts";
import type { WorkloadConnection } from "./connection.ts";

/** The client's request method type, whatever the kube library underneath calls it. */
type Method = Parameters<KubeClient["request"]>[0];

export interface DrainProgress {
  state: "Drained" | "Draining" | "TimedOut";
  message: string;
  /** This call cordoned the Node (it was schedulable, or NICO's drain mark was missing). */
  cordoned?: boolean;
}

const showPod = (p: PodRef) => `${p.namespace}/${p.name}`;

/** Marks the Node unschedulable, noting when NICO started draining it. */
export async function cordon(conn: WorkloadConnection, node: string, now: Date): Promise<void> {
  await conn.client.mergePatch(NODES, node, undefined, {
    metadata: { annotations: { [DRAIN_STARTED_ANNOTATION]: now.toISOString() } },
    spec: { unschedulable: true },
  });
}

/** Makes the Node schedulable again, if NICO cordoned it (a Node someone else cordoned stays so). */
export async function uncordon(conn: WorkloadConnection, node: string): Promise<boolean> {
  const n = conn.node(node);
  if (!n?.metadata.annotations?.[DRAIN_STARTED_ANNOTATION]) return false;
  try {
    await conn.client.mergePatch(NODES, node, undefined, {
      metadata: { annotations: { [DRAIN_STARTED_ANNOTATION]: null } },
      spec: { unschedulable: null },
    });
    return true;
  } catch (err) {
    if (isNotFound(err)) return false;
    throw err;
  }
}

/** Deletes a departed node's Node object; `false` when it was already gone. */
export async function deleteNode(conn: WorkloadConnection, node: string): Promise<boolean> {
  return await conn.client.delete(NODES, node);
}

/** Asks the API server to evict a pod; answers why not, or `undefined` when it accepted (or the pod is gone). */
async function evict(conn: WorkloadConnection, pod: PodRef): Promise<string | undefined> {
  const path = `/api/v1/namespaces/${encodeURIComponent(pod.namespace)}/pods/${encodeURIComponent(pod.name)}/eviction`;
  try {
    await conn.client.request("POST" as Method, path, {
      body: {
        apiVersion: "policy/v1",
        kind: "Eviction",
        metadata: { name: pod.name, namespace: pod.namespace },
      },
    });
    return undefined;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    if (err instanceof ApiError && err.status === 429) return budgetRefusal(pod, err);
    return errorMessage(err);
  }
}

/**
 * Why the Eviction API said "not now" (429), naming the budget: `PodDisruptionBudget apps/web: needs 2 healthy
 * pods and has 2 currently`. The API server names it in the answer's causes; without one, its message.
 */
function budgetRefusal(pod: PodRef, err: ApiError): string {
  const cause = err.causes.find((c) => c.reason === "DisruptionBudget")?.message ?? "";
  const m = /disruption budget (\S+) (.+)$/i.exec(cause);
  if (m) return `PodDisruptionBudget ${pod.namespace}/${m[1]}: ${m[2]}`;
  return `PodDisruptionBudget: ${err.message}`;
}

/** One pass of draining `node`: cordon if needed, evict what may go, report what is left. */
export async function drainNode(
  conn: WorkloadConnection,
  node: string,
  settings: DrainSettings,
  now: Date,
): Promise<DrainProgress> {
  const n = conn.node(node);
  if (!n) return { state: "Drained", message: `Node ${node} is not registered: nothing to drain` };
  const marked = n.metadata.annotations?.[DRAIN_STARTED_ANNOTATION];
  const cordoned = !marked || !n.spec?.unschedulable;
  if (cordoned) await cordon(conn, node, marked ? new Date(marked) : now);
  const progress = await drainPass(conn, node, settings, now, marked ?? now.toISOString());
  return cordoned ? { ...progress, cordoned } : progress;
}

/** The eviction part of {@link drainNode}, once the Node is cordoned. */
async function drainPass(
  conn: WorkloadConnection,
  node: string,
  settings: DrainSettings,
  now: Date,
  started: string,
): Promise<DrainProgress> {
  const pods = conn.podsOn(node);
  if (!pods) return { state: "Draining", message: `cordoned ${node}; listing its pods` };
  const plan = planDrain(pods, node, settings);
  const refusedEviction: string[] = [];
  for (const p of plan.evict) {
    const why = await evict(conn, p);
    if (why) refusedEviction.push(`${showPod(p)} (${why})`);
  }
  const left = plan.evict.length + plan.terminating.length + plan.refused.length;
  if (!left) return { state: "Drained", message: `drained ${node}` };
  const parts = [
    plan.evict.length - refusedEviction.length > 0
      ? `evicted ${plan.evict.length - refusedEviction.length} pod(s)`
      : "",
    refusedEviction.length ? `eviction refused for ${listNames(refusedEviction, 3)}` : "",
    plan.terminating.length ? `waiting for ${listNames(plan.terminating.map(showPod), 3)} to terminate` : "",
    plan.refused.length ? `not evicting ${listNames(plan.refused.map((r) => `${showPod(r.pod)} (${r.why})`), 3)}` : "",
  ].filter(Boolean).join("; ");
  const elapsed = now.getTime() - new Date(started).getTime();
  if (elapsed > settings.timeoutMs) {
    return {
      state: "TimedOut",
      message: `draining ${node} took longer than ${
        formatDuration(settings.timeoutMs)
      } (spec.rollout.drain.timeout): ${parts}`,
    };
  }
  return { state: "Draining", message: `draining ${node}: ${parts}` };
}
