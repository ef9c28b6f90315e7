/**
 * What remediation reads from one pass, gathered from the scope: each plane's
 * facts for core/rollout/remediation.ts, the remediations in flight and the planes
 * left short for core/status/remediation.ts. Reads only; the writes are in
 * phases/remediation.ts.
 *
 * @module
 */
import { CLUSTER_LABEL, CONFIGURATION_ANNOTATION, REMEDIATED_ANNOTATION } from "../../core/contract/labels.ts";
import { type Mark, markOf } from "../../core/machines/marks.ts";
import type { Machine } from "../../core/contract/nio.ts";
import { judgeMember, type Unhealthy } from "../../core/nodes/health.ts";
import { type NodeReport, specChangedAt } from "../../core/nodes/readiness.ts";
import { type PlaneFacts, remediationSettings } from "../../core/rollout/remediation.ts";
import type { InFlightStep, ShortPlane } from "../../core/status/remediation.ts";
import { type Plane, selectMachines } from "../../core/machines/selection.ts";
import type { ClusterScope } from "./scope.ts";
import { configOf, type PassView, type WorkloadView } from "./view.ts";

const PLANES: Plane[] = ["controlPlane", "dataPlane"];

/** Everything remediation knows after one pass. */
export interface RemediationView {
  /** Planes with remediation on, with their facts. */
  planes: PlaneFacts[];
  inFlight: InFlightStep[];
  short: ShortPlane[];
  /** The soonest a member becomes unhealthy if nothing changes. */
  dueAt?: Date | undefined;
}

/** This cluster's marks, by Machine. */
function ourMarks(s: ClusterScope): Map<string, Mark> {
  const out = new Map<string, Mark>();
  for (const m of s.machines.values()) {
    const mark = markOf(m)?.mark;
    if (mark?.cluster === s.name) out.set(m.metadata.name, mark);
  }
  return out;
}

/** Gathers the view; `nodes` are the members' reports after the workload cluster was consulted. */
export function remediationView(s: ClusterScope, nodes: NodeReport[], pv: PassView, w: WorkloadView): RemediationView {
  const marks = ourMarks(s);
  const nodesKnown = !w.disabled && w.api.state === "Available" && w.nodes !== undefined;
  const planes: PlaneFacts[] = [];
  const inFlight = inFlightSteps(s, pv, nodes, marks);
  let due: number | undefined;
  for (const plane of PLANES) {
    const settings = remediationSettings(s.spec[plane]);
    if (!settings) continue;
    const sel = s.selection[plane];
    const unhealthy: Unhealthy[] = [];
    for (const machine of sel.members) {
      const report = nodes.find((n) => n.machine === machine);
      const cfg = configOf(s, pv, machine);
      if (!report || !cfg) continue;
      const v = judgeMember(
        {
          machine,
          report,
          nodesKnown,
          apiBackAt: w.api.outage?.to,
          node: w.nodes?.get(machine),
          machineObj: s.machines.get(machine),
          createdAt: cfg.metadata.creationTimestamp ? new Date(cfg.metadata.creationTimestamp) : undefined,
          changedAt: specChangedAt(cfg),
          expected: cfg.metadata.annotations?.[CONFIGURATION_ANNOTATION],
        },
        settings,
        s.now,
      );
      if (v.unhealthy) unhealthy.push(v.unhealthy);
      if (v.dueAt) due = Math.min(due ?? Infinity, v.dueAt.getTime());
    }
    planes.push({
      plane,
      settings,
      mode: sel.mode,
      members: sel.members,
      ready: nodes.filter((n) => n.plane === plane && n.state === "Ready").map((n) => n.machine),
      unhealthy,
      inFlight: inFlight.filter((f) => f.plane === plane).map((f) => f.machine),
      marks: [...marks.values()].filter((m) => m.plane === plane).map((m) => m.at),
      createdAt: (m) => {
        const t = configOf(s, pv, m)?.metadata.creationTimestamp;
        return t ? new Date(t) : undefined;
      },
      replacement: (m) => replacementOf(s, plane, m),
      bootstrap: s.bootstrap,
      endpointIsBootstrap: !s.spec.controlPlaneEndpoint,
      nodesKnown,
      provisioned: s.cluster.status?.initialization?.provisioned === true,
      paused: s.paused,
      selector: sel.selector,
      now: s.now,
    });
  }
  return { planes, inFlight, short: shortPlanes(s, marks), dueAt: due === undefined ? undefined : new Date(due) };
}

/**
 * The Machine that would take `machine`'s place: the selection again, with `machine` marked out of service,
 * minus the members of now.
 */
function replacementOf(s: ClusterScope, plane: Plane, machine: string): string | undefined {
  const marked = [...s.machines.values()].map((m): Machine =>
    m.metadata.name === machine
      ? { ...m, metadata: { ...m.metadata, annotations: { ...m.metadata.annotations, [REMEDIATED_ANNOTATION]: "" } } }
      : m
  );
  const after = selectMachines({
    cluster: { ...s.ref, spec: s.spec },
    machines: marked,
    configurations: s.cache.configs,
    bootstrap: s.bootstrap,
  });
  const now = new Set(s.selection[plane].members);
  return after[plane].members.find((m) => !now.has(m));
}

/** Machines this cluster took out of service that have not left yet: a configuration of ours, or our claim. */
function inFlightSteps(s: ClusterScope, v: PassView, nodes: NodeReport[], marks: Map<string, Mark>): InFlightStep[] {
  const out: InFlightStep[] = [];
  const members = new Set(s.members);
  for (const [machine, mark] of marks) {
    if (members.has(machine)) continue;
    const cfg = s.ours.find((c) => c.spec.machineRef.name === machine);
    const claimed = s.machines.get(machine)?.metadata.labels?.[CLUSTER_LABEL] === s.name;
    if (!cfg && !claimed) continue;
    const stage = !cfg ? "releasing" : cfg.metadata.deletionTimestamp ? "removing" : "waiting";
    const since = Math.floor(mark.at.getTime() / 1000) * 1000;
    const replacements = s.selection[mark.plane].members.filter((m) => {
      const t = configOf(s, v, m)?.metadata.creationTimestamp;
      return t === undefined || new Date(t).getTime() >= since;
    }).map((m) => ({ machine: m, ready: nodes.some((n) => n.machine === m && n.state === "Ready") }));
    out.push({ machine, plane: mark.plane, mark, stage, replacements });
  }
  return out.sort((a, b) => (a.machine < b.machine ? -1 : 1));
}

/** Selector planes below their size with Machines this cluster took out of service. */
function shortPlanes(s: ClusterScope, marks: Map<string, Mark>): ShortPlane[] {
  const out: ShortPlane[] = [];
  for (const plane of PLANES) {
    const sel = s.selection[plane];
    const out_ = [...marks].filter(([m, mark]) => mark.plane === plane && !sel.members.includes(m)).map(([m]) => m);
    if (sel.mode !== "selector" || sel.shortfall === 0 || !out_.length || sel.wanted === undefined) continue;
    out.push({ plane, members: sel.members.length, wanted: sel.wanted, selector: sel.selector, outOfService: out_ });
  }
  return out;
}
