/**
 * Rules on the Machines a cluster asks for, read from the caches: explicit
 * Machines must exist, be reachable and free; selectors should find enough
 * Machines; the control plane should keep etcd quorum through an update.
 * Pure: reuses the controller's own selection rules.
 *
 * @module
 */
import {
  type ClusterRef,
  currentMembers,
  type MachineProblem,
  type Plane,
  type Selection,
  selectMachines,
  type UnavailableReason,
} from "../core/machines/selection.ts";
import type { KubernetesCluster, KubernetesClusterSpec } from "../crds/kubernetescluster.ts";
import { CLUSTER_LABEL } from "../core/contract/labels.ts";
import type { Machine, NixosConfiguration } from "../core/contract/nio.ts";

/** What the Machine rules read. */
export interface MachineContext {
  cluster: ClusterRef;
  spec: KubernetesClusterSpec;
  /** The spec before an UPDATE. */
  oldSpec?: KubernetesClusterSpec | undefined;
  /** The bootstrap node recorded in the cluster's status. */
  bootstrap?: string | undefined;
  machines: Machine[];
  configurations: NixosConfiguration[];
  /** Every cluster of the namespace (this one included; it is skipped). */
  clusters: KubernetesCluster[];
}

/** Refusals and warnings. */
export interface Findings {
  errors: string[];
  warnings: string[];
}

/** What a person can do about each reason. */
const ADVICE: Partial<Record<UnavailableReason, string>> = {
  NotFound: "create it or fix the name",
  NotDiscoverable: "fix the host or pick another Machine",
  ClaimedByOther: "remove it from that cluster first or pick another Machine",
  TargetedByOther: "delete that NixosConfiguration first or pick another Machine",
  ConfiguredByOther: "remove that configuration first or pick another Machine",
  InOtherPlane: "a Machine serves one plane only",
  NameTooLong: "shorten the cluster's or the Machine's name",
  InvalidHost: "fix spec.host of the Machine (a DNS name or an IP address; punycode for internationalised names)",
  OutOfService: "or pick another Machine",
};

const PLANES: Plane[] = ["controlPlane", "dataPlane"];

function explicitList(spec: KubernetesClusterSpec, plane: Plane): string[] {
  return spec[plane].machines ?? [];
}

/** Explicit Machines of another live cluster: name → `cluster (spec.plane.machines)`. */
function namedByOthers(ctx: MachineContext): Map<string, string> {
  const out = new Map<string, string>();
  for (const c of ctx.clusters) {
    if (c.metadata.name === ctx.cluster.name || c.metadata.deletionTimestamp) continue;
    for (const plane of PLANES) {
      const list: unknown = (c.spec as Partial<KubernetesClusterSpec> | undefined)?.[plane]?.machines;
      if (!Array.isArray(list)) continue;
      for (const m of list) {
        if (typeof m === "string" && !out.has(m)) out.set(m, `cluster ${c.metadata.name} (spec.${plane}.machines)`);
      }
    }
  }
  return out;
}

/** Machines the cluster already owns: its claims and its own NixosConfigurations. */
export function ownedMachines(ctx: Pick<MachineContext, "cluster" | "machines" | "configurations">): Set<string> {
  const current = currentMembers(ctx.cluster, ctx.configurations);
  const out = new Set([...current.controlPlane, ...current.dataPlane]);
  for (const m of ctx.machines) {
    if (m.metadata.labels?.[CLUSTER_LABEL] === ctx.cluster.name) out.add(m.metadata.name);
  }
  return out;
}

/** The explicit-list findings of one plane. */
function explicitFindings(ctx: MachineContext, plane: Plane, selection: Selection, out: Findings): void {
  const list = explicitList(ctx.spec, plane);
  const named = new Set(ctx.oldSpec ? PLANES.flatMap((p) => explicitList(ctx.oldSpec!, p)) : []);
  const owned = ownedMachines(ctx);
  const others = namedByOthers(ctx);
  const problems = new Map<string, MachineProblem>();
  for (const p of selection.problems) {
    if (p.plane === plane && p.reason !== "InOtherPlane" && !problems.has(p.machine)) problems.set(p.machine, p);
  }
  const seen = new Set<string>();
  list.forEach((name, i) => {
    if (seen.has(name)) return;
    seen.add(name);
    const at = `spec.${plane}.machines[${i}]`;
    const p = problems.get(name);
    let line: string | undefined;
    if (p) line = `${at}: ${p.message}; ${ADVICE[p.reason] ?? "pick another Machine"}`;
    else if (!owned.has(name) && others.has(name)) {
      line = `${at}: Machine ${name} is already named by ${
        others.get(name)
      }; a Machine serves one cluster: ${ADVICE.ClaimedByOther}`;
    }
    if (!line) return;
    if (p?.kept) {
      out.warnings.push(`${line} (it stays a member of this cluster, but NICO cannot update it until this is fixed)`);
    } else if (named.has(name)) {
      out.warnings.push(`${line} (it was already named before this change)`);
    } else {
      out.errors.push(line);
    }
  });
}

/** The selector findings of one plane: too few eligible Machines, members in trouble. */
function selectorFindings(plane: Plane, selection: Selection, out: Findings): void {
  const s = selection[plane];
  if (s.wanted !== undefined && s.shortfall > 0) {
    const have = s.members.length ? `only ${s.members.length} (${s.members.join(", ")})` : "none";
    out.warnings.push(
      `spec.${plane}.count: ${s.wanted} Machines wanted but ${have} match ${s.selector} and are available; ` +
        "NICO provisions what it can and waits for more: label or free more Machines, or lower count",
    );
  }
  for (const p of selection.problems) {
    if (p.plane !== plane || p.reason === "InOtherPlane") continue;
    const fate = p.kept ? "it stays a member, but NICO cannot update it until this is fixed" : "it leaves this cluster";
    out.warnings.push(`spec.${plane}.machineSelector: ${p.message}; ${fate}`);
  }
}

/** Warnings for a control plane that loses the Kubernetes API during an update. */
export function quorumWarnings(spec: KubernetesClusterSpec): string[] {
  const explicit = spec.controlPlane.machines ?? [];
  const n = explicit.length || (spec.controlPlane.count ?? 0);
  const at = explicit.length ? "spec.controlPlane.machines" : "spec.controlPlane.count";
  if (n === 1) {
    const never = spec.controlPlane.remediation
      ? "; spec.controlPlane.remediation never replaces its only member (it holds the cluster's state)"
      : "";
    return [
      `${at}: a single-node control plane has no redundancy: while that Machine updates or if it fails the Kubernetes API is down; use 3 for availability${never}`,
    ];
  }
  if (n >= 2 && n % 2 === 0) {
    const quorum = Math.floor(n / 2) + 1;
    const tolerated = n - quorum;
    const survive = tolerated === 0 ? "no failure" : `${tolerated} failure${tolerated === 1 ? "" : "s"}`;
    const fewer = n - 1 === 1 ? "a single Machine" : `${n - 1} Machines`;
    const during = n === 2 ? "an update of either Machine stops the Kubernetes API" : "an update uses up that margin";
    const odd = n === 2 ? "3" : `${n - 1} or ${n + 1}`;
    return [
      `${at}: ${n} control-plane Machines need ${quorum} for etcd quorum, so they survive ${survive}, ` +
      `the same as ${fewer}; ${during}; use an odd number (${odd})`,
    ];
  }
  return [];
}

/** Every Machine finding of a cluster, and the selection it was computed from. */
export function machineFindings(ctx: MachineContext): Findings & { selection: Selection } {
  const selection = selectMachines({
    cluster: { ...ctx.cluster, spec: ctx.spec },
    machines: ctx.machines,
    configurations: ctx.configurations,
    bootstrap: ctx.bootstrap,
  });
  const out: Findings = { errors: [], warnings: [] };
  for (const plane of PLANES) {
    const explicit = explicitList(ctx.spec, plane);
    if (explicit.length > 0) {
      explicitFindings(ctx, plane, selection, out);
      if (ctx.spec[plane].count !== undefined && ctx.spec[plane].count !== explicit.length) {
        out.warnings.push(
          `spec.${plane}.count: ignored because spec.${plane}.machines lists ${explicit.length} Machine(s); remove count or the list`,
        );
      }
    } else {
      selectorFindings(plane, selection, out);
    }
  }
  out.warnings.push(...quorumWarnings(ctx.spec));
  return { ...out, selection };
}
