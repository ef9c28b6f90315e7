/**
 * Machine selection: which Machines form each plane of a cluster.
 *
 * Pure: a function of the cluster, the Machines and the NixosConfigurations
 * in its namespace. Deterministic and sticky: current members stay while
 * they may, vacancies are filled in name order (an explicit list's from its
 * `spares`, in their order), and a Machine is in one plane only. A Machine
 * out of service (core/machines/marks.ts) is never picked, and leaves a selector
 * plane; a listed one leaves only for a spare.
 *
 * @module
 */
import type { KubernetesClusterSpec, LabelSelector } from "../../crds/kubernetescluster.ts";
import { type Plane, planeOfRole, ROLE_LABEL } from "../contract/labels.ts";
import { type ClusterRef, isOwnedBy } from "../contract/owner.ts";
import type { Machine, NixosConfiguration } from "../contract/nio.ts";
import { describeSelector, matches } from "../../lib/selector.ts";
import { configName } from "../contract/names.ts";
import { type Availability, availability, LOSES_MEMBERSHIP, type UnavailableReason } from "./availability.ts";

export type { Plane } from "../contract/labels.ts";
export { type ClusterRef, isOwnedBy } from "../contract/owner.ts";
export { type Availability, availability, type UnavailableReason } from "./availability.ts";

export interface MachineProblem {
  plane: Plane;
  machine: string;
  reason: UnavailableReason;
  message: string;
  /** True when the Machine stays a member despite the problem (an unreachable member is not dropped). */
  kept: boolean;
}

export interface SelectionInput {
  cluster: ClusterRef & { spec: KubernetesClusterSpec };
  machines: Machine[];
  configurations: NixosConfiguration[];
  /** The bootstrap node, which a scale-down never drops. */
  bootstrap?: string | undefined;
}

export interface PlaneSelection {
  /** Selected Machines: list order for an explicit list, else name order. */
  members: string[];
  /** How many the spec asks for; `undefined` for "every matching Machine". */
  wanted: number | undefined;
  shortfall: number;
  /** How the plane picks: `explicit` list or `selector`. */
  mode: "explicit" | "selector";
  selector: string;
}

export interface Selection {
  controlPlane: PlaneSelection;
  dataPlane: PlaneSelection;
  problems: MachineProblem[];
}

/**
 * The name of each machine's configuration for this cluster: the one the
 * cluster already controls for that Machine, whatever its name (children made
 * before the `<cluster>.<machine>` scheme keep theirs), else
 * {@link configName}.
 *
 * @example
 * ```ts
 * import { configNameOf } from "./selection.ts";
 * const nameOf = configNameOf({ name: "x", namespace: "ns" }, []);
 * nameOf("a"); // "x.a"
 * ```
 */
export function configNameOf(
  cluster: ClusterRef,
  configurations: NixosConfiguration[],
): (machine: string) => string {
  const owned = new Map<string, NixosConfiguration>();
  for (const c of configurations) {
    const m = c.spec?.machineRef?.name;
    if (!m || !isOwnedBy(c, cluster)) continue;
    const seen = owned.get(m);
    // Prefer one that is not being deleted, then the oldest.
    if (!seen || (seen.metadata.deletionTimestamp && !c.metadata.deletionTimestamp)) owned.set(m, c);
  }
  return (machine) => owned.get(machine)?.metadata.name ?? configName(cluster.name, machine);
}

/**
 * Current members by plane, from the cluster's own NixosConfigurations.
 *
 * @example
 * ```ts
 * import { currentMembers } from "./selection.ts";
 * const spec = { machineRef: { name: "w-1" }, gitRepo: "https://127.0.0.1/nixos.git", flake: "#w-1", onRemoveFlake: "#minimal", fullInstall: false, additionalFiles: [] };
 * const cfg = (machine: string, role: string) => ({
 *   metadata: { name: `c.${machine}`, labels: { "nico.homystack.com/cluster": "c", "nico.homystack.com/role": role } },
 *   spec: { ...spec, machineRef: { name: machine } },
 * });
 * currentMembers({ name: "c", namespace: "ns" }, [cfg("w-1", "worker"), cfg("cp-1", "control-plane")]); // { controlPlane: ["cp-1"], dataPlane: ["w-1"] }
 * ```
 */
export function currentMembers(cluster: ClusterRef, configurations: NixosConfiguration[]): Record<Plane, string[]> {
  const out: Record<Plane, string[]> = { controlPlane: [], dataPlane: [] };
  for (const c of configurations) {
    if (!isOwnedBy(c, cluster)) continue;
    const plane = planeOfRole(c.metadata.labels?.[ROLE_LABEL]);
    out[plane].push(c.spec.machineRef.name);
  }
  out.controlPlane.sort();
  out.dataPlane.sort();
  return out;
}

/** What picking one plane reads and where it records problems. */
interface PickContext {
  input: SelectionInput;
  byName: Map<string, Machine>;
  current: Record<Plane, string[]>;
  problems: MachineProblem[];
}

const byName = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * Selects the Machines of both planes.
 *
 * @example
 * ```ts
 * import { selectMachines } from "./selection.ts";
 * import { KubernetesClusterSpec } from "../../crds/kubernetescluster.ts";
 * const spec = KubernetesClusterSpec.parse({ controlPlane: { machines: ["cp-1"] } });
 * const machine = (name: string) => ({ metadata: { name, namespace: "ns" }, spec: { host: "127.0.0.1" }, status: { discoverable: true } });
 * const s = selectMachines({ cluster: { name: "c", namespace: "ns", spec }, machines: [machine("cp-1")], configurations: [] });
 * s.controlPlane.members; // ["cp-1"]
 * ```
 */
export function selectMachines(input: SelectionInput): Selection {
  const ctx: PickContext = {
    input,
    byName: new Map(input.machines.map((m) => [m.metadata.name, m])),
    current: currentMembers(input.cluster, input.configurations),
    problems: [],
  };
  const pick = (plane: Plane, taken: Set<string>) =>
    (input.cluster.spec[plane].machines ?? []).length > 0
      ? pickExplicit(ctx, plane, taken)
      : pickSelector(ctx, plane, taken);
  const controlPlane = pick("controlPlane", new Set());
  const dataPlane = pick("dataPlane", new Set(controlPlane.members));
  return { controlPlane, dataPlane, problems: ctx.problems };
}

function checker(ctx: PickContext): (name: string) => Availability {
  const { cluster, configurations } = ctx.input;
  return (name) => availability(name, ctx.byName.get(name), cluster, configurations);
}

/**
 * An explicit list: each listed Machine that may serve, or already serves and has not lost its place; a
 * listed Machine that cannot serve leaves room for a spare (those already serving first, then in list order).
 * A listed member out of service stays until a spare takes its place.
 */
function pickExplicit(ctx: PickContext, plane: Plane, taken: Set<string>): PlaneSelection {
  const spec = ctx.input.cluster.spec[plane];
  const listed = spec.machines ?? [];
  const mine = new Set(ctx.current[plane]);
  const check = checker(ctx);
  const problem = (machine: string, reason: UnavailableReason, message: string, kept: boolean) =>
    ctx.problems.push({ plane, machine, reason, message, kept });
  const members: string[] = [];
  const outOfService: { name: string; message: string }[] = [];
  for (const name of listed) {
    if (taken.has(name)) {
      problem(name, "InOtherPlane", `Machine ${name} is already in the other plane`, false);
      continue;
    }
    const a = check(name);
    if (a.ok) members.push(name);
    else if (mine.has(name) && a.reason === "OutOfService") outOfService.push({ name, message: a.message });
    else if (mine.has(name) && !LOSES_MEMBERSHIP.has(a.reason)) {
      members.push(name);
      problem(name, a.reason, a.message, true);
    } else problem(name, a.reason, a.message, false);
  }
  const otherLists = new Set([...listed, ...(ctx.input.cluster.spec[other(plane)].machines ?? [])]);
  const spares = (spec.spares ?? []).filter((n) => !otherLists.has(n) && !taken.has(n));
  const serving = spares.filter((n) => mine.has(n));
  const stand: string[] = [];
  for (const name of [...serving, ...spares.filter((n) => !mine.has(n))]) {
    if (members.length + stand.length >= listed.length) break;
    const a = check(name);
    // A spare that serves stays as long as a listed member would; a new one must be free.
    if (a.ok || (mine.has(name) && !LOSES_MEMBERSHIP.has(a.reason) && a.reason !== "OutOfService")) stand.push(name);
  }
  // A listed member out of service leaves only for a spare; without one it stays (and says so).
  const unfilled = listed.length - members.length - stand.length;
  const keep = new Set(members);
  outOfService.forEach((o, i) => {
    const replaced = i >= unfilled;
    if (!replaced) keep.add(o.name);
    const how = replaced
      ? "a spare takes its place"
      : `no spare is free: list another Machine or add spec.${plane}.spares`;
    problem(o.name, "OutOfService", `${o.message}; ${how}`, !replaced);
  });
  members.splice(0, members.length, ...listed.filter((n) => keep.has(n)), ...stand);
  return {
    members,
    wanted: listed.length,
    shortfall: Math.max(0, listed.length - members.length),
    mode: "explicit",
    selector: "",
  };
}

const other = (plane: Plane): Plane => plane === "controlPlane" ? "dataPlane" : "controlPlane";

/**
 * A selector: current members that still match and have not lost their place (the bootstrap node first on a
 * scale-down), then free matching Machines in name order. A member out of service leaves.
 */
function pickSelector(ctx: PickContext, plane: Plane, taken: Set<string>): PlaneSelection {
  const spec = ctx.input.cluster.spec[plane];
  const mine = new Set(ctx.current[plane]);
  const check = checker(ctx);
  const selector: LabelSelector | undefined = spec.machineSelector;
  const wanted = spec.count ?? (selector ? undefined : 0);
  const limit = wanted ?? Number.POSITIVE_INFINITY;
  const matching = (n: string) => matches(selector, ctx.byName.get(n)?.metadata.labels);
  const kept: string[] = [];
  for (const name of ctx.current[plane]) {
    if (taken.has(name) || !ctx.byName.has(name) || !matching(name)) continue;
    const a = check(name);
    const leaves = !a.ok && (LOSES_MEMBERSHIP.has(a.reason) || a.reason === "OutOfService");
    if (!a.ok) ctx.problems.push({ plane, machine: name, reason: a.reason, message: a.message, kept: !leaves });
    if (!leaves) kept.push(name);
  }
  const boot = ctx.input.bootstrap;
  kept.sort((a, b) => Number(b === boot) - Number(a === boot) || byName(a, b));
  const members = kept.slice(0, Math.min(kept.length, limit));
  const candidates = [...ctx.byName.keys()]
    .filter((n) => !taken.has(n) && !members.includes(n) && !mine.has(n) && matching(n))
    .sort(byName);
  for (const name of candidates) {
    if (members.length >= limit) break;
    if (check(name).ok) members.push(name);
  }
  members.sort(byName);
  const shortfall = wanted === undefined ? 0 : Math.max(0, wanted - members.length);
  if (shortfall > 0) {
    // Say which matching Machines are out of service: the plane is short because of them.
    for (const name of candidates) {
      const a = check(name);
      if (!a.ok && a.reason === "OutOfService") {
        ctx.problems.push({ plane, machine: name, reason: a.reason, message: a.message, kept: false });
      }
    }
  }
  return { members, wanted, shortfall, mode: "selector", selector: describeSelector(selector) };
}
