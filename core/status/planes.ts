/**
 * The conditions and plane figures one pass derives, for `computeStatus`
 * in `cluster.ts`. Pure.
 *
 * @module
 */
import { condition, type ConditionInput, listNames } from "./conditions.ts";
import type { PlaneStatus } from "../../crds/kubernetescluster.ts";
import type { NodeReport } from "../nodes/readiness.ts";
import type { Plane, PlaneSelection, Selection } from "../machines/selection.ts";
import type { StatusInput } from "./input.ts";
import { inFlight, runsDesired } from "./progress.ts";

export const PLANE_WORDS: Record<Plane, string> = { controlPlane: "control plane", dataPlane: "worker" };

/** The condition that says whether a plane is Ready. */
export const PLANE_CONDITION = { controlPlane: "ControlPlaneReady", dataPlane: "DataPlaneReady" } as const;

/**
 * How many nodes a plane asks for: the list's length or `count`; every matching Machine when neither bounds it.
 *
 * @example
 * ```ts
 * import { requestedSize } from "./planes.ts";
 * requestedSize({ members: ["w-1"], wanted: 3, shortfall: 2, mode: "selector", selector: "role=worker" }); // 3
 * requestedSize({ members: ["w-1", "w-2"], wanted: undefined, shortfall: 0, mode: "selector", selector: "role=worker" }); // 2
 * ```
 */
export function requestedSize(sel: PlaneSelection): number {
  return sel.wanted ?? sel.members.length;
}

/**
 * A plane's figures for `status.controlPlane` or `status.dataPlane`: ready, applied, total and requested
 * counts, and the member names.
 *
 * @example
 * ```ts
 * import { planeStatus } from "./planes.ts";
 * const sel = { members: ["w-1", "w-2"], wanted: 2, shortfall: 0, mode: "explicit" as const, selector: "" };
 * const w1 = { machine: "w-1", plane: "dataPlane" as const, state: "Ready" as const, reason: "Applied", detail: "applied", upToDate: true };
 * planeStatus([w1], sel).summary; // "1/2"
 * ```
 */
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

/**
 * `ControlPlaneReady` or `DataPlaneReady`: True once every member is Ready and the plane has the size it
 * asks for (a data plane that asks for no workers is True at once); otherwise why not (no machines, a failed
 * node, too few machines, or which nodes it waits for).
 *
 * @example
 * ```ts
 * import { planeCondition } from "./planes.ts";
 * const sel = { members: ["w-1", "w-2"], wanted: 2, shortfall: 0, mode: "explicit" as const, selector: "" };
 * const nodes = [
 *   { machine: "w-1", plane: "dataPlane" as const, state: "Ready" as const, reason: "Applied", detail: "applied", upToDate: true },
 *   { machine: "w-2", plane: "dataPlane" as const, state: "Applying" as const, reason: "Applying", detail: "waiting for NIO", upToDate: true },
 * ];
 * planeCondition("dataPlane", sel, nodes).message; // "1/2 worker machines ready; waiting for w-2 (waiting for NIO)"
 * ```
 */
export function planeCondition(plane: Plane, sel: PlaneSelection, nodes: NodeReport[]): ConditionInput {
  const type = PLANE_CONDITION[plane];
  const words = PLANE_WORDS[plane];
  const ready = nodes.filter((n) => n.state === "Ready").length;
  const total = sel.members.length;
  const requested = requestedSize(sel);
  const counted = `${ready}/${requested} ${words} machines ready`;
  if (total === 0) {
    return plane === "dataPlane" && (sel.wanted ?? 0) === 0
      ? condition("DataPlaneReady", "True", "NoWorkers", "no workers requested")
      : condition(type, "False", "NoMachines", `no ${words} machines selected`);
  }
  const failed = nodes.filter((n) => n.state === "Failed");
  if (failed.length) {
    const names = listNames(failed.map((n) => `${n.machine} (${n.detail})`));
    return condition(type, "False", "NodeFailed", `${counted}; failed: ${names}`);
  }
  const waiting = nodes.filter((n) => n.state !== "Ready").map((n) => `${n.machine} (${n.detail})`);
  if (ready === total && total < requested) {
    // One rule for both planes: a plane below the size asked for is not Ready, however healthy its nodes.
    const short = `${total} of ${requested} requested ${words} machines are available; see MachinesAvailable`;
    return condition(type, "False", "Underprovisioned", `${counted}: ${short}`);
  }
  if (ready === total) return condition(type, "True", "NodesReady", counted);
  if (!waiting.length) {
    // Nodes were not evaluated this pass (NICO is blocked before it can render them): say so, not "waiting for".
    return condition(type, "False", "WaitingForNodes", `${counted}; nodes not evaluated yet`);
  }
  return condition(type, "False", "WaitingForNodes", `${counted}; waiting for ${listNames(waiting)}`);
}

/**
 * `MachinesAvailable`: whether each plane found the Machines it asks for, with every selection problem in
 * the message.
 *
 * @example
 * ```ts
 * import { machinesCondition } from "./planes.ts";
 * const plane = (members: string[], wanted: number) => ({ members, wanted, shortfall: wanted - members.length, mode: "explicit" as const, selector: "" });
 * const c = machinesCondition({
 *   controlPlane: plane(["cp-1"], 1),
 *   dataPlane: plane(["w-1"], 2),
 *   problems: [{ plane: "dataPlane", machine: "w-2", reason: "NotFound", message: "Machine w-2 does not exist in namespace ns", kept: false }],
 * });
 * c.reason; // "MachinesUnavailable"
 * c.message; // "worker: 1 of 2 machines available (1 short; no more listed); Machine w-2 does not exist in namespace ns"
 * ```
 */
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
    const reason = explicitMissing ? "MachinesUnavailable" : "Underprovisioned";
    return condition("MachinesAvailable", "False", reason, [...parts, ...problems].join("; "));
  }
  const cp = sel.controlPlane.members.length;
  const w = sel.dataPlane.members.length;
  const msg = `${cp} control plane and ${w} worker machines selected`;
  return condition(
    "MachinesAvailable",
    "True",
    "MachinesSelected",
    problems.length ? `${msg}; ${problems.join("; ")}` : msg,
  );
}

/**
 * The rollout's conditions `RollingOut`, `UpToDate` and `Paused`, in that order; none when the pass has no
 * rollout view.
 *
 * @example
 * ```ts
 * import { rolloutConditions } from "./planes.ts";
 * const plane = (members: string[]) => ({ members, wanted: members.length, shortfall: 0, mode: "explicit" as const, selector: "" });
 * const plan = { create: [], update: ["w-1"], remove: [], pending: ["w-1"], removing: [], updating: ["w-1"] };
 * const conditions = rolloutConditions({
 *   generation: 2, previous: undefined, deleting: false,
 *   selection: { controlPlane: plane(["cp-1"]), dataPlane: plane(["w-1"]), problems: [] },
 *   nodes: [{ machine: "cp-1", plane: "controlPlane", state: "Ready", reason: "Applied", detail: "applied", upToDate: true }],
 *   bootstrap: "cp-1", endpoint: undefined, kubeconfigSecret: undefined, now: new Date(),
 *   rollout: { plan, paused: false, specHash: "0123456789abcdef", controlPlaneSize: 1 },
 * });
 * conditions.map((c) => `${c.type}=${c.status}`); // ["RollingOut=True", "UpToDate=False", "Paused=False"]
 * ```
 */
export function rolloutConditions(i: StatusInput): ConditionInput[] {
  const r = i.rollout;
  if (!r) return [];
  const { plan } = r;
  const paused = r.paused
    ? condition(
      "Paused",
      "True",
      "Paused",
      "paused: NICO changes no child object until spec.paused and the nico.homystack.com/paused annotation are cleared",
    )
    : condition("Paused", "False", "NotPaused", "changes are rolled out");
  const upToDate = i.nodes.filter(runsDesired).length;
  const total = i.nodes.length;
  const counted = `${upToDate}/${total} nodes run the desired configuration`;
  if (i.unresolved) {
    // The desired configuration is not known until the spec's ref resolves: no claim either way.
    const why = i.unresolved.message;
    return [
      condition("RollingOut", "False", i.unresolved.reason, `nothing rolls out: ${why}`),
      condition("UpToDate", "Unknown", i.unresolved.reason, `desired configuration unknown: ${why}`),
      paused,
    ];
  }
  const left = plan.pending.length + plan.removing.length;
  const updating = inFlight(i.nodes);
  const planned = counted +
    (plan.pending.length ? `; to update, in order: ${listNames(plan.pending, 8)}` : "") +
    (plan.removing.length ? `; to remove: ${listNames(plan.removing)}` : "");
  const uptodate = left === 0 && upToDate === total
    ? condition("UpToDate", "True", "UpToDate", counted)
    : condition("UpToDate", "False", "RolloutPending", planned);
  return [rollingCondition(i, { left, updating, upToDate, total }), uptodate, paused];
}

/** `RollingOut`: halted, a removal held, paused, rolling (with what it waits for), or complete. */
function rollingCondition(
  i: StatusInput,
  { left, updating, upToDate, total }: { left: number; updating: string[]; upToDate: number; total: number },
): ConditionInput {
  const r = i.rollout!;
  const { plan } = r;
  // The advice matters only when a control-plane node of a running cluster is being changed, or is next with
  // nothing else in flight: not while a worker is what the rollout waits for.
  const cp = new Set(i.nodes.filter((n) => n.plane === "controlPlane").map((n) => n.machine));
  const cpNow = updating.some((m) => cp.has(m)) || (!updating.length && cp.has(plan.pending[0] ?? ""));
  const smallCp = r.controlPlaneSize < 3 && cpNow && i.kubeconfigSecret
    ? `; with ${r.controlPlaneSize} control-plane node(s) an update of the control plane interrupts the Kubernetes API`
    : "";
  if (plan.halted) {
    const at = `halted at ${plan.halted.machine} (${plan.halted.detail})`;
    return condition(
      "RollingOut",
      "False",
      "RolloutStalled",
      `${at}: nothing else is touched until it recovers or the spec changes`,
    );
  }
  if (plan.held && left === 1 && !updating.length) {
    const stays = `${plan.held.machine} stays: ${plan.held.why}`;
    return condition("RollingOut", "False", "RemovalHeld", `${stays}; ${upToDate}/${total} nodes up to date`);
  }
  if (r.paused && left) return condition("RollingOut", "False", "Paused", `paused with ${left} node(s) pending`);
  if (left || updating.length) {
    const now = updating.length ? `updating ${listNames(updating)}` : "starting";
    const message = `${now}; ${upToDate}/${total} up to date${plan.waiting ? `; ${plan.waiting}` : ""}${smallCp}`;
    return condition("RollingOut", "True", "RollingOut", message);
  }
  return condition("RollingOut", "False", "RolloutComplete", `${total}/${total} nodes up to date`);
}
