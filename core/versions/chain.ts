/**
 * The way from the versions a cluster runs to `spec.version`: which version
 * each node's configuration asks for now. The control plane goes first, one
 * minor at a time, each minor fully rolled and reported by every
 * control-plane node before the next; the workers move once the control
 * plane reports the target, in one step, unless the kubelet window
 * (core/versions/policy.ts) makes them catch up earlier: before the control
 * plane's next minor would leave a worker's kubelet too far behind, the
 * workers that would be are brought to the control plane's current minor.
 * A new cluster asks every node for the target at once. Everything is
 * judged from what the nodes report (never assumed), falling back to what a
 * node's configuration asks for only for a node that reports nothing yet.
 *
 * Pure; table-tested.
 *
 * @module
 */
import type { Plane } from "../contract/labels.ts";
import { kubeletWindow } from "./policy.ts";
import { compareVersions, formatVersion, type KubeVersion, lowest, satisfies } from "./version.ts";

/** One node, as the chain needs it. */
export interface ChainNode {
  machine: string;
  plane: Plane;
  /** What its configuration asks for now (absent: no version, or no configuration yet). */
  rendered?: KubeVersion | undefined;
  /** What it reports: a control-plane node its API server (else its kubelet), a worker its kubelet. */
  reported?: KubeVersion | undefined;
}

/** The version each node should be asked for now, and the way the control plane still has to go. */
export interface VersionPlan {
  /** By machine; a node left out keeps what its configuration asks for (none, without spec.version). */
  desired: Map<string, KubeVersion>;
  /** The control plane's minors still to go through, the target last; empty once it reports the target. */
  chain: KubeVersion[];
  /** The control plane's current step (the version its nodes are asked for now), when an upgrade is under way. */
  step?: KubeVersion | undefined;
  /** spec.version asks for a lower minor than the control plane runs: nothing is changed toward it. */
  downgrade?: { from: KubeVersion; to: KubeVersion } | undefined;
  /** Why a plane waits, for people. */
  waiting?: string | undefined;
}

const v = formatVersion;
/** What a node runs as far as NICO can tell: what it reports, else what its configuration asks for. */
const runs = (n: ChainNode) => n.reported ?? n.rendered;

/**
 * Plans the versions for `target` (`spec.version`; absent: no node is asked for a version).
 *
 * @example
 * ```ts
 * import { planVersions } from "./chain.ts";
 * const at = (minor: number) => ({ minor, patch: 2 });
 * const p = planVersions({ minor: 33 }, [
 *   { machine: "cp-1", plane: "controlPlane", rendered: { minor: 30 }, reported: at(30) },
 *   { machine: "w-1", plane: "dataPlane", rendered: { minor: 30 }, reported: at(30) },
 * ]);
 * p.desired.get("cp-1"); // { minor: 31 }: one minor at a time
 * p.desired.has("w-1"); // false: workers wait for the control plane
 * p.chain.map((x) => x.minor); // [31, 32, 33]
 * ```
 */
export function planVersions(target: KubeVersion | undefined, nodes: readonly ChainNode[]): VersionPlan {
  const desired = new Map<string, KubeVersion>();
  if (!target) return { desired, chain: [] };
  const cp = nodes.filter((n) => n.plane === "controlPlane");
  const workers = nodes.filter((n) => n.plane === "dataPlane");
  const floor = lowest(cp.flatMap((n) => runs(n) ?? []));
  if (!floor) {
    // A new cluster (no control-plane node runs anything yet): every node is asked for the target at once.
    for (const n of nodes) desired.set(n.machine, target);
    return { desired, chain: [target] };
  }
  if (target.minor < floor.minor) {
    return { desired, chain: [], downgrade: { from: floor, to: target }, waiting: downgradeWhy(floor, target) };
  }
  const cpDone = cp.every((n) => n.reported && satisfies(n.reported, target));
  if (cpDone) {
    for (const n of nodes) desired.set(n.machine, target);
    return { desired, chain: [] };
  }
  // Each minor after the floor, the target last (a patch within the floor's minor is a chain of one).
  const chain = floor.minor === target.minor ? [target] : Array.from(
    { length: target.minor - floor.minor },
    (_, i) => floor.minor + i + 1 === target.minor ? target : { minor: floor.minor + i + 1 },
  );
  // The control plane's step: the target within its minor (a patch), else the next minor.
  const step = chain[0]!;
  const midStep = cp.some((n) => n.reported && n.reported.minor > floor.minor);
  const lagging = workers.filter((n) => {
    const k = runs(n);
    return k !== undefined && step.minor - k.minor > kubeletWindow(k);
  });
  const hold = lagging.length > 0 && !midStep;
  const cpAsk = hold ? { minor: floor.minor } : step;
  for (const n of cp) {
    const now = runs(n);
    // Never asked to go down: a node already past the step (a flake that moved it) keeps what it asks for.
    if (now && compareVersions(now, cpAsk) > 0 && now.minor > cpAsk.minor) continue;
    desired.set(n.machine, hold && n.rendered && n.rendered.minor === floor.minor ? n.rendered : cpAsk);
  }
  const catchUp = { minor: floor.minor };
  for (const n of workers) {
    if (lagging.includes(n)) desired.set(n.machine, catchUp);
    else if (!runs(n)) desired.set(n.machine, catchUp); // a new worker joins at the control plane's minor
  }
  const waiting = hold
    ? `the control plane waits at ${v(floor)}: ${lagging.map((n) => n.machine).join(", ")} must reach ` +
      `${v(catchUp)} first (a kubelet may be at most ${kubeletWindow(runs(lagging[0]!)!)} minors older than ` +
      `kube-apiserver)`
    : `the control plane goes to ${v(step)}${chain.length > 1 ? `, then ${chain.slice(1).map(v).join(", ")}` : ""}; ` +
      `the workers follow once it reports ${v(target)}`;
  return { desired, chain, step: cpAsk, waiting };
}

/** Why a downgrade is not taken. */
function downgradeWhy(from: KubeVersion, to: KubeVersion): string {
  return `spec.version ${v(to)} is older than the control plane's ${v(from)}: Kubernetes does not support going ` +
    `back a minor; set spec.version to ${v({ minor: from.minor })} or later`;
}
