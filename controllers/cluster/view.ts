/**
 * What the phases of one pass hand each other, as types: the cluster's
 * identity (secrets phase), what is known of the workload cluster and of
 * failing runs (observers), and how each member node stands, computed from
 * those facts.
 *
 * @module
 */
import type { KeyPair } from "../../lib/pki.ts";
import { CONFIGURATION_ANNOTATION } from "../../core/contract/labels.ts";
import type { NixosConfiguration } from "../../core/contract/nio.ts";
import { joinReports, type WorkloadFacts } from "../../core/nodes/joined.ts";
import { type NodeReport, nodeReport, specChangedAt } from "../../core/nodes/readiness.ts";
import { runsOf } from "../../core/nodes/runs.ts";
import type { Plane } from "../../core/machines/selection.ts";
import type { ClusterScope } from "./scope.ts";

/** What the secrets phase produced: the CA, and a digest of the cluster's identity (tokens and CA). */
export interface Identity {
  ca: KeyPair;
  /** For `cluster.nix`, never the secrets themselves. */
  digest: string;
}

/** What is known about the workload cluster (answered by the workload observer). */
export type WorkloadView = WorkloadFacts & { hasKubeconfig?: boolean };

/** The facts node reports are computed from, as far as the pass has them. */
export interface PassView {
  /** What is known about the workload cluster; absent before it was observed. */
  workload?: WorkloadView | undefined;
  /** NIO v1: why each failing run failed, by Job name. */
  runFailures?: Map<string, string> | undefined;
  /** Configurations as the server answered this pass, by name. */
  written: ReadonlyMap<string, NixosConfiguration>;
  /** The spec each configuration should carry, by name (none before they were rendered). */
  wantedSpec: ReadonlyMap<string, NixosConfiguration["spec"]>;
}

/** The configuration of `machine` as of this pass: what was written, else the cache. */
export function configOf(s: ClusterScope, v: PassView, machine: string): NixosConfiguration | undefined {
  const cn = s.nameOf(machine);
  return v.written.get(cn) ?? s.cache.config(cn);
}

/**
 * How every member node stands now, control plane first: NIO's view, then
 * the workload cluster's (an applied node is Ready only when its Node is).
 */
export function nodeReports(s: ClusterScope, v: PassView): NodeReport[] {
  const applied = appliedReports(s, v);
  if (!v.workload) return applied;
  return joinReports({
    reports: applied,
    workload: v.workload,
    changedAt: (m) => {
      const cfg = configOf(s, v, m);
      return cfg && specChangedAt(cfg);
    },
    now: s.now,
    timeoutMs: s.timeoutMs,
    expected: (m) => configOf(s, v, m)?.metadata.annotations?.[CONFIGURATION_ANNOTATION],
  });
}

/** How every member node stands as NIO reports it (Ready: applied), control plane first. */
export function appliedReports(s: ClusterScope, v: PassView): NodeReport[] {
  const report = (machine: string, plane: Plane) =>
    nodeReport({
      machine,
      plane,
      cluster: s.ref,
      desired: v.wantedSpec.get(s.nameOf(machine)),
      config: configOf(s, v, machine),
      machineObj: s.machines.get(machine),
      now: s.now,
      timeoutMs: s.timeoutMs,
      nio: s.deps.nio,
      runs: s.deps.nio === "v1" ? runsOf(s.cache.jobs, s.nameOf(machine), v.runFailures) : undefined,
    });
  return [
    ...s.selection.controlPlane.members.map((m) => report(m, "controlPlane")),
    ...s.selection.dataPlane.members.map((m) => report(m, "dataPlane")),
  ];
}
