/**
 * The `Remediating` condition: True while a Machine this cluster took out
 * of service has not left yet (with where each stands), False with why
 * nothing is being remediated (nothing unhealthy, or the limit that stops
 * NICO and what to do). Pure.
 *
 * @module
 */
import { condition, type ConditionInput, listNames } from "./conditions.ts";
import type { Plane } from "../contract/labels.ts";
import type { Mark } from "../machines/marks.ts";
import type { PlaneDecision } from "../rollout/remediation.ts";

/** Where the departure of a Machine taken out of service stands. */
export type RemediationStage =
  /** Its configuration is still there: the planner removes it in its turn. */
  | "waiting"
  /** Its configuration is being deleted: NIO runs the removal flake (or gives up on a dead host). */
  | "removing"
  /** Its configuration is gone; NIO is not done with the Machine yet, so it is still claimed. */
  | "releasing";

/** One remediation in flight. */
export interface InFlightStep {
  machine: string;
  plane: Plane;
  mark: Mark;
  stage: RemediationStage;
  /** Members brought in since the mark (its replacement), and whether each is Ready. */
  replacements: { machine: string; ready: boolean }[];
}

/** A selector plane below its size with Machines this cluster took out of service: there was no spare. */
export interface ShortPlane {
  plane: Plane;
  members: number;
  wanted: number;
  selector: string;
  outOfService: string[];
}

export interface RemediationStatusInput {
  decisions: PlaneDecision[];
  inFlight: InFlightStep[];
  short: ShortPlane[];
}

const WORDS: Record<Plane, string> = { controlPlane: "control-plane", dataPlane: "worker" };

/**
 * Where one remediation stands, for the condition and Events.
 *
 * @example
 * ```ts
 * import { stepText } from "./remediation.ts";
 * const mark = { cluster: "c", plane: "dataPlane" as const, at: new Date(), reason: "NodeNotReady", message: "" };
 * stepText({ machine: "w-1", plane: "dataPlane", mark, stage: "removing", replacements: [{ machine: "w-3", ready: true }] });
 * // "w-1 (NodeNotReady) is replaced by w-3 (Ready); NIO is removing w-1's configuration (the removal flake runs if the host answers; NIO v1 retries it, then gives up on a host that does not)"
 * ```
 */
export function stepText(s: InFlightStep): string {
  const by = s.replacements.length
    ? `is replaced by ${listNames(s.replacements.map((r) => `${r.machine} (${r.ready ? "Ready" : "joining"})`))}`
    : `has no replacement (no spare is free)`;
  const stage = s.stage === "waiting"
    ? s.plane === "controlPlane"
      ? `${s.machine} is removed once its replacement is Ready and every other control-plane node is available`
      : `${s.machine} is removed in its turn`
    : s.stage === "removing"
    ? `NIO is removing ${s.machine}'s configuration (the removal flake runs if the host answers; NIO v1 retries it, ` +
      `then gives up on a host that does not)`
    : `${s.machine}'s configuration is gone; the Machine is released once NIO is done with it (see MachinesReleasing)`;
  return `${s.machine} (${s.mark.reason}) ${by}; ${stage}`;
}

/**
 * The `Remediating` condition.
 *
 * @example
 * ```ts
 * import { remediationCondition } from "./remediation.ts";
 * remediationCondition({ decisions: [{ plane: "dataPlane", kind: "healthy" }], inFlight: [], short: [] }).reason; // "NoUnhealthyNodes"
 * ```
 */
export function remediationCondition(i: RemediationStatusInput): ConditionInput {
  const type = "Remediating";
  const refusals = i.decisions.filter((d) => d.kind === "refuse")
    .sort((a, b) => (a.plane === b.plane ? 0 : a.plane === "controlPlane" ? -1 : 1));
  const refused = refusals.map((d) => `${WORDS[d.plane]}: ${d.message}`);
  const taking = i.decisions.filter((d) => d.kind === "take")
    .map((d) => `taking ${d.target.machine} out of service (${d.target.reason}: ${d.target.message})`);
  if (i.inFlight.length || taking.length) {
    const steps = [...taking, ...i.inFlight.map(stepText), ...shortText(i.short)];
    return condition(type, "True", "Remediating", [...steps, ...refused].join("; "));
  }
  const first = refusals[0];
  if (first) return condition(type, "False", first.reason, refused.join("; "));
  const short = shortText(i.short);
  if (short.length) return condition(type, "False", "NoSpare", short.join("; "));
  return condition(type, "False", "NoUnhealthyNodes", "no node is unhealthy");
}

function shortText(short: ShortPlane[]): string[] {
  return short.map((p) =>
    `the ${WORDS[p.plane]} plane is Underprovisioned (${p.members} of ${p.wanted}): ` +
    `${listNames(p.outOfService)} ${p.outOfService.length === 1 ? "is" : "are"} out of service and no free ` +
    `Machine matches ${p.selector || "the selector"}; add one, or remove the nico.homystack.com/remediated ` +
    `mark of a repaired Machine`
  );
}
