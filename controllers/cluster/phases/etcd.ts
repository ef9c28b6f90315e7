/**
 * Phase: etcd. {@link observeEtcd} opens (or keeps) the cluster's etcd
 * observer and reads its last snapshot, never waiting on etcd;
 * {@link etcdBeforeChange}, a step of its own in pass.ts, runs once the
 * rollout plan is made and drains have held what they hold: it plans this pass's membership change
 * (core/etcd/membership.ts) for the plan's control-plane updates and
 * removals, carries out the one action (a leadership move through the
 * leader, a member removed through another healthy member) with an Event,
 * and holds back the nodes that wait for etcd (core/rollout/etcdhold.ts).
 * Where NICO does not see etcd, nothing here changes the plan: the
 * Node-based rules stand.
 *
 * @module
 */
import { durationMs } from "../../../crds/kubernetescluster.ts";
import { errorMessage } from "../../../lib/runtime/log.ts";
import { kubeconfigSecret } from "../../../core/contract/names.ts";
import { ROLE_LABEL } from "../../../core/contract/labels.ts";
import { ETCD_CLIENT_PORT, nodeAddress } from "../../../core/render/desired.ts";
import { etcdSight } from "../../../core/etcd/health.ts";
import { memberOn, quorumFacts, urlHost } from "../../../core/etcd/members.ts";
import {
  type EtcdNode,
  type MembershipAction,
  type MembershipPlan,
  planMembership,
} from "../../../core/etcd/membership.ts";
import { etcdTargets, holdForEtcd, unseenHolds } from "../../../core/rollout/etcdhold.ts";
import type { RolloutPlan } from "../../../core/rollout/plan.ts";
import { EtcdObserver } from "../etcd/observer.ts";
import { etcdClientCertificate } from "../etcd/trust.ts";
import type { ClusterScope } from "../scope.ts";
import type { EtcdView, Identity } from "../view.ts";
import { type Requeue, soonest } from "../requeue.ts";
import type { NodeReport } from "../../../core/nodes/readiness.ts";
import { postEvent } from "../../events.ts";

/** Every control-plane node of the cluster, with its address (the host its etcd member's peer URL names). */
function controlPlaneNodes(s: ClusterScope): EtcdNode[] {
  const names = new Set(s.selection.controlPlane.members);
  for (const c of s.ours) if (c.metadata.labels?.[ROLE_LABEL] === "control-plane") names.add(c.spec.machineRef.name);
  return [...names].sort().map((machine) => ({ machine, address: nodeAddress(s.machines.get(machine), machine) }));
}

/**
 * Opens or keeps the cluster's etcd observer and reads its last snapshot (never waits on etcd). Undefined when
 * NICO looks inside no workload cluster (`--workload-connections=false`): then, as with the workload conditions,
 * the cluster carries no EtcdHealthy at all.
 */
export async function observeEtcd(s: ClusterScope, identity: Identity): Promise<EtcdView | undefined> {
  const nodes = controlPlaneNodes(s);
  const off = (why: string): EtcdView => {
    if (s.memory.etcd) void s.memory.etcd.close().catch(() => {});
    s.memory.etcd = undefined;
    return { sight: { kind: "off", why }, nodes };
  };
  const watching = s.deps.etcd;
  if (!watching) return void off("NICO watches no workload clusters (--workload-connections=false), nor their etcd");
  const ca = identity.etcd?.ca;
  if (!ca) return off(identity.etcd?.none ?? "the cluster has no etcd CA");
  if (!s.cache.secret(kubeconfigSecret(s.name))) {
    return off("etcd is looked at once the bootstrap node is up (its kubeconfig is issued)");
  }
  let obs = s.memory.etcd;
  if (obs && obs.caPem !== ca.certPem) {
    await obs.close();
    obs = undefined;
  }
  if (!obs) {
    obs = new EtcdObserver(ca, await etcdClientCertificate(ca), { ...watching, key: s.memory.key, log: s.log });
    s.memory.etcd = obs;
  }
  const port = s.spec.etcd?.clientPort ?? ETCD_CLIENT_PORT;
  obs.watch(
    nodes.map((n) => ({ host: urlHost(`https://${bracket(n.address)}`) ?? n.address, url: url(n.address, port) })),
  );
  const staleMs = 3 * watching.intervalMs + 4 * watching.timeoutMs;
  return { sight: etcdSight(obs.snapshot(), s.now, Math.max(staleMs, 4 * watching.intervalMs)), nodes };
}

/**
 * Asks the observer for a fresh look when a control-plane node waits for etcd to count it (core/nodes/joined.ts):
 * the next control-plane step waits for that look, so it should not wait for the observer's interval.
 */
function lookForWaiting(s: ClusterScope, reports: readonly NodeReport[]): Requeue | undefined {
  const obs = s.memory.etcd;
  if (!obs) return undefined;
  // A control-plane node that applied since the last look began (a member joined or restarted): look again now, so
  // EtcdHealthy and Ready never disagree for longer than one look.
  const since = obs.snapshot()?.since;
  const applied = reports.filter((r) =>
    r.plane === "controlPlane" && r.appliedAt !== undefined && since !== undefined && r.appliedAt > since
  );
  const waiting = reports.filter((r) => r.state === "Joining" && r.reason === "EtcdMemberNotReady");
  if (!waiting.length && !applied.length) return undefined;
  obs.refresh();
  const names = [...new Set([...waiting, ...applied].map((r) => r.machine))].join(", ");
  return { after: 2_000, why: `etcd is to count ${names}` };
}

const bracket = (h: string) => (h.includes(":") && !h.startsWith("[") ? `[${h}]` : h);
const url = (host: string, port: number) => `https://${bracket(host)}:${port}`;

/** What {@link etcdBeforeChange} answers: the plan with etcd's holds, the membership plan, when to look again. */
export interface EtcdOutcome {
  /** The plan with the control-plane steps that wait for etcd held back (none while nodes cannot be rendered). */
  plan: RolloutPlan | undefined;
  membership?: MembershipPlan | undefined;
  requeue?: Requeue | undefined;
}

/** How long a member may stay unstarted (or a learner) before it is an orphan: the startup timeout. */
function startupTimeoutMs(s: ClusterScope): number {
  const t = s.spec.controlPlane.remediation?.nodeStartupTimeout;
  const ms = t ? durationMs(t) : 0;
  return ms > 0 ? ms : s.timeoutMs;
}

/**
 * Step of the pass (pass.ts), after the drains and before the writes: plans this pass's etcd membership change for
 * `plan` (the drains already held what they hold), carries out its one action (a leadership move, a member
 * removed), and holds back the control-plane steps that wait for etcd. While etcd runs but NICO does not see its
 * members, no control-plane node leaves or joins (core/rollout/etcdhold.ts `unseenHolds`). Paused, the membership
 * is still planned (EtcdHealthy tells it) but nothing is done nor held.
 */
export async function etcdBeforeChange(
  s: ClusterScope,
  plan: RolloutPlan | undefined,
  etcd: EtcdView | undefined,
  reports: readonly NodeReport[],
): Promise<EtcdOutcome> {
  if (!plan) return { plan };
  const out = await changeMembership(s, plan, etcd);
  if (!s.writes.configurations) return { plan, membership: out.membership };
  return { ...out, requeue: soonest(out.requeue, lookForWaiting(s, reports)) };
}

/** Plans and carries out this pass's membership change for `plan`, and holds back what waits for etcd. */
async function changeMembership(
  s: ClusterScope,
  plan: RolloutPlan,
  etcd: EtcdView | undefined,
): Promise<EtcdOutcome> {
  if (!etcd) return { plan };
  const configured = new Set(s.ours.map((c) => c.spec.machineRef.name));
  const targets = etcdTargets(plan, new Set(etcd.nodes.map((n) => n.machine)), configured);
  const voters = s.memory.etcdSeenVoters;
  // Unseen after it was seen: held. Never seen (a flake without the etcd contract): the Node-based rules alone.
  if (etcd.sight.kind === "unreachable" && voters !== undefined) {
    const since = s.memory.etcdUnseenSince ??= s.now.getTime();
    const held = holdForEtcd(plan, unseenHolds(targets, etcd.sight.why, { unseenForMs: +s.now - since, voters }));
    return { plan: held, requeue: { after: 2_000, why: "etcd's members are to be seen again" } };
  }
  if (etcd.sight.kind !== "seen") return { plan };
  s.memory.etcdSeenVoters = quorumFacts(etcd.sight.members).voters;
  s.memory.etcdUnseenSince = undefined;
  const { members } = etcd.sight;
  const pending = s.memory.etcdPending;
  for (const id of [...pending.keys()]) {
    if (!members.some((m) => m.id === id && (!m.name || m.isLearner))) pending.delete(id);
  }
  for (const m of members) if ((!m.name || m.isLearner) && !pending.has(m.id)) pending.set(m.id, s.now);
  const membership = planMembership({
    members,
    nodes: etcd.nodes,
    ...targets,
    unstartedSince: pending,
    now: s.now,
    startupTimeoutMs: startupTimeoutMs(s),
  });
  const held = holdForEtcd(plan, membership.holds);
  if (membership.blocked && s.memory.etcdNotes.allow("blocked", "EtcdMembershipBlocked", membership.blocked, +s.now)) {
    postEvent(s.deps.recorder, s.cluster, "EtcdMembershipBlocked", membership.blocked);
  }
  if (!membership.blocked) s.memory.etcdNotes.clear("blocked");
  // A member that has not started is an orphan once its startup timeout is over: look again then, even when
  // nothing else would (a halted or settled cluster is otherwise looked at only rarely).
  const dues = [...pending.values()].map((t) => t.getTime() + startupTimeoutMs(s) - s.now.getTime());
  const orphanLook = dues.length
    ? { after: Math.max(1_000, Math.min(...dues) + 50), why: "an unstarted etcd member's startup timeout" }
    : undefined;
  const a = membership.action;
  if (!a || !s.writes.etcdMembership) return { plan: held, membership, requeue: orphanLook };
  await act(s, a, etcd);
  s.memory.etcd?.refresh();
  return { plan: held, membership, requeue: { after: 1_000, why: "an etcd membership change was made" } };
}

const label = (m: { name: string; id: string }) => (m.name ? `${m.name} (${m.id})` : `unstarted member ${m.id}`);

/** Carries out one membership action through the observer's client, with an Event; a failure is a Warning. */
async function act(s: ClusterScope, a: MembershipAction, etcd: EtcdView): Promise<void> {
  const obs = s.memory.etcd;
  if (!obs || etcd.sight.kind !== "seen") return;
  const members = etcd.sight.members;
  try {
    if (a.kind === "moveLeader") {
      const at = obs.endpointOf(a.from.id);
      if (!at) throw new Error(`no endpoint for the leader ${label(a.from)}`);
      await obs.client.moveLeader(at, a.to.id);
      s.log.info("moved etcd leadership", { from: a.from.name, to: a.to.name });
      const note = `moved etcd leadership from ${label(a.from)} to ${label(a.to)}: ${a.why}`;
      postEvent(s.deps.recorder, s.cluster, "EtcdLeaderMoved", note);
      return;
    }
    // Through another healthy member: the one removed may be the one that answers worst.
    const via = members.filter((m) => m.id !== a.member.id && m.healthy).map((m) => obs.endpointOf(m.id))
      .find((e) => e !== undefined);
    if (!via) throw new Error(`no other healthy member to remove ${label(a.member)} through`);
    await obs.client.removeMember(via, a.member.id);
    const node = etcd.nodes.find((n) => memberOn([a.member], n.address))?.machine;
    s.log.info("removed an etcd member", { member: a.member.name, id: a.member.id, node });
    const note = `removed etcd member ${label(a.member)}${node ? ` of ${node}` : ""}: ${a.why}`;
    postEvent(s.deps.recorder, s.cluster, "EtcdMemberRemoved", note);
    s.memory.etcdPending.delete(a.member.id);
  } catch (err) {
    const what = a.kind === "moveLeader"
      ? `moving etcd leadership off ${label(a.from)}`
      : `removing etcd member ${label(a.member)}`;
    const note = `${what} failed: ${errorMessage(err)}; NICO tries again`;
    s.log.error("etcd membership change failed", { error: errorMessage(err) });
    if (s.memory.etcdNotes.allow("failed", "EtcdMembershipFailed", what, +s.now)) {
      postEvent(s.deps.recorder, s.cluster, "EtcdMembershipFailed", note);
    }
  }
}
