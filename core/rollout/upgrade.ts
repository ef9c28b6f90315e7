/**
 * The whole way to `spec.version`, step by step: the chain (core/versions/chain.ts)
 * asked again after each of its steps, each step rolled out by the planner
 * (core/rollout/steps.ts), assuming every node reports what it is asked for
 * once it applied. `nico plan` prints it: the control plane's minors in
 * turn, then the workers. Pure.
 *
 * @module
 */
import type { Plane } from "../contract/labels.ts";
import type { PlanNode, RolloutInput } from "./types.ts";
import { rolloutSteps } from "./steps.ts";
import { type ChainNode, planVersions } from "../versions/chain.ts";
import { formatVersion, type KubeVersion } from "../versions/version.ts";

/** One step of an upgrade: the nodes of a plane going to one version, in the order the planner takes them. */
export interface UpgradeStep {
  plane: Plane;
  version: KubeVersion;
  nodes: string[];
}

/** The part of the planner's input an upgrade does not change (its nodes are the chain's). */
export type UpgradeRollout = Omit<RolloutInput, "nodes" | "versions" | "backup">;

/** What a node runs after the steps so far: what it reports, else what it asks for. */
const runs = (n: ChainNode) => n.reported ?? n.rendered;

/** Whether `want` is another version than `n` runs (a minor asked matches any patch of it). */
function moves(n: ChainNode, want: KubeVersion): boolean {
  const now = runs(n);
  if (!now) return true;
  return now.minor !== want.minor || (want.patch !== undefined && now.patch !== want.patch);
}

/**
 * Every step from where `nodes` stand to `target`, in order (none without a target, or once every node runs it).
 *
 * @example
 * ```ts
 * import { upgradeSteps } from "./upgrade.ts";
 * const at = (minor: number) => ({ minor, patch: 4 });
 * const node = (machine: string, plane: "controlPlane" | "dataPlane") => ({ machine, plane, rendered: { minor: 30 }, reported: at(30) });
 * const steps = upgradeSteps({ minor: 32 }, [node("cp-1", "controlPlane"), node("cp-2", "controlPlane"), node("w-1", "dataPlane")], {
 *   departing: [], bootstrap: "cp-1", order: "WorkersFirst", maxUnavailable: 1, paused: false,
 *   endpointIsBootstrap: false, provisioning: "BootstrapFirst", firstBringUp: false, hold: undefined, releasing: [],
 * });
 * steps.map((s) => `${s.plane} ${s.version.minor}: ${s.nodes.join(" ")}`);
 * // ["controlPlane 31: cp-2 cp-1", "controlPlane 32: cp-2 cp-1", "dataPlane 32: w-1"]
 * ```
 */
export function upgradeSteps(
  target: KubeVersion | undefined,
  nodes: readonly ChainNode[],
  rollout: UpgradeRollout,
  maxRounds = 50,
): UpgradeStep[] {
  let now = nodes.map((n) => ({ ...n }));
  const out: UpgradeStep[] = [];
  for (let round = 0; round < maxRounds; round++) {
    const plan = planVersions(target, now);
    const due = new Map(now.flatMap((n) => {
      const want = plan.desired.get(n.machine);
      return want && moves(n, want) ? [[n.machine, want] as const] : [];
    }));
    if (!due.size) return out;
    const planNodes: PlanNode[] = now.map((n) => ({
      machine: n.machine,
      plane: n.plane,
      exists: true,
      upToDate: !due.has(n.machine),
      available: true,
      failed: false,
      ...(due.has(n.machine) ? { versionChange: true } : {}),
    }));
    const order = rolloutSteps({
      ...rollout,
      nodes: planNodes,
      departing: [],
      paused: false,
      versions: undefined,
      backup: undefined,
    })
      .steps
      .flatMap((s) => s.actions.map((a) => a.machine)).filter((m) => due.has(m));
    for (const m of order) {
      const n = now.find((x) => x.machine === m)!;
      const want = due.get(m)!;
      const last = out.at(-1);
      if (last && last.plane === n.plane && formatVersion(last.version) === formatVersion(want)) last.nodes.push(m);
      else out.push({ plane: n.plane, version: want, nodes: [m] });
    }
    now = now.map((n) => {
      const want = due.get(n.machine);
      return want ? { ...n, rendered: want, reported: { minor: want.minor, patch: want.patch ?? 0 } } : n;
    });
  }
  return out;
}
