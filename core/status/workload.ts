/**
 * The workload cluster's conditions on a KubernetesCluster:
 * `WorkloadAPIAvailable`, `NodesHealthy` and `ControlPlaneHealthy`. Pure.
 *
 * @module
 */
import { condition, type ConditionInput, listNames } from "./conditions.ts";
import { age, type WorkloadFacts } from "../nodes/joined.ts";
import type { NodeReport } from "../nodes/readiness.ts";

export interface WorkloadStatusInput {
  /** What is known; `hasKubeconfig: false` before NICO issued one (there is nothing to read Nodes with yet). */
  workload: WorkloadFacts & { hasKubeconfig?: boolean | undefined };
  /** The workload API's URL, for messages. */
  server?: string | undefined;
  /** Member reports after {@link joinReports}. */
  nodes: NodeReport[];
  now: Date;
}

/**
 * The three conditions, or none when workload connections are turned off.
 *
 * @example
 * ```ts
 * import { workloadConditions } from "./workload.ts";
 * const now = new Date("2026-01-01T00:00:00Z");
 * const conditions = workloadConditions({
 *   workload: {
 *     api: { state: "Available", message: "the API server is ready", since: now },
 *     nodes: new Map([["cp-1", { name: "cp-1", ready: "True" as const, cordoned: false }]]),
 *   },
 *   nodes: [{ machine: "cp-1", plane: "controlPlane", state: "Ready", reason: "Joined", detail: "applied; Node Ready", upToDate: true, applied: true }],
 *   now,
 * });
 * conditions.map((c) => `${c.type}=${c.status}`); // ["WorkloadAPIAvailable=True", "NodesHealthy=True", "ControlPlaneHealthy=True"]
 * ```
 */
export function workloadConditions(i: WorkloadStatusInput): ConditionInput[] {
  if (i.workload.disabled) return [];
  return [apiCondition(i), nodesCondition(i), controlPlaneCondition(i)];
}

function apiCondition(i: WorkloadStatusInput): ConditionInput {
  const { api } = i.workload;
  const type = "WorkloadAPIAvailable";
  const where = i.server ? ` at ${i.server}` : "";
  if (api.state === "Available") {
    return condition(type, "True", "Available", `${api.message}${where} with NICO's kubeconfig`);
  }
  if (api.state === "Unknown") return condition(type, "Unknown", "NotChecked", api.message);
  const since = age(i.now.getTime() - api.since.getTime());
  return condition(type, "False", "Unreachable", `${api.message}${where}; unavailable for ${since}`);
}

/** The conditions that read the workload cluster's Nodes. */
type NodeConditionType = "NodesHealthy" | "ControlPlaneHealthy";

/** Why Nodes cannot be read now: no kubeconfig yet (nothing is wrong), or the workload API does not answer. */
function unreadable(i: WorkloadStatusInput, type: NodeConditionType): ConditionInput | undefined {
  if (i.workload.hasKubeconfig === false) {
    return condition(type, "Unknown", "NoKubeconfig", "no kubeconfig issued yet: Nodes are read with it");
  }
  if (i.workload.api.state !== "Available" || !i.workload.nodes) {
    return condition(type, "Unknown", "WorkloadAPIUnavailable", "the workload API cannot be read");
  }
  return undefined;
}

function nodesCondition(i: WorkloadStatusInput): ConditionInput {
  const type = "NodesHealthy";
  const nodes = i.workload.nodes;
  const cannot = unreadable(i, type);
  if (cannot || !nodes) return cannot!;
  const applied = i.nodes.filter((n) => n.applied);
  const notReady: string[] = [];
  const missing: string[] = [];
  const cordoned: string[] = [];
  for (const r of applied) {
    const n = nodes.get(r.machine);
    if (!n) {
      missing.push(r.machine);
      continue;
    }
    const since = n.since ? ` for ${age(i.now.getTime() - n.since.getTime())}` : "";
    if (n.ready !== "True") notReady.push(`${r.machine} (${n.ready}${n.why ? `: ${n.why}` : ""}${since})`);
    if (n.cordoned) {
      const by = n.drainStarted
        ? `drained by NICO for ${age(i.now.getTime() - n.drainStarted.getTime())}`
        : "by someone else";
      cordoned.push(`${r.machine} (${by})`);
    }
  }
  const parts = [
    notReady.length ? `NotReady: ${listNames(notReady)}` : "",
    missing.length ? `missing: ${listNames(missing)} (no Node of that name)` : "",
    cordoned.length ? `cordoned: ${listNames(cordoned)}` : "",
  ].filter(Boolean);
  if (!parts.length) {
    // Where no Node names the configuration it runs (the flake contract), NIO's run result is the proof.
    const reports = [...nodes.values()].some((n) => n.configuration !== undefined);
    const proof = reports
      ? "; each names the configuration it runs"
      : "; no Node names the configuration it runs (see the flake contract): NICO relies on NIO's run results " +
        "and on a kubelet status posted after each switch";
    return condition(
      type,
      "True",
      "NodesReady",
      `${applied.length} Node(s) Ready and schedulable${applied.length ? proof : ""}`,
    );
  }
  const reason = notReady.length ? "NodesNotReady" : missing.length ? "NodesMissing" : "NodesCordoned";
  return condition(type, "False", reason, parts.join("; "));
}

/**
 * Stacked etcd, checked without touching hosts: the API server NICO reaches
 * is ready (its `/readyz` includes its etcd check) and every control-plane
 * Node is Ready. Per-member etcd health is not seen (see docs/readiness.md).
 */
function controlPlaneCondition(i: WorkloadStatusInput): ConditionInput {
  const type = "ControlPlaneHealthy";
  const nodes = i.workload.nodes;
  const cannot = unreadable(i, type);
  if (cannot || !nodes) return cannot!;
  const cp = i.nodes.filter((n) => n.plane === "controlPlane");
  const bad = cp.filter((n) => nodes.get(n.machine)?.ready !== "True").map((n) => n.machine);
  if (bad.length) {
    const ready = `${cp.length - bad.length}/${cp.length} Ready`;
    return condition(
      type,
      "False",
      "ControlPlaneNodesNotReady",
      `control-plane Node(s) not Ready: ${listNames(bad)}; ${ready}`,
    );
  }
  const ready = `${cp.length}/${cp.length} control-plane Nodes Ready`;
  return condition(type, "True", "Healthy", `API server ready (/readyz, etcd included); ${ready}`);
}
