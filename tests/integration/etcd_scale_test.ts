/**
 * NICO keeps etcd's membership, on real etcd members (the simulated hosts,
 * testing/sim-etcd.ts) with an independent watcher reading etcd itself
 * (testing/etcd-watch.ts): a control plane scaled 3 → 5 → 3 has exactly its
 * nodes' members after each step and never fewer healthy voters than a
 * majority; every member a switch stopped had lost leadership first; the
 * members of the nodes that left are removed by NICO (kubeadm-like hosts
 * leave them behind), each with an Event.
 */
import assert from "node:assert/strict";
import { KUBERNETES_CLUSTERS } from "../../crds/kubernetescluster.ts";
import type { NioGeneration } from "../../core/contract/nio.ts";
import { sharedControlPlane } from "../../testing/helpers.ts";
import { startScenario } from "../../testing/scenario.ts";
import type { EtcdWatch } from "../../testing/etcd-watch.ts";
import { assertNeverBelowQuorum, etcdEvents, etcdSettled, etcdWatcher } from "../etcd_kit.ts";

const env = sharedControlPlane();
const CP = ["cp-1", "cp-2", "cp-3", "cp-4", "cp-5"];

/** The members the watcher saw last, by name, sorted. */
const names = (w: EtcdWatch) => (w.last()?.members ?? []).map((m) => m.name || `unstarted ${m.id}`).sort();

for (const generation of ["v1", "older"] as NioGeneration[]) {
  Deno.test({
    name: `NIO ${generation}: scale 3 → 5 → 3, etcd's members right at every step, leadership moved before a switch`,
    sanitizeResources: false,
    sanitizeOps: false,
    fn: async () => {
      const block = generation === "v1" ? 61 : 62;
      await using s = await startScenario(await env.get(), `etcd-scale-${generation}`, {
        hostBlock: block,
        generation,
      });
      let watch: EtcdWatch | undefined;
      try {
        await s.machines(CP);
        const spec = (n: number) => ({
          gitRepo: "https://git.example.test/v1.git",
          controlPlane: { machines: CP.slice(0, n) },
        });
        await s.client.create(KUBERNETES_CLUSTERS, { metadata: { name: "c", namespace: s.ns }, spec: spec(3) });
        await s.until("Ready, etcd of 3 healthy", etcdSettled(3), 120_000);
        watch = await etcdWatcher(s, block, CP.length);
        const w = watch;
        const seen = () => w.samples.length;
        const before = seen();
        await s.client.mergePatch(KUBERNETES_CLUSTERS, "c", s.ns, { spec: spec(5) });
        await s.until("Ready, etcd of 5 healthy", etcdSettled(5), 240_000);
        await s.settled();
        assert.ok(seen() > before, "the watcher saw the scale-up");
        assert.deepEqual(names(w), CP, "after 3 → 5: one member per node");
        await s.client.mergePatch(KUBERNETES_CLUSTERS, "c", s.ns, { spec: spec(3) });
        await s.until("Ready, etcd of 3 healthy", etcdSettled(3), 240_000);
        await s.settled();
        assert.deepEqual(names(w), CP.slice(0, 3), "after 5 → 3: the leavers' members are gone");
        await w.stop();
        await assertNeverBelowQuorum(w, s);
        const leaders = s.workloads.etcd.stops.filter((x) => x.leader);
        assert.deepEqual(leaders, [], "a switch stopped a member that led");
        assert.ok(s.workloads.etcd.stops.length >= 3, `switches seen: ${s.workloads.etcd.stops.length}`);
        const events = await etcdEvents(s);
        const removed = events.filter((e) => e.reason === "EtcdMemberRemoved").map((e) => e.message);
        assert.equal(removed.length, 2, JSON.stringify(events));
        assert.ok(
          removed.some((m) => /cp-4 \(\d+\) of cp-4: cp-4 leaves the control plane/.test(m)),
          removed.join("\n"),
        );
        assert.ok(removed.some((m) => /cp-5 \(\d+\) of cp-5/.test(m)), removed.join("\n"));
        assert.ok(events.some((e) => e.reason === "EtcdLeaderMoved"), "leadership was never moved");
        const c = await s.cluster();
        assert.match(c?.status?.etcd?.counted ?? "", /^3\/3 healthy voting members \(quorum 2\): cp-1, cp-2, cp-3$/);
      } finally {
        await watch?.stop();
      }
    },
  });
}
