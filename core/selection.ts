/**
 * Machine selection: which Machines form each plane of a cluster.
 *
 * Pure: a function of the cluster, the Machines and the NixosConfigurations
 * in its namespace. Deterministic and sticky: current members stay while
 * they may, vacancies are filled in name order, and a Machine is in one
 * plane only.
 *
 * @module
 */
import { durationMs, type KubernetesClusterSpec, type LabelSelector } from "../crds/kubernetescluster.ts";
import { CLUSTER_LABEL, type Plane, planeOfRole, ROLE_LABEL } from "./labels.ts";
import { type ClusterRef, isOwnedBy } from "./owner.ts";
import { type Machine, machineAddress, type NixosConfiguration } from "./nio.ts";
import { normalizeHost } from "./hosts.ts";
import { describeSelector, matches } from "../lib/selector.ts";
import { configName, configNameFits, legacyConfigName, MAX_NAME } from "./names.ts";

export type { Plane } from "./labels.ts";
export { type ClusterRef, isOwnedBy } from "./owner.ts";

export type UnavailableReason =
  | "NotFound"
  | "ClaimedByOther"
  | "TargetedByOther"
  | "ConfiguredByOther"
  | "NotDiscoverable"
  | "InOtherPlane"
  | "Replaced"
  | "NameTooLong"
  | "InvalidHost";

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
  /** For `replaceUnhealthyAfter` (default: never replace). */
  now?: Date | undefined;
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

export type Availability = { ok: true } | { ok: false; reason: UnavailableReason; message: string };

/**
 * Whether `machine` may serve `cluster`: it exists, is not claimed or
 * targeted or configured by anyone else, and NIO can reach it.
 *
 * @example
 * ```ts
 * import { availability } from "./selection.ts";
 * const cluster = { name: "c", namespace: "ns" };
 * const w1 = { metadata: { name: "w-1", namespace: "ns" }, spec: { host: "127.0.0.1" }, status: { discoverable: true } };
 * availability("w-1", w1, cluster, []); // { ok: true }
 * availability("w-2", undefined, cluster, []); // { ok: false, reason: "NotFound", message: "Machine w-2 does not exist in namespace ns" }
 * ```
 */
export function availability(
  name: string,
  machine: Machine | undefined,
  cluster: ClusterRef,
  configurations: NixosConfiguration[],
): Availability {
  if (!machine) {
    return {
      ok: false,
      reason: "NotFound",
      message: `Machine ${name} does not exist in namespace ${cluster.namespace}`,
    };
  }
  const address = machineAddress(machine);
  const host = address === undefined ? undefined : normalizeHost(address);
  if (host?.error) {
    return { ok: false, reason: "InvalidHost", message: `Machine ${name}: its host ${host.error}` };
  }
  const claim = machine.metadata.labels?.[CLUSTER_LABEL];
  if (claim && claim !== cluster.name) {
    return { ok: false, reason: "ClaimedByOther", message: `Machine ${name} is claimed by cluster ${claim}` };
  }
  const other = configurations.find((c) => c.spec?.machineRef?.name === name && !isOwnedBy(c, cluster));
  if (other) {
    return {
      ok: false,
      reason: "TargetedByOther",
      message: `Machine ${name} is already the target of NixosConfiguration ${other.metadata.name}`,
    };
  }
  const applied = machine.status?.appliedConfiguration;
  // For one Machine the legacy name is unambiguous too: `<c1>-<m>` equals `<c2>-<m>` only when c1 is c2.
  const ownName = (n: string) =>
    n === configName(cluster.name, name) || n === legacyConfigName(cluster.name, name) ||
    configurations.some((c) => c.metadata.name === n && c.spec?.machineRef?.name === name && isOwnedBy(c, cluster));
  if (machine.status?.hasConfiguration && applied && !ownName(applied)) {
    return {
      ok: false,
      reason: "ConfiguredByOther",
      message: `Machine ${name} is configured by NixosConfiguration ${applied}`,
    };
  }
  if (
    !configNameFits(cluster.name, name) &&
    !configurations.some((c) => isOwnedBy(c, cluster) && c.spec?.machineRef?.name === name)
  ) {
    return {
      ok: false,
      reason: "NameTooLong",
      message:
        `Machine ${name}: its configuration name ${cluster.name}.${name} would be longer than ${MAX_NAME} characters; use a shorter cluster or Machine name`,
    };
  }
  if (machine.status?.discoverable !== true) {
    return {
      ok: false,
      reason: "NotDiscoverable",
      message: `Machine ${name} is not discoverable: NIO cannot reach it`,
    };
  }
  return { ok: true };
}

/** Reasons that take a Machine away from a cluster even when it is already a member. */
const LOSES_MEMBERSHIP = new Set<UnavailableReason>(["NotFound", "ClaimedByOther", "TargetedByOther"]);

/** Whether NIO has reported `m` undiscoverable for longer than `after` (needs the newer NIO's condition). */
function unhealthyTooLong(m: Machine, after: string | undefined, now: Date | undefined): boolean {
  if (!after || !now) return false;
  const c = m.status?.conditions?.find((x) => x.type === "Discoverable");
  if (c?.status !== "False" || !c.lastTransitionTime) return false;
  return now.getTime() - new Date(c.lastTransitionTime).getTime() > durationMs(after);
}

/**
 * Selects the Machines of both planes.
 *
 * @example
 * ```ts
 * import { selectMachines } from "./selection.ts";
 * import { KubernetesClusterSpec } from "../crds/kubernetescluster.ts";
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

/** What picking both planes shares: the input, Machines by name, the current members, the problems found. */
interface PickContext {
  input: SelectionInput;
  byName: Map<string, Machine>;
  current: Record<Plane, string[]>;
  problems: MachineProblem[];
}

/** Whether a Machine may serve the cluster, by name. */
function checker(ctx: PickContext): (name: string) => Availability {
  const { cluster, configurations } = ctx.input;
  return (name) => availability(name, ctx.byName.get(name), cluster, configurations);
}

/** An explicit list: each listed Machine that may serve, or already serves and has not lost its place. */
function pickExplicit(ctx: PickContext, plane: Plane, taken: Set<string>): PlaneSelection {
  const { problems } = ctx;
  const explicit = ctx.input.cluster.spec[plane].machines ?? [];
  const mine = new Set(ctx.current[plane]);
  const check = checker(ctx);
  const members: string[] = [];
  for (const name of explicit) {
    if (taken.has(name)) {
      problems.push({
        plane,
        machine: name,
        reason: "InOtherPlane",
        message: `Machine ${name} is already in the other plane`,
        kept: false,
      });
      continue;
    }
    const a = check(name);
    if (a.ok) {
      members.push(name);
    } else if (mine.has(name) && !LOSES_MEMBERSHIP.has(a.reason)) {
      members.push(name);
      problems.push({ plane, machine: name, reason: a.reason, message: a.message, kept: true });
    } else {
      problems.push({ plane, machine: name, reason: a.reason, message: a.message, kept: false });
    }
  }
  return {
    members,
    wanted: explicit.length,
    shortfall: explicit.length - members.length,
    mode: "explicit",
    selector: "",
  };
}

/**
 * A selector and a count: the current members that still match and may stay (the bootstrap node first,
 * then the lowest names, on a scale down), then free matching Machines in name order.
 */
function pickSelector(ctx: PickContext, plane: Plane, taken: Set<string>): PlaneSelection {
  const { input, byName, problems } = ctx;
  const spec = input.cluster.spec[plane];
  const mine = new Set(ctx.current[plane]);
  const check = checker(ctx);
  const selector: LabelSelector | undefined = spec.machineSelector;
  const wanted = spec.count ?? (selector ? undefined : 0);
  const limit = wanted ?? Number.POSITIVE_INFINITY;
  const kept: string[] = [];
  for (const name of ctx.current[plane]) {
    const m = byName.get(name);
    const a = check(name);
    if (taken.has(name) || !m || !matches(selector, m.metadata.labels)) continue;
    if (!a.ok && LOSES_MEMBERSHIP.has(a.reason)) {
      problems.push({ plane, machine: name, reason: a.reason, message: a.message, kept: false });
      continue;
    }
    if (!a.ok && a.reason === "NotDiscoverable" && unhealthyTooLong(m, spec.replaceUnhealthyAfter, input.now)) {
      problems.push({
        plane,
        machine: name,
        reason: "Replaced",
        message: `Machine ${name} has been undiscoverable for over ${spec.replaceUnhealthyAfter}; replacing it`,
        kept: false,
      });
      continue;
    }
    if (!a.ok) problems.push({ plane, machine: name, reason: a.reason, message: a.message, kept: true });
    kept.push(name);
  }
  // Scale down: the bootstrap node stays, then the lowest names.
  kept.sort((a, b) => Number(b === input.bootstrap) - Number(a === input.bootstrap) || (a < b ? -1 : a > b ? 1 : 0));
  const members = kept.slice(0, Math.min(kept.length, limit));
  const candidates = input.machines
    .map((m) => m.metadata.name)
    .filter((n) => !taken.has(n) && !members.includes(n) && !mine.has(n))
    .filter((n) => matches(selector, byName.get(n)!.metadata.labels))
    .sort();
  for (const name of candidates) {
    if (members.length >= limit) break;
    if (check(name).ok) members.push(name);
  }
  members.sort();
  return {
    members,
    wanted,
    shortfall: wanted === undefined ? 0 : Math.max(0, wanted - members.length),
    mode: "selector",
    selector: describeSelector(selector),
  };
}
