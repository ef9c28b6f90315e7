/**
 * Phase: the Kubernetes versions the nodes run, observed, never assumed:
 * each Node's `status.nodeInfo.kubeletVersion` and each control-plane node's
 * own `/version` (asked by the workload connection, off the pass's critical
 * path: ./workload/versions.ts), with what each configuration asks for
 * (`cluster.nix`). core/versions/cluster.ts makes the pass's plan of them
 * before the configurations are rendered. While the workload cluster's Nodes
 * are not known (its API away, NICO just started), the versions last seen
 * (`status.versions`) stand; with workload connections off, an applied node
 * counts as reporting what its configuration asks for.
 *
 * @module
 */
import { keyOf } from "../../lib/runtime/keys.ts";
import { configurationFacts } from "../../core/nodes/facts.ts";
import type { NodeReport } from "../../core/nodes/readiness.ts";
import { nodeAddress } from "../../core/render/desired.ts";
import type { Plane } from "../../core/machines/selection.ts";
import { type ClusterVersions, clusterVersions, type MemberVersions } from "../../core/versions/cluster.ts";
import { parseSpecVersion } from "../../core/versions/version.ts";
import type { ClusterScope } from "./scope.ts";
import type { PassRuns } from "./phases/runs.ts";
import type { WorkloadView } from "./view.ts";
import type { ApiServerAnswer, ApiServerTarget } from "./workload/versions.ts";

/** What the pass knows of the versions. */
export interface VersionsView {
  versions: ClusterVersions;
  /** Each control-plane node's API server version as answered since its last apply, by machine. */
  apiServers: ReadonlyMap<string, string>;
}

/** One member as the versions need it: its configuration's facts and its run report (the runs step's, phases/runs.ts). */
function runOf(s: ClusterScope, runs: PassRuns, machine: string): { asked: MemberVersions["asked"]; run?: NodeReport } {
  const config = s.cache.config(s.nameOf(machine));
  const run = runs.reports.get(machine);
  if (!config || !run) return { asked: undefined };
  return { asked: configurationFacts(config).asked, run };
}

/** The API server's answer, when it came after the node's last apply (an older one is not its version now). */
function fresh(a: ApiServerAnswer | undefined, since: Date | undefined): string | undefined {
  return a?.version && (since === undefined || a.at >= since) ? a.version : undefined;
}

/** Gathers what each member reports and asks for, and plans the versions of this pass. */
export function observeVersions(s: ClusterScope, w: WorkloadView, runs: PassRuns): VersionsView {
  const planes = s.members.map((m) => ({
    machine: m,
    plane: (s.selection.controlPlane.members.includes(m) ? "controlPlane" : "dataPlane") as Plane,
  }));
  const ofMember = new Map(planes.map((p) => [p.machine, runOf(s, runs, p.machine)]));
  const targets: ApiServerTarget[] = planes.filter((p) => p.plane === "controlPlane" && ofMember.get(p.machine)?.run)
    .map((p) => ({
      machine: p.machine,
      host: nodeAddress(s.machines.get(p.machine), p.machine),
      since: ofMember.get(p.machine)?.run?.appliedAt,
    }));
  const conn = s.deps.workloads?.connection(keyOf(s.namespace, s.name));
  const answers = conn?.apiServerVersions(targets) ?? new Map<string, ApiServerAnswer>();
  const last = new Map((s.cluster.status?.versions?.nodes ?? []).map((n) => [n.name, n]));
  const apiServers = new Map<string, string>();
  const members: MemberVersions[] = planes.map(({ machine, plane }) => {
    const { asked, run } = ofMember.get(machine)!;
    const api = fresh(answers.get(machine), run?.appliedAt);
    if (api) apiServers.set(machine, api);
    // Nodes not known now (the API away, or not listed yet): as last seen.
    const seen = w.nodes === undefined ? last.get(machine) : undefined;
    return {
      machine,
      plane,
      exists: run !== undefined,
      asked,
      kubelet: w.nodes?.get(machine)?.kubeletVersion ?? seen?.kubelet,
      apiServer: api ?? seen?.apiServer,
      appliedUnseen: w.disabled === true && run?.state === "Ready",
    };
  });
  const target = s.spec.version === undefined ? undefined : parseSpecVersion(s.spec.version);
  return { versions: clusterVersions(target, members), apiServers };
}
