/**
 * The phases of a normal pass, in order, each given what the phases before
 * it produced (its signature says what it needs), and answering what it
 * produced. What has been produced so far is kept in a {@link PassRecord}, so
 * that the status can be computed however the pass ends.
 *
 * Every write of a pass is a step named in {@link runPhases}: the observers
 * (runs, workload, versions, etcd) and the plan write nothing; a restore of
 * etcd (phases/restore.ts: the store, the restore Secret; while it runs the
 * plan is its own, and the drains, etcd's membership change and remediation
 * are not asked), the drains, etcd's membership change, the configurations,
 * the etcd backups (a job of their own off the pass, phases/backup.ts), the
 * releases, the
 * remediation, the kubeconfig, Argo CD and the workload Nodes each write
 * what their own step decided. The runs are gathered once, by the runs
 * step, and handed to whoever needs them.
 *
 * @module
 */
import type { ConditionInput } from "../../core/status/conditions.ts";
import { etcdCondition } from "../../core/status/etcd.ts";
import type { NixosConfiguration } from "../../core/contract/nio.ts";
import type { NodeReport } from "../../core/nodes/readiness.ts";
import { reconcileArgoCd } from "./phases/argocd.ts";
import { reconcileClaims } from "./phases/claims.ts";
import { planConfigurations, type Planned, writeConfigurations } from "./phases/configurations.ts";
import type { RolloutPlan } from "../../core/rollout/plan.ts";
import { type KubeconfigTarget, kubeconfigTarget, reconcileKubeconfig } from "./phases/kubeconfig.ts";
import { reconcileReleases, type ReleasesOutcome } from "./phases/releases.ts";
import { reconcileRemediation, type RemediationOutcome } from "./phases/remediation.ts";
import { observeRuns, type PassRuns } from "./phases/runs.ts";
import { etcdBeforeChange, type EtcdOutcome, observeEtcd } from "./phases/etcd.ts";
import { backupGate, type BackupsOutcome, reconcileBackups } from "./phases/backup.ts";
import { answerKeptRekey, reconcileSecrets } from "./phases/secrets.ts";
import { reconcileRestore, type RestoreOutcome } from "./phases/restore.ts";
import { REKEY_KUBECONFIG_REASON } from "../../core/render/identity.ts";
import { drainBeforeChange, type DrainOutcome, observeWorkload, settleWorkloadNodes } from "./phases/workload.ts";
import { observeVersions, type VersionsView } from "./versions.ts";
import type { Requeue } from "./requeue.ts";
import type { ClusterScope } from "./scope.ts";
import {
  afterWrites,
  type EtcdView,
  gatherMembers,
  type Identity,
  type Member,
  type PassView,
  reportsOf,
  type WorkloadView,
} from "./view.ts";

/** What the phases of a pass produced so far (a phase that threw adds nothing, but what it wrote). */
export interface PassRecord {
  identity?: Identity | undefined;
  /** The members' runs and run reports, gathered once (phases/runs.ts). */
  runs?: PassRuns | undefined;
  workload?: WorkloadView | undefined;
  /** The Kubernetes versions the nodes report and are to be asked for. */
  versions?: VersionsView | undefined;
  /** What the pass sees of etcd. */
  etcd?: EtcdView | undefined;
  /** A restore of etcd asked for or under way: `status.restore`, `Restoring`, the nodes' parts (phases/restore.ts). */
  restore?: RestoreOutcome | undefined;
  /** What the plan decided (it writes nothing). */
  planned?: Planned | undefined;
  /** The drains before the change, and the plan with their holds. */
  drains?: DrainOutcome | undefined;
  /** etcd's membership change before the change, and the plan with etcd's holds: the plan the writes follow. */
  etcdChange?: EtcdOutcome | undefined;
  /** Configurations as the server answered this pass, by name (filled as the writes are answered). */
  written: Map<string, NixosConfiguration>;
  /** The members' facts and reports once the configurations were written (see {@link passMembers}). */
  members?: Member[] | undefined;
  releases?: ReleasesOutcome | undefined;
  remediation?: RemediationOutcome | undefined;
  /** What the kubeconfig is to name (none before the bootstrap node has applied). */
  kubeconfigTarget?: KubeconfigTarget | undefined;
  /** The kubeconfig Secret's name, once it exists. */
  kubeconfig?: string | undefined;
  /** etcd backups: their condition, `status.etcd.backups` (where `spec.etcd.backup` is set). */
  backups?: BackupsOutcome | undefined;
  /** `ArgoCDRegistered`, when NICO registers clusters with Argo CD. */
  argoCd?: ConditionInput | undefined;
}

/** A record of nothing yet. */
export function newRecord(): PassRecord {
  return { written: new Map() };
}

/** What a pass that ran every phase answers: the node reports, and when each phase wishes to look again. */
export interface PassEnd {
  nodes: NodeReport[];
  wishes: (Requeue | undefined)[];
}

/** Runs the phases in order; `rec` receives each one's product as it is made. */
export async function runPhases(s: ClusterScope, rec: PassRecord): Promise<PassEnd> {
  const identity = rec.identity = await reconcileSecrets(s);
  await reconcileClaims(s);
  const runs = rec.runs = await observeRuns(s);
  const workload = rec.workload = observeWorkload(s);
  const versions = rec.versions = observeVersions(s, workload, runs);
  const etcd = rec.etcd = await observeEtcd(s, identity);
  const restore = rec.restore = await reconcileRestore(s, { identity, etcd, view: { workload, runs } });
  const restoring = restore?.plan.active === true;
  const backup = restoring ? undefined : backupGate(s);
  const planned = rec.planned = planConfigurations(s, { identity, workload, runs, versions, etcd, backup, restore });
  const drains = rec.drains = restoring
    ? { plan: planned.plan, draining: new Set<string>() }
    : await drainBeforeChange(s, planned.plan, workload);
  const etcdChange = rec.etcdChange = restoring
    ? { plan: drains.plan }
    : await etcdBeforeChange(s, drains.plan, etcd, reportsOf(planned.members ?? []));
  const wrote = await writeConfigurations(s, planned, etcdChange.plan, rec.written, runs);
  rec.backups = await reconcileBackups(s, etcdChange.plan, etcd, identity, restoring);
  const releases = rec.releases = await reconcileReleases(s);
  const members = passMembers(s, rec);
  const nodes = reportsOf(members);
  if (!planned.blocked && !restoring) rec.remediation = await reconcileRemediation(s, members, workload, etcd);
  const target = rec.kubeconfigTarget = kubeconfigTarget(s, nodes, planned.endpoint);
  const force = identity.rekeyKept ? REKEY_KUBECONFIG_REASON : undefined;
  const kubeconfig = await reconcileKubeconfig(s, target, identity.ca, force);
  rec.kubeconfig = kubeconfig.secret;
  if (identity.rekeyKept) await answerKeptRekey(s, kubeconfig.reissued);
  rec.argoCd = await reconcileArgoCd(s);
  await settleWorkloadNodes(s, nodes, workload, drains.draining);
  const wishes = [
    drains.requeue,
    etcdChange.requeue,
    wrote.requeue,
    releases.requeue,
    rec.remediation?.requeue,
    rec.backups?.requeue,
    restore?.requeue,
  ];
  return { nodes, wishes };
}

/** The rollout plan the pass follows (the planner's, with the drains' and etcd's holds), once both steps ran. */
export function passPlan(rec: PassRecord): RolloutPlan | undefined {
  return rec.etcdChange?.plan;
}

/** The facts node reports are computed from, as far as the pass has them. */
export function viewOf(rec: PassRecord): PassView {
  return {
    workload: rec.workload,
    runs: rec.runs,
    written: rec.written,
    wantedSpec: rec.planned?.wantedSpec ?? new Map(),
    apiServers: rec.versions?.apiServers,
    etcd: rec.etcd,
  };
}

/**
 * The members as of what the pass produced, gathered once (none while nodes cannot be rendered): their facts and
 * reports from when the configurations were planned, gathered again only for a member whose configuration a write
 * of this pass replaced. A pass cut short before it planned gathers them from what it has.
 */
export function passMembers(s: ClusterScope, rec: PassRecord): Member[] {
  if (rec.planned?.blocked) return [];
  const v = viewOf(rec);
  return rec.members ??= rec.planned?.members ? afterWrites(s, v, rec.planned.members) : gatherMembers(s, v);
}

/** The members' reports as of what the pass produced (none while nodes cannot be rendered). */
export function passNodes(s: ClusterScope, rec: PassRecord): NodeReport[] {
  return reportsOf(passMembers(s, rec));
}

/** The conditions the phases added, in the order they ran. */
export function phaseConditions(rec: PassRecord): ConditionInput[] {
  return [
    rec.planned?.pinned.condition,
    rec.releases?.condition,
    rec.remediation?.condition,
    rec.kubeconfigTarget?.condition,
    rec.argoCd,
    rec.etcd && etcdCondition(rec.etcd.sight, rec.etcdChange?.membership),
    rec.backups?.condition,
    rec.restore?.condition,
  ].filter((c) => c !== undefined);
}
