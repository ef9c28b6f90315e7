/**
 * Phase: one NixosConfiguration per member, rolled out in the order and
 * pace the planner allows; configurations of departed nodes are deleted
 * when the planner lets them go (NIO then runs `#minimal`). It comes in two
 * steps: {@link planConfigurations} decides and writes nothing;
 * {@link writeConfigurations} writes what was decided, once the drains
 * (phases/workload.ts) and etcd (phases/etcd.ts) held back what they hold;
 * pass.ts runs the four in that order.
 *
 * @module
 */
import { NIXOS_CONFIGURATIONS, type NixosConfiguration } from "../../../core/contract/nio.ts";
import { CLUSTER_LABEL, planeOfRole, ROLE_LABEL, SPEC_HASH_ANNOTATION } from "../../../core/contract/labels.ts";
import { desiredConfigurations, ETCD_CLIENT_PORT, resolveEndpoint } from "../../../core/render/desired.ts";
import { endpointUrl } from "../../../core/render/kubeconfig.ts";
import { type BackupGate, type DepartingNode, planRollout, type RolloutPlan } from "../../../core/rollout/plan.ts";
import { plannerInput } from "../../../core/rollout/input.ts";
import { markOf } from "../../../core/machines/marks.ts";
import {
  RUN_SOON_SCHEDULE,
  runSoonGraceMs,
  sameSchedule,
  scheduleFor,
  scheduleOnChange,
} from "../../../core/nodes/runs.ts";
import { type NodeReport, sameSecondAsLast, specChangedAt } from "../../../core/nodes/readiness.ts";
import { specDrift } from "../../../core/render/drift.ts";
import { eachBounded } from "../../../lib/runtime/bounded.ts";
import { type ClusterScope, WRITES_IN_FLIGHT } from "../scope.ts";
import { type EtcdView, gatherMembers, type Identity, type Member, reportsOf, type WorkloadView } from "../view.ts";
import { applyConfiguration } from "./apply.ts";
import { type Blocked, type Pinned, pinRevision } from "./revision.ts";
import type { PassRuns } from "./runs.ts";
import { type Requeue, soonest } from "../requeue.ts";
import type { VersionsView } from "../versions.ts";
import { type RestoreOutcome, restorePlan } from "./restore.ts";

/** What the configurations phase is given by the phases before it. */
export interface ConfigurationsInput {
  identity: Identity;
  workload: WorkloadView;
  /** The runs of the pass (phases/runs.ts), gathered once. */
  runs: PassRuns | undefined;
  /** The Kubernetes versions: what each node's cluster.nix asks for, and what the skew guard judges. */
  versions: VersionsView;
  /** What the pass sees of etcd (phases/etcd.ts); absent: nothing (the Node-based rules alone). */
  etcd?: EtcdView | undefined;
  /** What the planner knows of etcd snapshots (phases/backup.ts); `undefined`: backups are not configured. */
  backup: BackupGate | undefined;
  /** A restore of etcd (phases/restore.ts): the nodes' parts are rendered, and while it runs the plan is its own. */
  restore?: RestoreOutcome | undefined;
}

/** What {@link planConfigurations} decided. It writes nothing: the drains, etcd and the writes are steps of their own. */
export interface Planned {
  /** The revision nodes are pinned to. */
  pinned: Pinned;
  /** Why nodes cannot be rendered (no gitRepo, no control plane, …); nothing below is set then. */
  blocked?: Blocked | undefined;
  /** The API endpoint the configurations carry. */
  endpoint?: string | undefined;
  /** The spec hash each configuration should carry, by name. */
  wantedHash: Map<string, string>;
  /** The spec each configuration should carry, by name: up to date is judged by content. */
  wantedSpec: Map<string, NixosConfiguration["spec"]>;
  /** The configurations as NICO wants them now (none while blocked). */
  desired: NixosConfiguration[];
  /** The members as planned: their facts and reports before this pass's writes (see view.ts afterWrites). */
  members?: Member[] | undefined;
  /** The planner's answer, before the drains and etcd hold back what they hold (none while blocked). */
  plan?: RolloutPlan | undefined;
}

/** Pins the revision, renders the configurations and plans the rollout; writes nothing. */
export function planConfigurations(s: ClusterScope, i: ConfigurationsInput): Planned {
  const { spec, bootstrap, gitRepo } = s;
  const pinned: Pinned = gitRepo ? pinRevision(s, gitRepo) : {};
  const none: Planned = { pinned, wantedHash: new Map(), wantedSpec: new Map(), desired: [] };
  if (!gitRepo) {
    const message = "no gitRepo: set spec.gitRepo, or run NICO with --default-git-repo";
    return { ...none, blocked: { reason: "NoGitRepo", message } };
  }
  if (pinned.blocked) return { ...none, blocked: pinned.blocked };
  if (!bootstrap) {
    const message = "no control plane machine is available; see MachinesAvailable";
    return { ...none, blocked: { reason: "NoControlPlane", message } };
  }
  const ep = resolveEndpoint(spec, s.machines.get(bootstrap), bootstrap);
  if (ep.error) {
    const message = `${ep.error}; fix it so NICO can build the kubeconfig`;
    return { ...none, blocked: { reason: "InvalidEndpoint", message } };
  }
  const endpoint = endpointUrl(ep.host, ep.port);
  const desired = desiredConfigurations({
    cluster: { ...s.ref, uid: s.cluster.metadata.uid!, spec, labels: s.cluster.metadata.labels },
    selection: s.selection,
    machines: [...s.machines.values()],
    bootstrap,
    endpoint: ep,
    nameOf: s.nameOf,
    gitRepo: pinned.pinnedRepo ?? gitRepo,
    revision: pinned.revision,
    nio: s.deps.nio,
    identity: i.identity.digest,
    versions: i.versions.versions.render,
    etcd: i.identity.etcd?.ca ? { clientPort: spec.etcd?.clientPort ?? ETCD_CLIENT_PORT } : undefined,
    restore: i.restore?.desired,
  });
  const wantedHash = new Map(desired.map((d) => [d.metadata.name, d.metadata.annotations![SPEC_HASH_ANNOTATION]!]));
  const wantedSpec = new Map(desired.map((d) => [d.metadata.name, d.spec]));
  const members = gatherMembers(s, { ...i, written: new Map(), wantedSpec, apiServers: i.versions.apiServers });
  const { changing, rollout: versions } = i.versions.versions;
  const plan = restorePlan(i.restore, s.members) ?? planRollout(plannerInput({
    rollout: spec.rollout,
    endpointSet: spec.controlPlaneEndpoint !== undefined,
    reports: reportsOf(members),
    changing,
    departing: departingNodes(s, i.workload),
    bootstrap,
    paused: s.paused,
    kubeconfigIssued: s.cluster.status?.kubeconfigSecret !== undefined,
    hold: workloadHold(i.workload),
    releasing: stillReleasing(s),
    versions,
    backup: i.backup,
  }));
  return { ...none, endpoint, wantedHash, wantedSpec, desired, members, plan };
}

/**
 * Writes what was decided: `plan` is the planner's, with what the drains and etcd hold back (pass.ts). Each
 * configuration is written on its own, then the deletions of departed nodes; paused, only the resting schedules
 * are put back. `written` receives what the server answered for each, as it answers.
 */
export async function writeConfigurations(
  s: ClusterScope,
  planned: Planned,
  plan: RolloutPlan | undefined,
  written: Map<string, NixosConfiguration>,
  runs: PassRuns | undefined,
): Promise<{ requeue?: Requeue | undefined }> {
  if (!plan) return {};
  const { desired } = planned;
  if (!s.writes.configurations) {
    if (s.writes.restSchedules) await restSchedules(s, desired, written);
    return {};
  }
  let requeue: Requeue | undefined;
  const renderNow = new Set(plan.create);
  for (const m of plan.update) {
    // Not in the second of the node's last apply, run or change: afterwards no one could tell them apart.
    const cfg = s.cache.config(s.nameOf(m));
    if (cfg && sameSecondAsLast(cfg, runs?.byMachine.get(m) ?? [], s.now)) {
      requeue = soonest(requeue, { after: 1000, why: `the change of ${m} waits for the next second` });
    } else renderNow.add(m);
  }
  const reportOf = new Map(reportsOf(planned.members ?? []).map((r) => [r.machine, r]));
  // Each configuration is written on its own (the planner already chose what may change this pass).
  await eachBounded(desired, WRITES_IN_FLIGHT, async (d) => {
    const name = d.metadata.name;
    const machine = d.spec.machineRef.name;
    const r = reportOf.get(machine);
    const existing = s.cache.config(name);
    const schedule = s.deps.nio !== "v1" ? undefined : scheduleOf(s, d, existing, renderNow.has(machine), r);
    const w = await applyConfiguration(s, d, existing, renderNow.has(machine), schedule);
    if (w) written.set(name, w);
  });
  for (const machine of plan.remove) {
    const c = s.ours.find((x) => x.spec.machineRef.name === machine)!;
    const deleted = await s.deps.client.delete(NIXOS_CONFIGURATIONS, c.metadata.name, s.namespace, {
      uid: c.metadata.uid!,
    });
    if (deleted) s.log.info("deleted configuration of a departed node", { configuration: c.metadata.name });
  }
  return { requeue };
}

/**
 * The `dayTwoSchedule` to write with a configuration (NIO v1). A spec written now with a new commit waits for NIO to
 * fire a run by itself; any other change of its content is written with the schedule forward, since only a tick runs
 * it; otherwise the node's state decides (see core/nodes/runs.ts scheduleOnChange, scheduleFor).
 */
function scheduleOf(
  s: ClusterScope,
  d: NixosConfiguration,
  existing: NixosConfiguration | undefined,
  renderNow: boolean,
  r: NodeReport | undefined,
): ReturnType<typeof scheduleFor> {
  if (renderNow && existing) {
    return specDrift(existing.spec, d.spec).length ? scheduleOnChange(existing.spec, d.spec) : d.spec.dayTwoSchedule;
  }
  return scheduleFor({
    resting: d.spec.dayTwoSchedule,
    state: r?.state ?? "Pending",
    reason: r?.reason ?? "",
    changedAt: existing && specChangedAt(existing),
    graceMs: runSoonGraceMs(existing?.metadata.generation, existing?.spec.dayTwoSchedule),
    now: s.now,
  });
}

/**
 * Puts back the resting `dayTwoSchedule` of nodes NICO had given `* * * * *` for their step, touching nothing else
 * (NIO v1 only): while the rollout is paused NIO would otherwise run them every minute.
 */
async function restSchedules(
  s: ClusterScope,
  desired: NixosConfiguration[],
  written: Map<string, NixosConfiguration>,
): Promise<void> {
  if (s.deps.nio !== "v1") return;
  for (const d of desired) {
    const existing = s.cache.config(d.metadata.name);
    if (existing?.spec.dayTwoSchedule !== RUN_SOON_SCHEDULE || sameSchedule(RUN_SOON_SCHEDULE, d.spec.dayTwoSchedule)) {
      continue;
    }
    const w = await applyConfiguration(s, d, existing, false, d.spec.dayTwoSchedule);
    if (w) written.set(d.metadata.name, w);
  }
}

/**
 * Departing nodes: configurations of Machines that are no longer members, each down when its Machine was taken
 * out of service or its Node is not Ready; and a control-plane Machine this cluster took out of service whose
 * configuration is gone but that is not released yet or whose Node is still registered, as still leaving (no
 * other control-plane node changes before it has left: its Node, and with it its etcd member, goes once its
 * configuration is gone).
 */
function departingNodes(s: ClusterScope, w: WorkloadView): DepartingNode[] {
  const members = new Set(s.members);
  const nodes = w.api.state === "Available" ? w.nodes : undefined;
  const down = (m: string) =>
    markOf(s.machines.get(m)) !== undefined || (nodes !== undefined && nodes.get(m)?.ready !== "True");
  const out: DepartingNode[] = s.ours.filter((c) => !members.has(c.spec.machineRef.name)).map((c) => ({
    machine: c.spec.machineRef.name,
    plane: planeOfRole(c.metadata.labels?.[ROLE_LABEL]),
    deleting: c.metadata.deletionTimestamp !== undefined,
    ...(down(c.spec.machineRef.name) ? { down: true } : {}),
  }));
  const releasing = new Set(stillReleasing(s));
  const configured = new Set(s.ours.map((c) => c.spec.machineRef.name));
  for (const [name, m] of s.machines) {
    const mark = markOf(m)?.mark;
    if (mark?.cluster !== s.name || mark.plane !== "controlPlane" || members.has(name) || configured.has(name)) {
      continue;
    }
    if (releasing.has(name) || nodes?.has(name)) {
      out.push({ machine: name, plane: "controlPlane", deleting: true, down: true });
    }
  }
  return out;
}

/** Departed nodes this cluster still claims although their configuration is gone (not released yet). */
function stillReleasing(s: ClusterScope): string[] {
  const members = new Set(s.members);
  const busy = new Set(s.ours.map((c) => c.spec.machineRef.name));
  return s.cache.machines.filter((m) =>
    m.metadata.labels?.[CLUSTER_LABEL] === s.name && !members.has(m.metadata.name) && !busy.has(m.metadata.name)
  ).map((m) => m.metadata.name);
}

/** Why the rollout must wait for the workload cluster: its kubeconfig exists but its API cannot be read. */
function workloadHold(w: WorkloadView): string | undefined {
  if (w.disabled || !w.hasKubeconfig) return undefined;
  if (w.api.state === "Available" && w.nodes) return undefined;
  return `the workload API cannot be read (${w.api.message}); no node is changed or removed meanwhile, ` +
    "except toward a newer spec on a node whose change came just before the outage";
}
