/**
 * What the user commands show about a cluster: its nodes with their Machine,
 * NixosConfiguration, readiness (core/nodes/readiness.ts) and place in the
 * rollout, read from the API server. {@link clusterView} is pure; {@link
 * readCluster} does the reads.
 *
 * @module
 */
import { durationMs, type KubernetesCluster } from "../crds/kubernetescluster.ts";
import { reasonSpec, typeSpec } from "../crds/conditions/mod.ts";
import { rolloutSettings } from "../crds/defaults.ts";
import { CLUSTER_DEFAULTS } from "../controllers/cluster/settings.ts";
import type { KubeClient } from "../lib/kube/client.ts";
import { KUBERNETES_CLUSTERS } from "../crds/kubernetescluster.ts";
import { JOBS, MACHINES, NIXOS_CONFIGURATIONS } from "../core/contract/nio.ts";
import { CLUSTER_LABEL, ROLE_LABEL } from "../core/contract/labels.ts";
import { configName } from "../core/contract/names.ts";
import type { Machine, NioGeneration, NixosConfiguration } from "../core/contract/nio.ts";
import { type BatchJob, runsOf } from "../core/nodes/runs.ts";
import { type DetectedNio, detectNioGeneration } from "./niogen.ts";
import { nodeReport, type NodeState } from "../core/nodes/readiness.ts";
import type { StepDrains } from "../core/rollout/steps.ts";
import { isOwnedBy, type Plane } from "../core/machines/selection.ts";
import { type FlagSpec, parseArgs, type ParsedArgs, targetFor, UsageError } from "./flags.ts";

/** Where a node stands in the rollout. */
export type Position = "failed" | "updating" | "pending" | "held" | "removing" | "up to date";

export interface NodeView {
  machine: string;
  plane: Plane;
  bootstrap: boolean;
  machineObj: Machine | undefined;
  config: NixosConfiguration | undefined;
  /** A node that is no longer a member; its configuration is on its way out. */
  departing: boolean;
  state: NodeState;
  detail: string;
  upToDate: boolean;
  /** The commit it runs, shortened (`-`: not known). */
  revision: string;
  position: Position;
  /** 1-based place in status.rollout.pending. */
  order?: number | undefined;
  /** The rollout holds it until its drain finishes (status.rollout.draining). */
  drain?: { state: "Draining" | "TimedOut"; message: string } | undefined;
  /** The rollout holds it for etcd (status.rollout.etcdHeld): what it waits for. */
  etcdHold?: string | undefined;
}

export interface ClusterView {
  cluster: KubernetesCluster;
  nodes: NodeView[];
  paused: boolean;
  halted: boolean;
  /** The NIO that applies the configurations, and how NICO knows. */
  nio: DetectedNio;
}

/** What is known of NIO when the view is built: its generation and, for v1, the namespace's Jobs. */
export interface NioFacts {
  nio: DetectedNio;
  jobs: BatchJob[];
}

/** NICO's default --node-timeout; the CLI cannot know the operator's flag, the spec wins when set. */
const DEFAULT_NODE_TIMEOUT_MS: number = CLUSTER_DEFAULTS.nodeTimeout;

/** Any condition, of NICO or NIO. */
export interface AnyCondition {
  type: string;
  status: string;
  reason?: string | undefined;
  message?: string | undefined;
  lastTransitionTime?: string | undefined;
}

/** Conditions whose True is the bad news, in NIO's kstatus style (NICO's own: the registry's polarity). */
const ABNORMAL_WHEN_TRUE = new Set(["Stalled", "Degraded", "Reconciling", "Paused"]);

/**
 * Whether a condition reports a problem or work in progress. One NICO writes is not fine when the registry
 * (crds/conditions) says its reason means anything but `fine` (`Remediating=False TooManyUnhealthy`, `RollingOut`
 * until `RolloutComplete`); any other (NIO's, or a reason NICO does not write) by what its status says.
 */
export function isAbnormal(c: AnyCondition): boolean {
  const spec = reasonSpec(c.type, c.status, c.reason);
  if (spec) return spec.meaning !== "fine";
  const trueIsNews = typeSpec(c.type)?.polarity === "negative" || ABNORMAL_WHEN_TRUE.has(c.type);
  return trueIsNews ? c.status === "True" : c.status !== "True";
}

/**
 * The newest condition that reports a problem or work in progress; on a tie
 * (timestamps have second precision) a condition that is bad when True, such
 * as Stalled, wins: it is the more specific one.
 */
export function newestAbnormal<T extends AnyCondition>(conds: T[] | undefined): T | undefined {
  const specific = (c: T) => (ABNORMAL_WHEN_TRUE.has(c.type) ? 0 : 1);
  return (conds ?? []).filter(isAbnormal).sort((a, b) =>
    (b.lastTransitionTime ?? "").localeCompare(a.lastTransitionTime ?? "") || specific(a) - specific(b)
  )[0];
}

/** The NIO phase of a configuration, for either NIO generation. */
export function nioPhase(cfg: NixosConfiguration | undefined): string {
  if (!cfg) return "-";
  if (cfg.metadata.deletionTimestamp) return "Removing";
  if (cfg.status?.phase) return cfg.status.phase;
  const applied = cfg.status?.conditions?.find((c) => c.type === "Applied");
  if (applied) return applied.status === "True" ? "Applied" : applied.reason ?? "NotApplied";
  return "-";
}

/**
 * The commit NIO applied, shortened to 7 characters as git does. NIO v1 names the new commit before any
 * run of it: its revision is shown only for a node that ran its current spec.
 */
export function appliedRevision(
  cfg: NixosConfiguration | undefined,
  m: Machine | undefined,
  nio: NioGeneration = "older",
  state?: NodeState,
): string {
  if (nio === "v1" && state !== "Ready") return "-";
  const rev = cfg?.status?.resolvedRevision ?? cfg?.status?.appliedCommit ?? m?.status?.appliedCommit;
  return rev ? rev.slice(0, 7) : "-";
}

/** The nodes the status says the rollout holds: for their drain, and for etcd. */
function rolloutHolds(c: KubernetesCluster) {
  const r = c.status?.rollout;
  return {
    drains: new Map((r?.draining ?? []).map((d) => [d.node, d])),
    etcdHolds: new Map((r?.etcdHeld ?? []).map((h) => [h.node, h.message])),
  };
}

/** The pause and the halt as the controller wrote them (status.rollout): the CLI decides neither a second time. */
function stoppedBy(c: KubernetesCluster): { paused: boolean; halted: boolean } {
  return { paused: c.status?.rollout?.paused === true, halted: c.status?.rollout?.halted !== undefined };
}

/** The view of one cluster from its objects. Pure. */
export function clusterView(
  cluster: KubernetesCluster,
  configs: NixosConfiguration[],
  machines: Machine[],
  now: Date,
  facts: NioFacts = { nio: { generation: "v1", source: "assumed" }, jobs: [] },
): ClusterView {
  const generation: NioGeneration = facts.nio.generation;
  const ref = { name: cluster.metadata.name, namespace: cluster.metadata.namespace!, uid: cluster.metadata.uid };
  const ours = configs.filter((c) => isOwnedBy(c, ref));
  const byMachine = new Map(ours.map((c) => [c.spec.machineRef.name, c]));
  const machineByName = new Map(machines.map((m) => [m.metadata.name, m]));
  const s = cluster.status;
  const roleOf = (c: NixosConfiguration): Plane =>
    c.metadata.labels?.[ROLE_LABEL] === "control-plane" ? "controlPlane" : "dataPlane";
  const members: Record<Plane, string[]> = {
    controlPlane: s?.controlPlane?.machines ??
      ours.filter((c) => roleOf(c) === "controlPlane").map((c) => c.spec.machineRef.name),
    dataPlane: s?.dataPlane?.machines ??
      ours.filter((c) => roleOf(c) === "dataPlane").map((c) => c.spec.machineRef.name),
  };
  const memberSet = new Set([...members.controlPlane, ...members.dataPlane]);
  const pending = s?.rollout?.pending ?? [];
  const updating = new Set(s?.rollout?.updating ?? []);
  const removing = new Set(s?.rollout?.removing ?? []);
  const { drains, etcdHolds } = rolloutHolds(cluster);
  const { paused, halted } = stoppedBy(cluster);
  const { nodeTimeout } = rolloutSettings(cluster.spec.rollout);
  const timeoutMs = nodeTimeout ? durationMs(nodeTimeout) : DEFAULT_NODE_TIMEOUT_MS;
  const view = (machine: string, plane: Plane, departing: boolean): NodeView => {
    const config = byMachine.get(machine);
    const inPlan = pending.indexOf(machine);
    const upToDate = !departing && config !== undefined && inPlan < 0;
    // Up to date means "not in NICO's plan": readiness then compares the configuration with itself.
    const r = nodeReport({
      machine,
      plane,
      cluster: ref,
      desired: upToDate ? config.spec : undefined,
      config,
      machineObj: machineByName.get(machine),
      now,
      timeoutMs,
      nio: generation,
      runs: config && generation === "v1" ? runsOf(facts.jobs, config.metadata.name) : undefined,
    });
    let position: Position = "up to date";
    if (departing || removing.has(machine)) position = "removing";
    else if (r.state === "Failed") position = "failed";
    else if (updating.has(machine)) position = "updating";
    const [drain, etcdHold] = [drains.get(machine), etcdHolds.get(machine)];
    if (position === "up to date" && inPlan >= 0) position = paused || halted || drain || etcdHold ? "held" : "pending";
    return {
      machine,
      plane,
      bootstrap: s?.bootstrapNode === machine,
      machineObj: machineByName.get(machine),
      config,
      departing,
      state: r.state,
      detail: r.detail,
      upToDate: r.upToDate,
      revision: appliedRevision(config, machineByName.get(machine), generation, r.state),
      position,
      order: inPlan >= 0 ? inPlan + 1 : undefined,
      ...(drain ? { drain: { state: drain.state, message: drain.message } } : {}),
      ...(etcdHold ? { etcdHold } : {}),
    };
  };
  const nodes: NodeView[] = [];
  for (const plane of ["controlPlane", "dataPlane"] as const) {
    for (const m of [...members[plane]].sort()) nodes.push(view(m, plane, false));
    for (const c of ours) {
      const m = c.spec.machineRef.name;
      if (roleOf(c) === plane && !memberSet.has(m)) nodes.push(view(m, plane, true));
    }
  }
  return { cluster, nodes, paused, halted, nio: facts.nio };
}

/** The drains the status recorded as holding nodes, as the planner takes them (core/rollout/drainhold.ts). */
export function rolloutDrains(v: ClusterView): StepDrains {
  return {
    drains: v.nodes.flatMap((n) => (n.drain ? [{ machine: n.machine, ...n.drain }] : [])),
    onTimeout: rolloutSettings(v.cluster.spec.rollout).drain.onTimeout,
  };
}

/** Reads one cluster, its configurations and the Machines; `undefined` when the cluster does not exist. */
export async function readCluster(
  client: KubeClient,
  namespace: string,
  name: string,
  now: Date,
): Promise<ClusterView | undefined> {
  const cluster = await client.get<KubernetesCluster>(KUBERNETES_CLUSTERS, name, namespace);
  if (!cluster) return undefined;
  const nio = await detectNioGeneration(client);
  const [configs, machines, jobs] = await Promise.all([
    client.list<NixosConfiguration>(NIXOS_CONFIGURATIONS, { namespace, labelSelector: `${CLUSTER_LABEL}=${name}` }),
    client.list<Machine>(MACHINES, { namespace }),
    nio.generation === "v1" ? client.list<BatchJob>(JOBS, { namespace }) : Promise.resolve({ items: [] }),
  ]);
  return clusterView(cluster, configs.items, machines.items, now, { nio, jobs: jobs.items });
}

/** The configuration name NICO gives a node (shown when it does not exist yet). */
export const configNameOf = (cluster: string, machine: string) => configName(cluster, machine);

/**
 * A command that shows one cluster (`nico describe <cluster>`, `nico plan
 * <cluster>`): parses `args`, reads the cluster and prints what `render`
 * makes of it; answers the exit code (1 when the cluster does not exist).
 */
export async function showCluster(
  command: string,
  args: string[],
  specs: FlagSpec[],
  help: string,
  now: Date,
  render: (v: ClusterView, flags: ParsedArgs["flags"]) => string,
): Promise<number> {
  const { flags, positional } = parseArgs(command, args, specs);
  if (flags.help) {
    console.log(help);
    return 0;
  }
  if (positional.length !== 1) {
    throw new UsageError(`${command} needs one cluster name: nico ${command} <cluster>`);
  }
  const name = positional[0]!;
  const { client, namespace } = targetFor(flags);
  try {
    const v = await readCluster(client, namespace, name, now);
    if (!v) {
      console.error(`nico ${command}: no KubernetesCluster ${name} in namespace ${namespace} (try nico get -A)`);
      return 1;
    }
    console.log(render(v, flags));
    return 0;
  } finally {
    await client.close();
  }
}
