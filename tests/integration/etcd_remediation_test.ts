/**
 * A dead member's remediation never below quorum, on real etcd members with
 * an independent watcher reading etcd itself: a control plane of three by
 * selector with spares (cp-4, cp-5) and remediation on; cp-2's member stops
 * and its Node goes NotReady. etcd admits no new member while a voter does
 * not answer, so NICO removes cp-2's dead member first (an Event), before
 * cp-4's member is added, before cp-2's configuration goes and before any
 * live member restarts for the new member list (3 → 2 → 3); the watcher
 * never sees fewer healthy voters than a majority. Then two of three members are dead in
 * etcd while only one Node is NotReady (a Ready Node on a dead member): the
 * Node count alone would replace one, etcd's count refuses, and
 * `Remediating` and a RemediationRefused Event say why.
 */
import assert from "node:assert/strict";
import { CLUSTER_LABEL, REMEDIATED_ANNOTATION } from "../../core/contract/labels.ts";
import { eventually, sharedControlPlane } from "../../testing/helpers.ts";
import { condition, type Scenario, startScenario } from "../../testing/scenario.ts";
import { changingSwitches, switchWindows } from "../../testing/switches.ts";
import type { EtcdWatch } from "../../testing/etcd-watch.ts";
import { etcdPeerUrl } from "../../testing/etcd.ts";
import { machineAddress } from "../../core/contract/nio.ts";
import { assertNeverBelowQuorum, etcdEvents, etcdSettled, etcdWatcher } from "../etcd_kit.ts";
import { controlPlaneCluster, killKubelet, machineOf, remediationEvents, settled } from "../remediation_kit.ts";

const env = sharedControlPlane();
const POOL = ["cp-1", "cp-2", "cp-3", "cp-4", "cp-5"];
const names = (w: EtcdWatch) => (w.last()?.members ?? []).map((m) => m.name || `unstarted ${m.id}`).sort();

/** cp-1 … cp-3 by selector, cp-4 and cp-5 free spares, control-plane remediation on; Ready with etcd of 3. */
async function createCluster(s: Scenario): Promise<void> {
  await controlPlaneCluster(s, POOL, (c) => settled(c) && etcdSettled(3)(c));
  await s.settled();
}

/** cp-2's member and Node die; NICO replaces it (3 → 2 → 3), the watcher `w` never below quorum. */
async function healsOne(s: Scenario, w: EtcdWatch): Promise<void> {
  const died = Date.now();
  await s.workloads.etcd.kill(s.ns, "c", "cp-2");
  await killKubelet(s, "cp-2");
  await s.until(
    "cp-4 in cp-2's place, etcd of 3 healthy",
    (c) =>
      settled(c) && etcdSettled(3)(c) &&
      (c.status?.controlPlane?.readyMachines ?? []).join() === "cp-1,cp-3,cp-4",
    180_000,
  );
  await s.settled();
  assert.deepEqual(names(w), ["cp-1", "cp-3", "cp-4"], "etcd's members after the remediation");
  await assertNeverBelowQuorum(w);
  // Remove first: cp-4's member never sat in a member list beside cp-2's dead member. It is known by its peer URL,
  // on its Machine's address as the simulated host gives it (testing/sim-etcd.ts).
  const cp4 = etcdPeerUrl(machineAddress(await machineOf(s, "cp-4")) ?? "cp-4");
  const both = w.samples.find((x) =>
    x.at > died && x.members.some((m) => m.name === "cp-2") && x.members.some((m) => m.peer === cp4)
  );
  assert.equal(both, undefined, "cp-4's member was added while cp-2's dead member still voted");
  assert.ok(w.samples.some((x) => x.at > died && x.members.length === 2), "the watcher never saw the two left");

  const removed = (await etcdEvents(s)).filter((e) => e.reason === "EtcdMemberRemoved");
  assert.equal(removed.length, 1, JSON.stringify(removed));
  assert.match(
    removed[0]!.message,
    /^removed etcd member cp-2 \(\d+\) of cp-2: cp-2 leaves the control plane and its member does not answer/,
  );
  const gone = removed[0]!.at;
  const joined = w.samples.find((x) => x.at > died && x.members.some((m) => m.peer === cp4));
  assert.ok(joined && joined.at >= gone, "cp-4 joined before cp-2's member was removed");
  const windows = changingSwitches(switchWindows(s.nio.history)).filter((x) => x.start >= died);
  const removal = windows.find((x) => x.config === "c.cp-2" && x.removal);
  assert.ok(removal, "cp-2's configuration was never removed");
  assert.ok(removal.start >= gone, "cp-2's configuration went before its etcd member");
  const restarts = s.workloads.etcd.stops.filter((x) =>
    x.cluster === `${s.ns}/c` && x.at >= died &&
    (x.machine === "cp-1" || x.machine === "cp-3")
  );
  const live = windows.filter((x) => x.config === "c.cp-1" || x.config === "c.cp-3");
  assert.ok(
    restarts.length >= 2,
    `the live members never took the new member list: ${JSON.stringify(restarts)}; their switches after cp-2 died: ` +
      JSON.stringify(live.map((x) => ({ ...x, start: x.start - died, end: (x.end ?? died) - died }))) +
      `; cp-2's member removed at ${gone - died} ms`,
  );
  for (const r of restarts) assert.ok(r.at >= gone, `${r.machine} restarted while cp-2's dead member still voted`);
  const cp2 = await machineOf(s, "cp-2");
  assert.match(cp2.metadata.annotations?.[REMEDIATED_ANNOTATION] ?? "", /^c\/control-plane at \S+: NodeNotReady/);
}

/** Then cp-3 dies, and cp-4's member under a Ready Node: etcd has lost quorum and NICO replaces none. */
async function refusesBelowQuorum(s: Scenario): Promise<void> {
  // Two of three dead in etcd, one Node NotReady: cp-3's member and Node die, cp-4's member dies under a
  // Ready Node. The Nodes alone count 2 of 3 healthy; etcd counts 1 of 3, and NICO replaces none.
  await s.workloads.etcd.kill(s.ns, "c", "cp-4");
  await s.workloads.etcd.kill(s.ns, "c", "cp-3");
  await killKubelet(s, "cp-3");
  // etcd 3.7 lists its members only with a leader: NICO sees 1/3 healthy until the last member steps down,
  // then members that answer their status without a leader. Either way quorum is lost and none is replaced.
  const why =
    /cp-3 \(NodeNotReady: .*\): .*etcd ha(s no healthy majority now|s lost quorum), so no new member can join.*NICO replaces none/;
  const refused = await s.until(
    "QuorumWouldBeLost from etcd's count",
    (c) =>
      condition(c, "Remediating")?.reason === "QuorumWouldBeLost" && why.test(condition(c, "Remediating")!.message),
    90_000,
  );
  assert.equal(condition(refused, "Remediating")?.status, "False");
  console.log(`refused: ${condition(refused, "Remediating")!.message}`);
  await s.settled();
  assert.equal((await machineOf(s, "cp-3")).metadata.annotations?.[REMEDIATED_ANNOTATION], undefined);
  assert.equal((await machineOf(s, "cp-5")).metadata.labels?.[CLUSTER_LABEL], undefined, "the spare stays free");
  const refusals = (await remediationEvents(s)).filter((e) => e.reason === "RemediationRefused");
  assert.ok(refusals.some((e) => why.test(e.message)), JSON.stringify(refusals));
  assert.equal(`${condition(await s.cluster(), "EtcdHealthy")?.status}`, "False");
}

Deno.test({
  name: "a dead etcd member of three is replaced never below quorum; a second one etcd could not survive is refused",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const block = 68;
    await using s = await startScenario(await env.get(), "etcd-heal", { hostBlock: block });
    let watch: EtcdWatch | undefined;
    try {
      await createCluster(s);
      watch = await etcdWatcher(s, block, POOL.length);
      const w = watch;
      await eventually(
        "the watcher saw cp-1..3",
        () => Promise.resolve(names(w).join() === "cp-1,cp-2,cp-3"),
        30_000,
        100,
      );
      await healsOne(s, w);
      await refusesBelowQuorum(s);
    } finally {
      await watch?.stop();
    }
  },
});
