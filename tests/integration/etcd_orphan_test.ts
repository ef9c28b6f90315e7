/**
 * etcd members no node stands for, on real etcd (testing/sim-etcd.ts) with an
 * independent watcher: a join that added its member and never started it is
 * removed by NICO past the startup timeout, with an Event naming it, while
 * quorum holds; and a flake without the etcd contract (no etcd NICO can
 * reach) still rolls out on the Node-based rules, saying why it cannot see
 * etcd (both NIO generations).
 */
import assert from "node:assert/strict";
import { KUBERNETES_CLUSTERS } from "../../crds/kubernetescluster.ts";
import type { NioGeneration } from "../../core/contract/nio.ts";
import { sharedControlPlane } from "../../testing/helpers.ts";
import { condition, startScenario } from "../../testing/scenario.ts";
import { ETCD_JOIN_ANNOTATION } from "../../testing/sim-etcd.ts";
import { assertNeverBelowQuorum, etcdEvents, etcdSettled, etcdWatcher } from "../etcd_kit.ts";
import { settled } from "../remediation_kit.ts";

const env = sharedControlPlane();

Deno.test({
  name: "a failed join's member (added, never started) is removed past the startup timeout, with an Event",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const block = 63;
    await using s = await startScenario(await env.get(), "etcd-orphan", { hostBlock: block });
    const watch = { current: undefined as Awaited<ReturnType<typeof etcdWatcher>> | undefined };
    try {
      await s.machines(["cp-1", "cp-2", "cp-3"]);
      await s.machines(["cp-4"], { "cp-4": { [ETCD_JOIN_ANNOTATION]: "fail" } });
      const spec = (cp: string[]) => ({
        gitRepo: "https://git.example.test/v1.git",
        controlPlane: { machines: cp },
        rollout: { nodeTimeout: "20s" },
      });
      await s.client.create(KUBERNETES_CLUSTERS, {
        metadata: { name: "c", namespace: s.ns },
        spec: spec(["cp-1", "cp-2", "cp-3"]),
      });
      await s.until("Ready, etcd of 3 healthy", etcdSettled(3), 120_000);
      watch.current = await etcdWatcher(s, block, 4);
      const w = watch.current;
      await s.client.mergePatch(KUBERNETES_CLUSTERS, "c", s.ns, { spec: spec(["cp-1", "cp-2", "cp-3", "cp-4"]) });
      const unstarted = () => w.samples.some((x) => x.members.some((m) => !m.name));
      await s.until("the failed join's member seen", () => unstarted(), 60_000);
      await s.until(
        "its member removed",
        () => w.last()?.members.length === 3 && !w.last()!.members.some((m) => !m.name),
        90_000,
      );
      // k3s retries a failed join, adding a member per attempt: a slow run can
      // leave more than one unstarted member, each removed with its own Event.
      const removed = (await etcdEvents(s)).filter((e) => e.reason === "EtcdMemberRemoved");
      assert.ok(removed.length >= 1, JSON.stringify(removed));
      for (const e of removed) {
        assert.match(e.message, /removed etcd member unstarted member \d+ of cp-4: .* never started \(a failed join\)/);
      }
      assert.deepEqual(w.last()!.members.map((m) => m.name).sort(), ["cp-1", "cp-2", "cp-3"]);
      await w.stop();
      await assertNeverBelowQuorum(w, s);
      // The user takes the broken Machine out: the cluster is whole again.
      await s.client.mergePatch(KUBERNETES_CLUSTERS, "c", s.ns, { spec: spec(["cp-1", "cp-2", "cp-3"]) });
      await s.until("Ready again, etcd of 3", etcdSettled(3), 120_000);
    } finally {
      await watch.current?.stop();
    }
  },
});

for (const generation of ["v1", "older"] as NioGeneration[]) {
  Deno.test({
    name:
      `NIO ${generation}: a flake without the etcd contract still rolls out; EtcdHealthy says why NICO cannot see etcd`,
    sanitizeResources: false,
    sanitizeOps: false,
    fn: async () => {
      await using s = await startScenario(await env.get(), `etcd-none-${generation}`, {
        hostBlock: generation === "v1" ? 64 : 65,
        generation,
        etcd: "none",
      });
      await s.createCluster({
        gitRepo: "https://git.example.test/v1.git",
        controlPlane: { machines: ["cp-1", "cp-2", "cp-3"] },
        dataPlane: { machines: ["w-1"] },
      });
      await s.until("Ready", settled, 120_000);
      await s.client.mergePatch(KUBERNETES_CLUSTERS, "c", s.ns, {
        spec: { gitRepo: "https://git.example.test/v2.git" },
      });
      const done = await s.until("Ready on v2", (c) =>
        settled(c) && c.status?.revision === undefined &&
        c.metadata.generation === c.status?.observedGeneration, 120_000);
      const e = condition(done, "EtcdHealthy");
      assert.equal(`${e?.status} ${e?.reason}`, "Unknown EtcdUnreachable");
      assert.match(
        e?.message ?? "",
        /no member answers: etcd https:\/\/127\.0\.\d+\.\d+:2379 cluster\/member\/list: .*; the rollout keeps to the Node-based rules/,
      );
      assert.equal(done.status?.etcd, undefined);
      assert.equal(done.status?.rollout?.etcdHeld, undefined);
      assert.deepEqual(await etcdEvents(s), [], "no membership change without etcd");
    },
  });
}
