/**
 * Fixtures of the planner's rule table (tests/unit/rollout_rules_test.ts): planner nodes, a settled cluster of
 * three control-plane nodes and three workers, a row of the table, and what a rule did. Pure.
 */
import { rolloutPass, type Rule, type RuleAnswer } from "../core/rollout/rules.ts";
import type { DepartingNode, PlanNode, RolloutInput } from "../core/rollout/types.ts";
import { QUIET } from "./rollout_input_kit.ts";

/** A node that exists, up to date and available (its plane from its name) unless `o` says otherwise. */
export const n = (machine: string, o: Partial<PlanNode> = {}): PlanNode => ({
  machine,
  plane: machine.startsWith("cp") ? "controlPlane" : "dataPlane",
  exists: true,
  upToDate: true,
  available: true,
  failed: false,
  ...o,
});
export const outdated = { upToDate: false };
export const missing = { exists: false, upToDate: false, available: false };
export const converging = { available: false, detail: "Converging" };
export const leaving = (machine: string, o: Partial<DepartingNode> = {}): DepartingNode => ({
  machine,
  plane: machine.startsWith("cp") ? "controlPlane" : "dataPlane",
  deleting: false,
  ...o,
});

/** Three control-plane nodes and three workers, all settled, with `nodes` replacing those of the same name. */
export function input(nodes: PlanNode[], o: Partial<RolloutInput> = {}): RolloutInput {
  const all = ["cp-1", "cp-2", "cp-3", "w-1", "w-2", "w-3"].map((m) => nodes.find((x) => x.machine === m) ?? n(m));
  const extra = nodes.filter((x) => !all.includes(x));
  return {
    nodes: [...all, ...extra],
    ...QUIET,
    departing: [],
    bootstrap: "cp-1",
    order: "WorkersFirst",
    maxUnavailable: 1,
    paused: false,
    ...o,
  };
}

export interface Want {
  answer: RuleAnswer;
  create?: string[];
  update?: string[];
  remove?: string[];
  reasons?: string[];
  halted?: string;
  held?: string;
  /** The order the pass ended with, when a rule changed it. */
  order?: string;
}

export interface Row {
  rule: Rule;
  name: string;
  input: RolloutInput;
  /** What the rules before it chose already. */
  before?: { create?: string[]; update?: string[]; remove?: string[]; reasons?: string[] };
  want: Want;
}

/** What `row`'s rule does on its own: its answer, and the plan and reasons it leaves (the defaults: nothing). */
export function ruleOutcome(row: Row): Want {
  const { pass, draft } = rolloutPass(row.input);
  draft.plan.create.push(...row.before?.create ?? []);
  draft.plan.update.push(...row.before?.update ?? []);
  draft.plan.remove.push(...row.before?.remove ?? []);
  draft.reasons.push(...row.before?.reasons ?? []);
  const answer = row.rule(pass, draft);
  const { plan, reasons } = draft;
  return {
    answer,
    create: plan.create,
    update: plan.update,
    remove: plan.remove,
    reasons,
    ...(plan.halted ? { halted: plan.halted.machine } : {}),
    ...(plan.held ? { held: plan.held.machine } : {}),
    ...(draft.order !== row.input.order ? { order: draft.order } : {}),
  };
}
