/**
 * A control-plane scale-down never costs etcd quorum, on real etcd members
 * (testing/sim-etcd.ts) with an independent watcher reading etcd itself
 * (testing/etcd-watch.ts): 5 → 3, then 3 → 1, with a worker whose
 * `cluster.nix` changes too (under `WorkersFirst` the control plane waits
 * for it, which once let the removals run ahead of the staying node's
 * switch: 3 → 2 voters, then a switch of one of the two). Members join as
 * learners (k3s) on one NIO generation and as voters at once (kubeadm) on
 * the other. The watcher never sees fewer running voters than a majority
 * (a look that catches an election, running members naming no leader for a
 * moment, loses no quorum), no switch stops a leader, the staying node
 * switched with three members, and each leaver's member is removed by NICO.
 */
import assert from "node:assert/strict";
import { KUBERNETES_CLUSTERS } from "../../crds/kubernetescluster.ts";
import type { NioGeneration } from "../../core/contract/nio.ts";
import { sharedControlPlane } from "../../testing/helpers.ts";
import { startScenario } from "../../testing/scenario.ts";
import { ETCD_JOIN_ANNOTATION } from "../../testing/sim-etcd.ts";
import type { EtcdWatch } from "../../testing/etcd-watch.ts";
import { assertNeverBelowQuorum, etcdEvents, etcdSettled, etcdWatcher } from "../etcd_kit.ts";

const env = sharedControlPlane();
const CP = ["cp-1", "cp-2", "cp-3", "cp-4", "cp-5"];

/** The members the watcher saw last, by name, sorted. */
const names = (w: EtcdWatch) => (w.last()?.members ?? []).map((m) => m.name || `unstarted ${m.id}`).sort();

const CASES: { generation: NioGeneration; join: "learner" | "voter" }[] = [
  { generation: "v1", join: "learner" },
  { generation: "older", join: "voter" },
];

for (const { generation, join } of CASES) {
  Deno.test({
    name: `NIO ${generation}, members join as ${join}s: 5 → 3 → 1 keeps etcd's quorum at every look`,
    sanitizeResources: false,
    sanitizeOps: false,
    fn: async () => {
      const block = generation === "v1" ? 150 : 151;
      await using s = await startScenario(await env.get(), `etcd-down-${generation}`, { hostBlock: block, generation });
      let watch: EtcdWatch | undefined;
      try {
        const annotations = Object.fromEntries(CP.map((m) => [m, { [ETCD_JOIN_ANNOTATION]: join }]));
        await s.machines([...CP, "w-1"], join === "voter" ? annotations : {});
        await s.discovered([...CP, "w-1"]);
        const spec = (n: number) => ({
          gitRepo: "https://git.example.test/v1.git",
          controlPlane: { machines: CP.slice(0, n) },
          dataPlane: { machines: ["w-1"] },
          // Voters join one at a time, as kubeadm's do: parallel adds of unstarted voters can leave etcd leaderless.
          ...(join === "voter" ? { rollout: { provisioning: "BootstrapFirst" } } : {}),
        });
        await s.client.create(KUBERNETES_CLUSTERS, { metadata: { name: "c", namespace: s.ns }, spec: spec(5) });
        await s.until("Ready, etcd of 5 healthy", etcdSettled(5), 240_000);
        await s.settled();
        watch = await etcdWatcher(s, block, CP.length);
        const w = watch;
        const stopsBefore = s.workloads.etcd.stops.length;

        await s.client.mergePatch(KUBERNETES_CLUSTERS, "c", s.ns, { spec: spec(3) });
        await s.until("Ready, etcd of 3 healthy", etcdSettled(3), 240_000);
        await s.settled();
        assert.deepEqual(names(w), CP.slice(0, 3), "after 5 → 3: the leavers' members are gone");

        const before31 = Date.now();
        await s.client.mergePatch(KUBERNETES_CLUSTERS, "c", s.ns, { spec: spec(1) });
        await s.until("Ready, etcd of 1 healthy", etcdSettled(1), 240_000);
        await s.settled();
        assert.deepEqual(names(w), ["cp-1"], "after 3 → 1: cp-1's member alone");
        await w.stop();
        await assertNeverBelowQuorum(w, s);

        // cp-1's cluster.nix changed with 3 → 1: it switched while its two peers' members were still there.
        const cp1 = s.workloads.etcd.stops.slice(stopsBefore).filter((x) => x.machine === "cp-1" && x.at > before31);
        assert.equal(cp1.length, 1, `cp-1 switched once for 3 → 1: ${JSON.stringify(cp1)}`);
        const at = w.samples.filter((x) => x.at <= cp1[0]!.at && !x.inconclusive).pop();
        assert.equal(at?.voters, 3, `cp-1 switched with three voters: ${JSON.stringify(at)}`);
        assert.deepEqual(s.workloads.etcd.stops.slice(stopsBefore).filter((x) => x.leader), [], "no leader stopped");

        const removed = (await etcdEvents(s)).filter((e) => e.reason === "EtcdMemberRemoved").map((e) => e.message);
        for (const m of ["cp-2", "cp-3", "cp-4", "cp-5"]) {
          assert.ok(removed.some((x) => x.includes(` of ${m}: ${m} leaves the control plane`)), removed.join("\n"));
        }
        const c = await s.cluster();
        assert.match(c?.status?.etcd?.counted ?? "", /^1\/1 healthy voting members \(quorum 1\): cp-1$/);
      } finally {
        await watch?.stop();
      }
    },
  });
}
