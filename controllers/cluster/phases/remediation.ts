/**
 * Phase: remediation. Decides per plane (core/rollout/remediation.ts) from what the
 * pass saw (controllers/cluster/remediation.ts), marks the Machine taken out
 * of service (annotation nico.homystack.com/remediated; the next pass's
 * selection drops it and picks its replacement, and the planner does the
 * rest), records Events for each step, and adds the `Remediating` condition.
 * Nothing is written while paused.
 *
 * @module
 */
import { REMEDIATED_ANNOTATION } from "../../../core/contract/labels.ts";
import type { ConditionInput } from "../../../core/status/conditions.ts";
import { CLUSTER_LABEL } from "../../../core/contract/labels.ts";
import { markValue } from "../../../core/machines/marks.ts";
import { MACHINES } from "../../../core/contract/nio.ts";
import { decideRemediation, type PlaneDecision } from "../../../core/rollout/remediation.ts";
import { type InFlightStep, remediationCondition, stepText } from "../../../core/status/remediation.ts";
import { remediationView } from "../remediation.ts";
import type { ClusterScope } from "../scope.ts";
import type { EtcdView, Member, WorkloadView } from "../view.ts";
import { type Requeue, soonest } from "../requeue.ts";
import { postEvent } from "../../events.ts";

/** What the phase did. */
export interface RemediationOutcome {
  /** Machines marked out of service in this pass. */
  marked: string[];
  /** Planes NICO refused to remediate, with why. */
  refused: { plane: string; reason: string }[];
  /** Remediations in flight (marked Machines not gone yet). */
  inFlight: string[];
  /** When to look again: a member nearing its deadline, or a Machine just marked. */
  requeue?: Requeue | undefined;
  /** The `Remediating` condition, when there is anything to say. */
  condition?: ConditionInput | undefined;
}

/** Decides, marks, tells, from the members as the pass ended (their facts, and reports after the workload cluster). */
export async function reconcileRemediation(
  s: ClusterScope,
  members: readonly Member[],
  workload: WorkloadView,
  etcd?: EtcdView,
): Promise<RemediationOutcome> {
  const view = remediationView(s, members, workload, etcd);
  const done: RemediationOutcome = { marked: [], refused: [], inFlight: view.inFlight.map((f) => f.machine) };
  tellSteps(s, view.inFlight);
  if (!view.planes.length && !view.inFlight.length && !view.short.length) return done;
  const decisions = view.planes.map(decideRemediation);
  for (const d of decisions) {
    if (d.kind === "take") {
      if (await mark(s, d)) done.marked.push(d.target.machine);
    } else if (d.kind === "refuse") {
      done.refused.push({ plane: d.plane, reason: d.reason });
      // A refusal is told again only when its reason changes, or every 10 minutes.
      if (s.memory.refusals.allow(d.plane, d.reason, "", s.now.getTime())) {
        postEvent(s.deps.recorder, s.cluster, "RemediationRefused", `${d.reason}: ${d.message}`);
      }
    } else s.memory.refusals.clear(d.plane);
  }
  done.condition = remediationCondition({ decisions, inFlight: view.inFlight, short: view.short });
  if (view.dueAt) {
    // Look again when the next member would cross its deadline (no event says so).
    const at = Math.max(1000, view.dueAt.getTime() - s.now.getTime() + 500);
    done.requeue = { after: at, why: "a member nears its remediation deadline" };
  }
  if (done.marked.length) {
    done.requeue = soonest(done.requeue, { after: 1000, why: "a machine was taken out of service" });
  }
  return done;
}

/** Marks the target's Machine out of service (only a Machine this cluster holds) and says so. */
async function mark(s: ClusterScope, d: Extract<PlaneDecision, { kind: "take" }>): Promise<boolean> {
  const machine = s.machines.get(d.target.machine);
  // Only this cluster releases its claims, so a Machine it holds now is still its own when the mark lands.
  if (!machine || machine.metadata.labels?.[CLUSTER_LABEL] !== s.name || !s.writes.remediation) return false;
  const value = markValue({
    cluster: s.name,
    plane: d.plane,
    at: s.now,
    reason: d.target.reason,
    message: d.target.message,
  });
  const written = await s.deps.client.mergePatch<typeof machine>(MACHINES, d.target.machine, s.namespace, {
    metadata: { annotations: { [REMEDIATED_ANNOTATION]: value } },
  });
  s.machines.set(d.target.machine, written);
  s.log.info("took a machine out of service", { machine: d.target.machine, reason: d.target.reason });
  const plane = d.plane === "controlPlane" ? "control-plane" : "worker";
  const by = d.spare
    ? `${d.spare} takes its place`
    : `no spare is free: the ${plane} plane is Underprovisioned until a Machine matching ` +
      `${s.selection[d.plane].selector || "the selector"} is`;
  postEvent(
    s.deps.recorder,
    s.cluster,
    "RemediationStarted",
    `took Machine ${d.target.machine} out of service (${d.target.reason}: ${d.target.message}); ${by}; ` +
      `it stays marked (${REMEDIATED_ANNOTATION}) until a person removes the mark`,
  );
  return true;
}

/** Events for each step of the remediations in flight, once each, and when one is finished. */
function tellSteps(s: ClusterScope, inFlight: InFlightStep[]): void {
  const told = s.memory.remediationSteps;
  const now = new Set(inFlight.map((f) => f.machine));
  for (const machine of [...told.keys()]) {
    if (now.has(machine)) continue;
    told.delete(machine);
    postEvent(
      s.deps.recorder,
      s.cluster,
      "RemediationFinished",
      `Machine ${machine} has left the cluster; it stays out of service until a person removes ${REMEDIATED_ANNOTATION}`,
    );
  }
  for (const f of inFlight) {
    const seen = told.get(f.machine) ?? new Set<string>();
    told.set(f.machine, seen);
    const ready = f.replacements.length > 0 && f.replacements.every((r) => r.ready);
    const steps: [boolean, "RemediationSpareReady" | "RemediationRemoving"][] = [
      [ready, "RemediationSpareReady"],
      [f.stage !== "waiting", "RemediationRemoving"],
    ];
    for (const [now, reason] of steps) {
      if (!now || seen.has(reason)) continue;
      seen.add(reason);
      postEvent(s.deps.recorder, s.cluster, reason, stepText(f));
    }
  }
}
