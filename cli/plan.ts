/**
 * `nico plan <cluster>`: the pending rollout in order, and why each step
 * waits. It runs NICO's own planner (core/rollout/plan.ts) over the cluster as
 * it is now (core/rollout/steps.ts), so it says what NICO will do; with
 * `spec.version`, every step of the way there too (cli/versions.ts).
 *
 * @module
 */
import { type RolloutSteps, rolloutSteps } from "../core/rollout/steps.ts";
import { commandHelp, type FlagSpec } from "./flags.ts";
import { type ClusterView, rolloutDrains, showCluster } from "./observe.ts";
import { plannerInput } from "../core/rollout/input.ts";
import type { RolloutInput } from "../core/rollout/types.ts";
import { markOf } from "../core/machines/marks.ts";
import { rolloutSettings } from "../crds/defaults.ts";
import { type Cell, paint, stdoutStyle, type Style, table } from "./term.ts";
import { rolloutVersionsOf, versionLines } from "./versions.ts";

const FLAGS: FlagSpec[] = [
  { name: "color", choices: ["auto", "always", "never"], help: "colour: auto (on a terminal, unless NO_COLOR)" },
];

export const PLAN_HELP = commandHelp(
  "nico plan <cluster> [flags]",
  "Shows the pending rollout step by step, in the order NICO will do it, and why each step waits.\n" +
    "Each step assumes the nodes of the steps before it finished applying.",
  FLAGS,
);

function stepRows(steps: RolloutSteps): Cell[][] {
  const rows: Cell[][] = [];
  let previous: { nodes: string[]; why: string | undefined } | undefined;
  let n = 0;
  for (const step of steps.steps) {
    const waitsFor = previous ? previous.nodes : step.waitingFor;
    const why = previous ? previous.why : step.waitingFor.length ? step.waiting : undefined;
    const label = step.index === 0 && !step.waitingFor.length ? "now" : String(step.actions.length ? ++n : n);
    for (const a of step.actions) {
      rows.push([
        { text: label, paint: label === "now" ? "yellow" : undefined },
        a.action,
        a.machine,
        waitsFor.length ? waitsFor.join(", ") : "-",
        why ?? "",
      ]);
    }
    const drains = (step.held ?? []).map((h) => `${h.machine} (drain)`);
    previous = {
      nodes: [...step.waitingFor, ...step.actions.map((a) => a.machine), ...drains].sort(),
      why: step.waiting,
    };
  }
  return rows;
}

/**
 * The planner's input as NICO would build it now, from the view: the same {@link plannerInput} the reconciler
 * calls, given what the status and the objects say. The workload API's hold and the departed nodes not released
 * yet are the controller's alone to see; what they held is in the status' drains and etcd holds.
 */
export function planInputOf(v: ClusterView): RolloutInput {
  const spec = v.cluster.spec;
  const members = v.nodes.filter((n) => !n.departing);
  // The planner's version rules read what the status says the nodes report and are asked for.
  const { versions, changing } = rolloutVersionsOf(v);
  return plannerInput({
    rollout: rolloutSettings(spec.rollout),
    endpointSet: spec.controlPlaneEndpoint !== undefined,
    reports: members,
    changing,
    departing: v.nodes.filter((n) => n.departing).map((n) => ({
      machine: n.machine,
      plane: n.plane,
      deleting: n.config?.metadata.deletionTimestamp !== undefined,
      ...(markOf(n.machineObj) ? { down: true } : {}),
    })),
    bootstrap: v.cluster.status?.bootstrapNode ?? members.find((n) => n.plane === "controlPlane")?.machine ?? "",
    paused: v.paused,
    kubeconfigIssued: v.cluster.status?.kubeconfigSecret !== undefined,
    hold: undefined,
    releasing: [],
    versions,
    // The snapshot each control-plane step waits for is the controller's to take: the plan shows the steps, and
    // RollingOut (status) says when one waits for its snapshot.
    backup: undefined,
  });
}

/** The plan, as text. Pure apart from the style. */
export function renderPlan(v: ClusterView, style: Style): string {
  const input = planInputOf(v);
  const steps = rolloutSteps(input, rolloutDrains(v));
  const c = v.cluster;
  const r = c.status?.rollout;
  const counted = r ? `${r.upToDate}/${r.total} nodes up to date` : "no rollout recorded yet";
  const lines = [
    `Cluster ${c.metadata.name} (namespace ${c.metadata.namespace}): ${counted}; order ${input.order}, ` +
    `maxUnavailable ${input.maxUnavailable}`,
  ];
  const updating = v.nodes.filter((x) => x.position === "updating").map((x) => `${x.machine} (${x.detail})`);
  if (updating.length) lines.push(`Updating now: ${updating.join(", ")}`);
  for (const h of steps.steps[0]?.index === 0 ? steps.steps[0].held ?? [] : []) {
    lines.push(`${paint(style, "yellow", `${h.machine} held`)}: ${h.message}`);
  }
  for (const n of v.nodes) {
    if (n.etcdHold) lines.push(`${paint(style, "yellow", `${n.machine} held for etcd`)}: ${n.etcdHold}`);
  }
  if (steps.stopped) {
    const what = steps.stopped.reason === "halted"
      ? paint(style, "red", `Halted at ${steps.stopped.machine} (${steps.stopped.detail})`) +
        ": nothing else is touched until it recovers or the spec changes."
      : paint(style, "yellow", "Paused") +
        ": NICO changes nothing until spec.paused and the nico.homystack.com/paused annotation are cleared.";
    lines.push(what);
    if (steps.unfinished.length) lines.push(`Held, in order: ${steps.unfinished.join(", ")}`);
  }
  const chain = versionLines(v, input);
  if (chain.length) lines.push("", ...chain);
  const rows = stepRows(steps);
  if (rows.length) {
    lines.push("", table(style, ["STEP", "ACTION", "NODE", "WAITS FOR", "WHY"], rows));
  } else if (!steps.stopped) {
    lines.push(updating.length ? "Nothing else to roll out." : "Nothing to roll out.");
  }
  if (steps.unfinished.length && !steps.stopped) {
    lines.push(`The planner did not finish: ${steps.unfinished.join(", ")} left over`);
  }
  return lines.join("\n");
}

/** Entry point of `nico plan`; answers the exit code. */
export function plan(args: string[], now = new Date()): Promise<number> {
  return showCluster(
    "plan",
    args,
    FLAGS,
    PLAN_HELP,
    now,
    (v, flags) => renderPlan(v, stdoutStyle(typeof flags.color === "string" ? flags.color : undefined)),
  );
}
