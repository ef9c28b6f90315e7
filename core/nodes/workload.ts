/**
 * What NICO reads from a workload cluster, and what it makes of it: Node
 * readiness and which pods a drain evicts. Pure; table-tested.
 *
 * @module
 */
import { CONFIGURATION_ANNOTATION } from "../contract/labels.ts";
import type { ObjectMeta } from "../../crds/kubernetescluster.ts";

/** The part of a Node NICO reads. */
export interface KubeNode {
  metadata: ObjectMeta;
  spec?: { unschedulable?: boolean };
  status?: {
    conditions?: {
      type: string;
      status: string;
      reason?: string;
      message?: string;
      lastTransitionTime?: string;
      lastHeartbeatTime?: string;
    }[];
    nodeInfo?: { kubeletVersion?: string };
  };
}

/** The part of a Pod a drain reads. */
export interface KubePod {
  metadata: ObjectMeta;
  spec?: { nodeName?: string; volumes?: { name: string; emptyDir?: unknown }[] };
  status?: { phase?: string };
}

/** A Node as NICO sees it. */
export interface NodeView {
  name: string;
  /** The Node's Ready condition: True, False or Unknown (no condition yet: Unknown). */
  ready: "True" | "False" | "Unknown";
  /** Since when the Ready condition has had its status. */
  since?: Date | undefined;
  /** Reason and message of the Ready condition, when not True. */
  why?: string | undefined;
  /**
   * When its kubelet last posted its status, as far as the Node shows it: the Ready condition's last heartbeat (or
   * transition, whichever is later). A kubelet restarted by a switch posts at once; one left running posts changes
   * at once and otherwise every few minutes.
   */
  postedAt?: Date | undefined;
  cordoned: boolean;
  /** NICO cordoned it for a drain, at this time. */
  drainStarted?: Date | undefined;
  /** The configuration the node says it runs (its `nico.homystack.com/configuration` annotation), if it says. */
  configuration?: string | undefined;
  /** The version its kubelet reports (`status.nodeInfo.kubeletVersion`, such as `v1.31.4+k3s1`), if any. */
  kubeletVersion?: string | undefined;
  /** When the Node object was created (its `metadata.creationTimestamp`), if known. */
  createdAt?: Date | undefined;
}

/**
 * Reduces a Node to what readiness needs.
 *
 * @example
 * ```ts
 * import { viewNode } from "./workload.ts";
 * const v = viewNode({
 *   metadata: { name: "w-1" },
 *   spec: { unschedulable: true },
 *   status: { conditions: [{ type: "Ready", status: "False", reason: "KubeletNotReady", message: "container runtime is down" }] },
 * }, "nico.homystack.com/drain-started");
 * v.ready; // "False"
 * v.why; // "KubeletNotReady: container runtime is down"
 * v.cordoned; // true
 * ```
 */
export function viewNode(n: KubeNode, drainAnnotation: string): NodeView {
  const c = n.status?.conditions?.find((x) => x.type === "Ready");
  const ready = c?.status === "True" ? "True" : c?.status === "False" ? "False" : "Unknown";
  const drain = n.metadata.annotations?.[drainAnnotation];
  return {
    name: n.metadata.name,
    ready,
    since: c?.lastTransitionTime ? new Date(c.lastTransitionTime) : undefined,
    why: ready === "True" ? undefined : c ? [c.reason, c.message].filter(Boolean).join(": ") || undefined : undefined,
    ...(postedAt(c) ? { postedAt: postedAt(c) } : {}),
    cordoned: n.spec?.unschedulable === true,
    drainStarted: drain ? new Date(drain) : undefined,
    configuration: n.metadata.annotations?.[CONFIGURATION_ANNOTATION] || undefined,
    ...(n.status?.nodeInfo?.kubeletVersion ? { kubeletVersion: n.status.nodeInfo.kubeletVersion } : {}),
    ...(n.metadata.creationTimestamp ? { createdAt: new Date(n.metadata.creationTimestamp) } : {}),
  };
}

/** The later of a condition's heartbeat and transition times. */
function postedAt(c: { lastTransitionTime?: string; lastHeartbeatTime?: string } | undefined): Date | undefined {
  const times = [c?.lastHeartbeatTime, c?.lastTransitionTime].filter((t): t is string => !!t).map((t) => Date.parse(t))
    .filter((t) => !Number.isNaN(t));
  return times.length ? new Date(Math.max(...times)) : undefined;
}

/** The drain settings of `spec.rollout.drain`, with durations in milliseconds. */
export interface DrainSettings {
  enabled: boolean;
  timeoutMs: number;
  /** After the timeout: `Halt` stops the rollout there, `Proceed` updates the node anyway. */
  onTimeout: "Halt" | "Proceed";
  /** Evict pods with emptyDir volumes (their data is lost). */
  deleteEmptyDirData: boolean;
}

export interface PodRef {
  namespace: string;
  name: string;
}

/** What a drain does with the pods on one node. */
export interface DrainPlan {
  /** Evict these (through the Eviction API, so PodDisruptionBudgets apply). */
  evict: PodRef[];
  /** Already terminating: wait for them to go. */
  terminating: PodRef[];
  /** Left alone, with why (DaemonSet, mirror, finished). */
  skipped: { pod: PodRef; why: string }[];
  /** Not evicted because the settings forbid it; the drain cannot finish while they remain. */
  refused: { pod: PodRef; why: string }[];
}

const MIRROR_ANNOTATION = "kubernetes.io/config.mirror";

/**
 * Which pods of `node` to evict, skip, wait for or refuse.
 *
 * @example
 * ```ts
 * import { planDrain } from "./workload.ts";
 * const pods = [
 *   { metadata: { name: "web-1", namespace: "default" }, spec: { nodeName: "w-1" } },
 *   { metadata: { name: "cache-1", namespace: "default" }, spec: { nodeName: "w-1", volumes: [{ name: "tmp", emptyDir: {} }] } },
 *   { metadata: { name: "web-2", namespace: "default" }, spec: { nodeName: "w-2" } },
 * ];
 * const plan = planDrain(pods, "w-1", { deleteEmptyDirData: false });
 * plan.evict; // [{ namespace: "default", name: "web-1" }]
 * plan.refused.map((r) => r.pod.name); // ["cache-1"]
 * ```
 */
export function planDrain(
  pods: KubePod[],
  node: string,
  settings: Pick<DrainSettings, "deleteEmptyDirData">,
): DrainPlan {
  const plan: DrainPlan = { evict: [], terminating: [], skipped: [], refused: [] };
  for (const p of pods) {
    if (p.spec?.nodeName !== node) continue;
    const ref = { namespace: p.metadata.namespace ?? "default", name: p.metadata.name };
    const owner = p.metadata.ownerReferences?.find((o) => o.controller);
    if (p.metadata.annotations?.[MIRROR_ANNOTATION] !== undefined) {
      plan.skipped.push({ pod: ref, why: "mirror pod (static, managed by the kubelet)" });
    } else if (owner?.kind === "DaemonSet") {
      plan.skipped.push({ pod: ref, why: `DaemonSet ${owner.name}` });
    } else if (p.status?.phase === "Succeeded" || p.status?.phase === "Failed") {
      plan.skipped.push({ pod: ref, why: `finished (${p.status.phase})` });
    } else if (p.metadata.deletionTimestamp) {
      plan.terminating.push(ref);
    } else if (!settings.deleteEmptyDirData && (p.spec?.volumes ?? []).some((v) => v.emptyDir !== undefined)) {
      plan.refused.push({
        pod: ref,
        why: "has emptyDir data; set spec.rollout.drain.deleteEmptyDirData to evict it",
      });
    } else {
      plan.evict.push(ref);
    }
  }
  return plan;
}
