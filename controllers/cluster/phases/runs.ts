/**
 * Phase: the runs of the pass, gathered once and handed to whoever needs
 * them (the versions, the members' reports, the configurations' writes).
 * With NIO v1, each member's runs are read from the Job cache once, and why
 * the failing ones failed from their Pods; then each member's run report
 * (core/nodes/readiness.ts) is made once from its cached configuration. A
 * report is made again only for a configuration this pass wrote (see
 * view.ts afterWrites), by {@link runReport}.
 *
 * @module
 */
import type { NixosConfiguration } from "../../../core/contract/nio.ts";
import type { Plane } from "../../../core/machines/selection.ts";
import { type NodeReport, nodeReport } from "../../../core/nodes/readiness.ts";
import { type Run, runsOf } from "../../../core/nodes/runs.ts";
import type { ClusterScope } from "../scope.ts";

/** What the pass knows of the members' runs. */
export interface PassRuns {
  /** NIO v1: why each failing run failed, by Job name; `undefined` with the older NIO. */
  failures: Map<string, string> | undefined;
  /** NIO v1: each member's runs, oldest first, by machine; empty with the older NIO. */
  byMachine: ReadonlyMap<string, readonly Run[]>;
  /**
   * Each member's run report from its cached configuration, by machine (a member without one: none), before the
   * spec it should carry is known: `upToDate` is false until view.ts judges it against the wanted spec.
   */
  reports: ReadonlyMap<string, NodeReport>;
}

/** Each member with its plane. */
function planes(s: ClusterScope): { machine: string; plane: Plane }[] {
  const cp = new Set(s.selection.controlPlane.members);
  return s.members.map((machine) => ({ machine, plane: cp.has(machine) ? "controlPlane" : "dataPlane" }));
}

/** Gathers the members' runs once: their Jobs, why the failing ones failed, and each member's run report. */
export async function observeRuns(s: ClusterScope): Promise<PassRuns> {
  const failures = s.deps.nio === "v1"
    ? await s.memory.runFailures.reasons(s.deps.client, s.namespace, s.ours.map((c) => c.metadata.name), s.cache.jobs)
    : undefined;
  const byMachine = new Map<string, readonly Run[]>();
  if (s.deps.nio === "v1") { for (const m of s.members) byMachine.set(m, memberRuns(s, m, failures)); }
  const runs: Omit<PassRuns, "reports"> = { failures, byMachine };
  const reports = new Map<string, NodeReport>();
  for (const { machine, plane } of planes(s)) {
    const config = s.cache.config(s.nameOf(machine));
    if (config) reports.set(machine, runReport(s, runs, machine, plane, config, undefined));
  }
  return { ...runs, reports };
}

/** A member's run report: what NIO (and, for v1, its runs) says of its configuration `config`. */
export function runReport(
  s: ClusterScope,
  runs: Omit<PassRuns, "reports"> | undefined,
  machine: string,
  plane: Plane,
  config: NixosConfiguration | undefined,
  desired: NixosConfiguration["spec"] | undefined,
): NodeReport {
  return nodeReport({
    machine,
    plane,
    cluster: s.ref,
    desired,
    config,
    machineObj: s.machines.get(machine),
    now: s.now,
    timeoutMs: s.timeoutMs,
    nio: s.deps.nio,
    // Before the runs were gathered (a pass cut short), read here without the failures' reasons.
    runs: s.deps.nio === "v1" ? runs?.byMachine.get(machine) ?? memberRuns(s, machine, undefined) : undefined,
  });
}

/** The runs of a member's configuration among the namespace's Jobs: the one place a pass reads them. */
function memberRuns(s: ClusterScope, machine: string, failures: Map<string, string> | undefined): readonly Run[] {
  return runsOf(s.cache.jobs, s.nameOf(machine), failures);
}
