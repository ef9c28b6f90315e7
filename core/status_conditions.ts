/**
 * The conditions and plane figures one pass derives, for {@link computeStatus}
 * in `status.ts`. Pure.
 *
 * @module
 */
import type { ConditionInput } from "./conditions.ts";
import { listNames } from "./conditions.ts";
import type { PlaneStatus } from "../crds/kubernetescluster.ts";
import type { NodeReport } from "./readiness.ts";
import type { Plane, PlaneSelection, Selection } from "./selection.ts";
import type { StatusInput } from "./status.ts";

export const PLANE_WORDS: Record<Plane, string> = { controlPlane: "control plane", dataPlane: "worker" };

/** How many nodes a plane asks for: the list's length or `count`; every matching Machine when neither bounds it. */
export function requestedSize(sel: PlaneSelection): number {
  return sel.wanted ?? sel.members.length;
}

export function planeStatus(nodes: NodeReport[], sel: PlaneSelection): PlaneStatus {
  const ready = nodes.filter((n) => n.state === "Ready").map((n) => n.machine).sort();
  const requested = requestedSize(sel);
  return {
    ready: ready.length,
    applied: nodes.filter((n) => n.applied ?? n.state === "Ready").length,
    total: sel.members.length,
    requested,
    summary: `${ready.length}/${requested}`,
    readyMachines: ready,
    machines: [...sel.members].sort(),
  };
}

export function planeCondition(type: string, plane: Plane, sel: PlaneSelection, nodes: NodeReport[]): ConditionInput {
  const words = PLANE_WORDS[plane];
  const ready = nodes.filter((n) => n.state === "Ready").length;
  const total = sel.members.length;
  const requested = requestedSize(sel);
  const counted = `${ready}/${requested} ${words} machines ready`;
  if (total === 0) {
    return plane === "dataPlane" && (sel.wanted ?? 0) === 0
      ? { type, status: "True", reason: "NoWorkers", message: "no workers requested" }
      : { type, status: "False", reason: "NoMachines", message: `no ${words} machines selected` };
  }
  const failed = nodes.filter((n) => n.state === "Failed");
  if (failed.length) {
    return {
      type,
      status: "False",
      reason: "NodeFailed",
      message: `${counted}; failed: ${listNames(failed.map((n) => `${n.machine} (${n.detail})`))}`,
    };
  }
  const waiting = nodes.filter((n) => n.state !== "Ready").map((n) => `${n.machine} (${n.detail})`);
  if (ready === total && total < requested) {
    // One rule for both planes: a plane below the size asked for is not Ready, however healthy its nodes.
    return {
      type,
      status: "False",
      reason: "Underprovisioned",
      message: `${counted}: ${total} of ${requested} requested ${words} machines are available; see MachinesAvailable`,
    };
  }
  if (ready === total) return { type, status: "True", reason: "NodesReady", message: counted };
  if (!waiting.length) {
    // Nodes were not evaluated this pass (NICO is blocked before it can render them): say so, not "waiting for".
    return { type, status: "False", reason: "WaitingForNodes", message: `${counted}; nodes not evaluated yet` };
  }
  return { type, status: "False", reason: "WaitingForNodes", message: `${counted}; waiting for ${listNames(waiting)}` };
}

export function machinesCondition(sel: Selection): ConditionInput {
  const parts: string[] = [];
  let underprovisioned = false;
  for (const plane of ["controlPlane", "dataPlane"] as const) {
    const p = sel[plane];
    if (p.shortfall > 0) {
      underprovisioned = true;
      const source = p.mode === "explicit" ? "listed" : `matching ${p.selector} and free`;
      parts.push(
        `${
          PLANE_WORDS[plane]
        }: ${p.members.length} of ${p.wanted} machines available (${p.shortfall} short; no more ${source})`,
      );
    }
  }
  const problems = sel.problems.map((p) => `${p.message}${p.kept ? " (kept as a member)" : ""}`);
  const explicitMissing = sel.problems.some((p) => !p.kept && sel[p.plane].mode === "explicit");
  if (underprovisioned || explicitMissing) {
    return {
      type: "MachinesAvailable",
      status: "False",
      reason: explicitMissing ? "MachinesUnavailable" : "Underprovisioned",
      message: [...parts, ...problems].join("; "),
    };
  }
  const cp = sel.controlPlane.members.length;
  const w = sel.dataPlane.members.length;
  const msg = `${cp} control plane and ${w} worker machines selected`;
  return {
    type: "MachinesAvailable",
    status: "True",
    reason: "MachinesSelected",
    message: problems.length ? `${msg}; ${problems.join("; ")}` : msg,
  };
}

export function rolloutConditions(i: StatusInput): ConditionInput[] {
  const r = i.rollout;
  if (!r) return [];
  const { plan } = r;
  const paused: ConditionInput = r.paused
    ? {
      type: "Paused",
      status: "True",
      reason: "Paused",
      message:
        "paused: NICO changes no child object until spec.paused and the nico.homystack.com/paused annotation are cleared",
    }
    : { type: "Paused", status: "False", reason: "NotPaused", message: "changes are rolled out" };
  const upToDate = i.nodes.filter((n) => n.upToDate && n.state === "Ready").length;
  const total = i.nodes.length;
  const left = plan.pending.length + plan.removing.length;
  const uptodate: ConditionInput = left === 0 && upToDate === total
    ? {
      type: "UpToDate",
      status: "True",
      reason: "UpToDate",
      message: `${upToDate}/${total} nodes run the desired configuration`,
    }
    : {
      type: "UpToDate",
      status: "False",
      reason: "RolloutPending",
      message: `${upToDate}/${total} nodes run the desired configuration` +
        (plan.pending.length ? `; to update, in order: ${listNames(plan.pending, 8)}` : "") +
        (plan.removing.length ? `; to remove: ${listNames(plan.removing)}` : ""),
    };
  const smallCp = r.controlPlaneSize < 3
    ? `; with ${r.controlPlaneSize} control-plane node(s) an update of the control plane interrupts the Kubernetes API`
    : "";
  let rolling: ConditionInput;
  if (plan.halted) {
    rolling = {
      type: "RollingOut",
      status: "False",
      reason: "RolloutStalled",
      message:
        `halted at ${plan.halted.machine} (${plan.halted.detail}): nothing else is touched until it recovers or the spec changes`,
    };
  } else if (plan.held && left === 1 && !plan.updating.length) {
    rolling = {
      type: "RollingOut",
      status: "False",
      reason: "RemovalHeld",
      message: `${plan.held.machine} stays: ${plan.held.why}; ${upToDate}/${total} nodes up to date`,
    };
  } else if (r.paused && left) {
    rolling = { type: "RollingOut", status: "False", reason: "Paused", message: `paused with ${left} node(s) pending` };
  } else if (left || plan.updating.length) {
    const now = plan.updating.length ? `updating ${listNames(plan.updating)}` : "starting";
    rolling = {
      type: "RollingOut",
      status: "True",
      reason: "RollingOut",
      message: `${now}; ${upToDate}/${total} up to date${plan.waiting ? `; ${plan.waiting}` : ""}${smallCp}`,
    };
  } else {
    rolling = {
      type: "RollingOut",
      status: "False",
      reason: "RolloutComplete",
      message: `${total}/${total} nodes up to date`,
    };
  }
  return [rolling, uptodate, paused];
}
