/**
 * Phase: the workload cluster. Reads what the connection cache knows (never
 * waiting on the network), drains a node before its configuration changes
 * or goes, uncordons nodes once they are Ready again, and deletes the Nodes
 * of departed machines once NIO removed their configuration (and, after a
 * restore, old Nodes that came with the backup).
 *
 * @module
 */
import { durationMs } from "../../../crds/kubernetescluster.ts";
import { keyOf } from "../../../lib/runtime/keys.ts";
import { errorMessage } from "../../../lib/runtime/log.ts";
import { kubeconfigSecret } from "../../../core/contract/names.ts";
import type { NodeReport } from "../../../core/nodes/readiness.ts";
import type { RolloutPlan } from "../../../core/rollout/plan.ts";
import type { DrainSettings } from "../../../core/nodes/workload.ts";
import { departedNodes } from "../../../core/nodes/departed.ts";
import { drainTargets, holdForDrains, type NodeDrain } from "../../../core/rollout/drainhold.ts";
import { deleteNode, drainNode, type DrainProgress, uncordon } from "../workload/drain.ts";
import { secretValue } from "../secrets.ts";
import type { ClusterScope } from "../scope.ts";
import type { WorkloadView } from "../view.ts";
import { DRAIN_REQUEUE_MS, type Requeue } from "../requeue.ts";
import { postEvent } from "../../events.ts";

const clusterKey = (s: ClusterScope) => keyOf(s.namespace, s.name);

/** What is known about the workload cluster; opens its connection lazily. */
export function observeWorkload(s: ClusterScope): WorkloadView {
  const cache = s.deps.workloads;
  if (!cache) return { disabled: true, api: { state: "Unknown", message: "not watched", since: s.now } };
  const text = secretValue(s.cache.secret(kubeconfigSecret(s.name)), "value");
  return { ...cache.view(clusterKey(s), text), hasKubeconfig: text !== undefined };
}

/** The drain settings of the spec, in milliseconds. */
export function drainSettings(s: ClusterScope): DrainSettings {
  const d = s.spec.rollout.drain;
  return {
    enabled: d.enabled,
    timeoutMs: durationMs(d.timeout),
    onTimeout: d.onTimeout,
    deleteEmptyDirData: d.deleteEmptyDirData,
  };
}

/** What the drains step answers: the plan with the drains' holds, the nodes it drains, when to look again. */
export interface DrainOutcome {
  /** The planner's plan with the nodes still draining held back (none while nodes cannot be rendered). */
  plan: RolloutPlan | undefined;
  /** Nodes drained (or being drained) for a change in this pass: not uncordoned now. */
  draining: ReadonlySet<string>;
  /** Look again soon while a drain is under way. */
  requeue?: Requeue | undefined;
}

/**
 * Step of the pass (pass.ts), after the plan and before etcd and the writes: each node whose Node is Ready is
 * cordoned and drained before its configuration changes or goes (core/rollout/drainhold.ts chooses which).
 * Answers the plan with the drains as its input: nodes still draining are held for this pass; a drain past its
 * timeout halts the rollout there (or lets it proceed, per `onTimeout`). While a drain is not finished, it asks
 * to be looked at again soon. Paused, nothing is drained.
 */
export async function drainBeforeChange(
  s: ClusterScope,
  plan: RolloutPlan | undefined,
  w: WorkloadView,
): Promise<DrainOutcome> {
  if (!plan) return { plan, draining: new Set() };
  const existing = new Set(s.ours.map((c) => c.spec.machineRef.name));
  const settings = drainSettings(s);
  const conn = s.deps.workloads?.connection(clusterKey(s));
  if (!settings.enabled || !s.writes.drains || !conn || w.api.state !== "Available" || !w.nodes) {
    return { plan, draining: new Set() };
  }
  const nodes = w.nodes;
  const targets = drainTargets(plan, existing, (m) => nodes.get(m)?.ready === "True");
  const draining = new Set(targets.touched);
  const drains: NodeDrain[] = [];
  for (const machine of targets.drain) {
    let progress: DrainProgress;
    try {
      progress = await drainNode(conn, machine, settings, s.now);
    } catch (err) {
      progress = { state: "Draining", message: `draining ${machine}: ${errorMessage(err)}` };
    }
    s.log.debug("drain pass", { node: machine, state: progress.state, message: progress.message });
    announceDrain(s, machine, progress, plan.remove.includes(machine));
    drains.push({ machine, state: progress.state, message: progress.message });
  }
  const held = holdForDrains(plan, drains, settings.onTimeout);
  for (const d of drains) {
    if (d.state !== "TimedOut") continue;
    const note = settings.onTimeout === "Proceed" ? `${d.message}; proceeding (onTimeout: Proceed)` : d.message;
    postEvent(s.deps.recorder, s.cluster, "DrainTimeout", note);
  }
  const busy = drains.filter((d) => d.state !== "Drained").map((d) => d.machine);
  return {
    plan: held,
    draining,
    requeue: busy.length ? { after: DRAIN_REQUEUE_MS, why: `draining ${busy.join(", ")}` } : undefined,
  };
}

/** Events of a drain pass: the cordon, and what a waiting drain waits for (told again when that changes). */
function announceDrain(s: ClusterScope, machine: string, p: DrainProgress, leaving: boolean): void {
  // What each drain waits for, as last told in a `DrainWaiting` Event: told again when it changes (or every 10 min).
  const drainNotes = s.memory.drainNotes;
  // Once per drain, even if a stale cache makes the next pass cordon the Node again.
  if (p.cordoned && drainNotes.allow(`${machine}/cordon`, "NodeCordoned", "", s.now.getTime())) {
    const why = leaving ? "it leaves the cluster" : "its configuration changes";
    postEvent(s.deps.recorder, s.cluster, "NodeCordoned", `cordoned Node ${machine} to drain it: ${why}`);
  }
  if (p.state !== "Draining") {
    drainNotes.clear(`${machine}/cordon`);
    return drainNotes.clear(machine);
  }
  if (drainNotes.allow(machine, "DrainWaiting", p.message, s.now.getTime())) {
    postEvent(s.deps.recorder, s.cluster, "DrainWaiting", p.message);
  }
}

/** After the pass: uncordon nodes NICO drained that are Ready again; delete Nodes of departed machines. */
export async function settleWorkloadNodes(
  s: ClusterScope,
  nodes: NodeReport[],
  w: WorkloadView,
  draining: ReadonlySet<string>,
): Promise<void> {
  const conn = s.deps.workloads?.connection(clusterKey(s));
  if (!conn || w.api.state !== "Available" || !w.nodes || !s.writes.workloadNodes) return;
  for (const n of nodes) {
    // Ready again at what NIO applied, and not being drained or changed in this pass.
    if (n.state !== "Ready" || draining.has(n.machine) || !w.nodes.get(n.machine)?.drainStarted) continue;
    try {
      if (await uncordon(conn, n.machine)) {
        postEvent(s.deps.recorder, s.cluster, "NodeUncordoned", `uncordoned Node ${n.machine}: Ready again`);
      }
    } catch (err) {
      s.log.error("cannot uncordon", { node: n.machine, error: errorMessage(err) });
    }
  }
  // A departed machine (not a member, NIO removed its configuration), or a Node a restore brought back that names
  // no machine of the cluster, no longer Ready (core/nodes/departed.ts).
  const restore = s.cluster.status?.restore;
  const departed = departedNodes({
    nodes: w.nodes,
    members: new Set(s.members),
    configured: new Set(s.ours.map((c) => c.spec.machineRef.name)),
    isMachine: (name) => s.machines.has(name),
    restoredFrom: restore?.step === "Succeeded" ? new Date(restore.startedAt) : undefined,
  });
  for (const { name, why } of departed) {
    try {
      if (await deleteNode(conn, name)) {
        s.log.info("deleted a departed Node", { node: name });
        postEvent(s.deps.recorder, s.cluster, "NodeDeleted", why);
      }
    } catch (err) {
      s.log.error("cannot delete a departed Node", { node: name, error: errorMessage(err) });
    }
  }
}
