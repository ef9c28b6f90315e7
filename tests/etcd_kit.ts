/** What the etcd scenario tests share: hosts, a watcher of the scenario's etcd, NICO's etcd Events. */
import assert from "node:assert/strict";
import type { KubernetesCluster } from "../crds/kubernetescluster.ts";
import type { KubeObject } from "../lib/kube/client.ts";
import { EVENTS } from "../lib/kube/resources.ts";
import { condition, type Scenario } from "../testing/scenario.ts";
import { type EtcdSample, type EtcdWatch, watchEtcd } from "../testing/etcd-watch.ts";
import { etcdClientUrl } from "../testing/etcd.ts";
import { readUntil } from "../testing/helpers.ts";

/** The client URLs of the scenario's Machines 127.0.<block>.2 … (as testing/scenario.ts numbers them). */
export function endpoints(block: number, count: number): string[] {
  return Array.from({ length: count }, (_, i) => etcdClientUrl(`127.0.${block}.${i + 2}`));
}

/** A watcher of cluster c's etcd, with its own client certificate from the etcd CA the hosts use. */
export async function etcdWatcher(s: Scenario, block: number, count: number) {
  const ca = s.workloads.etcd.ca(s.ns, "c");
  if (!ca) throw new Error("the simulated hosts run no etcd for cluster c");
  return await watchEtcd(ca, () => endpoints(block, count));
}

/** Ready at the current generation, up to date, and etcd seen healthy with `members` voting members. */
export const etcdSettled = (members: number) => (c: KubernetesCluster) =>
  c.status?.observedGeneration === c.metadata.generation && c.status?.phase === "Ready" &&
  condition(c, "UpToDate")?.status === "True" && condition(c, "EtcdHealthy")?.reason === "Healthy" &&
  c.status?.etcd?.voters === members && c.status.etcd.healthyVoters === members &&
  c.status.etcd.members.length === members;

/** NICO's etcd Events in the scenario's namespace, oldest first, with when each was posted (ms). */
export async function etcdEvents(s: Scenario): Promise<{ reason: string; message: string; at: number }[]> {
  type Event = KubeObject & { reason?: string; note?: string; eventTime?: string };
  const items = (await s.client.list<Event>(EVENTS, { namespace: s.ns })).items;
  return items.filter((e) => e.reason?.startsWith("Etcd"))
    .sort((a, b) => (a.eventTime ?? "").localeCompare(b.eventTime ?? ""))
    .map((e) => ({ reason: e.reason!, message: e.note ?? "", at: Date.parse(e.eventTime ?? "") }));
}

/**
 * NICO's etcd Events once `ok` holds of them: an Event is posted beside the status it explains and may land after
 * it, so a test that saw the status waits for the Event, and fails naming the Events there were.
 */
export async function etcdEventsWhen(
  s: Scenario,
  what: string,
  ok: (events: Awaited<ReturnType<typeof etcdEvents>>) => boolean,
  timeoutMs = 30_000,
): Promise<Awaited<ReturnType<typeof etcdEvents>>> {
  const { value, held } = await readUntil(what, () => etcdEvents(s), ok, timeoutMs);
  assert.ok(held, `${what}: not among NICO's etcd Events within ${timeoutMs / 1000} s: ${JSON.stringify(value)}`);
  return value!;
}

/** The watcher's last sample taken at or before `t` (ms). */
export function sampleBefore(w: EtcdWatch, t: number): EtcdSample | undefined {
  return w.samples.filter((x) => x.at <= t).pop();
}

/**
 * The watcher never saw fewer running voters than a majority (members that answered; an election under way, where
 * running members name no leader for a moment, loses no quorum), in the looks where every member answered in time or
 * refused; and at least half its looks were such (a loaded machine may slow some, not blind the witness).
 */
export async function assertNeverBelowQuorum(w: EtcdWatch, s?: Scenario): Promise<void> {
  const conclusive = w.samples.filter((x) => !x.inconclusive).length;
  assert.ok(conclusive >= w.samples.length / 2, `only ${conclusive} of ${w.samples.length} looks were conclusive`);
  const below = w.belowQuorum();
  // Each look below quorum with who was down, so a failure says which steps overlapped.
  const down = below.map((x) =>
    `${new Date(x.from).toISOString()}–${new Date(x.at).toISOString()} ${
      x.members.filter((m) => !m.learner && !m.running).map((m) => m.name || m.id).join("+")
    } down of ${x.members.filter((m) => !m.learner).map((m) => `${m.name || m.id} (${m.id}: ${m.answer})`).join(", ")}`
  );
  // And the simulated hosts' switch stops in the 10 s before each (which switch took a member down).
  const stops = (s?.workloads.etcd.stops ?? []).filter((x) => below.some((b) => b.at - x.at < 10_000 && b.at >= x.at))
    .map((x) => `${x.machine} stopped for a switch at ${new Date(x.at).toISOString()}`);
  // And NICO's etcd Events then (a member removed or leadership moved while the look was under way).
  const told = below.length && s
    ? (await etcdEvents(s)).filter((e) => below.some((b) => b.at - e.at < 10_000 && b.at >= e.at - 1_000))
      .map((e) => `${e.reason} at ${new Date(e.at).toISOString()}: ${e.message}`)
    : [];
  const why = [...down, ...stops, ...told].join("; ");
  assert.deepEqual(below.map((x) => `${x.runningVoters}/${x.voters}`), [], `never below quorum: ${why}`);
}
