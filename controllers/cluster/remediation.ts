/**
 * What remediation reads from one pass, gathered from the scope: each plane's
 * facts for core/rollout/remediation.ts, the remediations in flight and the planes
 * left short for core/status/remediation.ts. Reads only; the writes are in
 * phases/remediation.ts.
 *
 * @module
 */
import { CLUSTER_LABEL, REMEDIATED_ANNOTATION } from "../../core/contract/labels.ts";
import { type Mark, markOf } from "../../core/machines/marks.ts";
import type { Machine } from "../../core/contract/nio.ts";
import { judgeMember, type Unhealthy } from "../../core/nodes/health.ts";
import type { NodeFacts } from "../../core/nodes/facts.ts";
import { type PlaneFacts, remediationSettings } from "../../core/rollout/remediation.ts";
import type { InFlightStep, ShortPlane } from "../../core/status/remediation.ts";
import { type Plane, selectMachines } from "../../core/machines/selection.ts";
import type { ClusterScope } from "./scope.ts";
import type { EtcdView, Member, WorkloadView } from "./view.ts";
import { memberOn } from "../../core/etcd/members.ts";

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

/** Gathers the view from the members as the pass ended (their facts, and reports after the workload cluster). */
export function remediationView(
  s: ClusterScope,
  members: readonly Member[],
  w: WorkloadView,
  etcd?: EtcdView,
): RemediationView {
  const marks = ourMarks(s);
  const nodesKnown = !w.disabled && w.api.state === "Available" && w.nodes !== undefined;
  const planes: PlaneFacts[] = [];
  const byMachine = new Map(members.map((m) => [m.facts.machine, m]));
  const inFlight = inFlightSteps(s, byMachine, marks);
  let due: number | undefined;
  for (const plane of PLANES) {
    const settings = remediationSettings(s.spec[plane]);
    if (!settings) continue;
    const sel = s.selection[plane];
    const unhealthy: Unhealthy[] = [];
    for (const machine of sel.members) {
      const m = byMachine.get(machine);
      if (!m?.config) continue;
      const { createdAt, changedAt, expected, node } = m.facts;
      const v = judgeMember(
        {
          machine,
          report: m.report,
          nodesKnown,
          apiBackAt: w.api.outage?.to,
          node,
          machineObj: s.machines.get(machine),
          createdAt,
          changedAt,
          expected,
        },
        settings,
        s.now,
      );
      if (v.unhealthy) unhealthy.push(v.unhealthy);
      if (v.dueAt) due = Math.min(due ?? Infinity, v.dueAt.getTime());
    }
    // Only an unhealthy member may be replaced, so only its replacement is looked for (a selection each).
    const sick = new Set(unhealthy.map((u) => u.machine));
    const facts = new Map(sel.members.map((machine): [string, Pick<NodeFacts, "createdAt" | "replacement">] => [
      machine,
      {
        createdAt: byMachine.get(machine)?.facts.createdAt,
        replacement: sick.has(machine) ? replacementOf(s, plane, machine) : undefined,
      },
    ]));
    planes.push({
      plane,
      settings,
      mode: sel.mode,
      members: sel.members,
      ready: members.filter((m) => m.report.plane === plane && m.report.state === "Ready").map((m) => m.facts.machine),
      unhealthy,
      inFlight: inFlight.filter((f) => f.plane === plane).map((f) => f.machine),
      marks: [...marks.values()].filter((m) => m.plane === plane).map((m) => m.at),
      facts,
      bootstrap: s.bootstrap,
      endpointIsBootstrap: !s.spec.controlPlaneEndpoint,
      ...(plane === "controlPlane" && etcd && (etcd.sight.kind === "seen" || lost(etcd))
        ? { etcd: etcdFacts(etcd) }
        : {}),
      nodesKnown,
      provisioned: s.cluster.status?.initialization?.provisioned === true,
      paused: s.paused,
      selector: sel.selector,
      now: s.now,
    });
  }
  return { planes, inFlight, short: shortPlanes(s, marks), dueAt: due === undefined ? undefined : new Date(due) };
}

/** Whether etcd answers but has lost quorum (members answer without a leader, so none lists the members). */
const lost = (etcd: EtcdView) => etcd.sight.kind === "unreachable" && etcd.sight.quorumLost === true;

/** etcd's members and the member on each control-plane node's address, for the quorum rule. */
function etcdFacts(etcd: EtcdView): NonNullable<PlaneFacts["etcd"]> {
  if (etcd.sight.kind === "unreachable" && etcd.sight.quorumLost) {
    return { members: [], memberOf: new Map(), quorumLost: etcd.sight.why };
  }
  const members = etcd.sight.kind === "seen" ? etcd.sight.members : [];
  const memberOf = new Map<string, string>();
  for (const n of etcd.nodes) {
    const m = memberOn(members, n.address);
    if (m) memberOf.set(n.machine, m.id);
  }
  return { members, memberOf };
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
function inFlightSteps(
  s: ClusterScope,
  byMachine: ReadonlyMap<string, Member>,
  marks: Map<string, Mark>,
): InFlightStep[] {
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
      const t = byMachine.get(m)?.facts.createdAt;
      return t === undefined || t.getTime() >= since;
    }).map((m) => ({ machine: m, ready: byMachine.get(m)?.report.state === "Ready" }));
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
