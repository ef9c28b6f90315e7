/**
 * A leader's switch preceded by a leadership move, on real etcd members (the
 * simulated hosts stop a node's member when its switch begins and start it
 * again once applied, as a k3s restart does) with an independent watcher
 * reading etcd itself: a new gitRepo switches every control-plane node, and
 * at the moment each switch began the watcher's latest look saw another
 * member lead; the member that led before the change had leadership moved
 * off it by NICO (an EtcdLeaderMoved Event) before its host switched.
 */
import assert from "node:assert/strict";
import { KUBERNETES_CLUSTERS, type KubernetesCluster } from "../../crds/kubernetescluster.ts";
import type { NioGeneration } from "../../core/contract/nio.ts";
import { eventually, sharedControlPlane } from "../../testing/helpers.ts";
import { condition, startScenario } from "../../testing/scenario.ts";
import type { EtcdWatch } from "../../testing/etcd-watch.ts";
import { assertNeverBelowQuorum, etcdEvents, etcdSettled, etcdWatcher, sampleBefore } from "../etcd_kit.ts";

const env = sharedControlPlane();
const CP = ["cp-1", "cp-2", "cp-3"];
/** How recent the watcher's look before a switch must be to count as what etcd was at that moment. */
const FRESH_MS = 2_000;

for (const generation of ["v1", "older"] as NioGeneration[]) {
  Deno.test({
    name:
      `NIO ${generation}: every control-plane switch begins with another member leading; the leader's is preceded by a move`,
    sanitizeResources: false,
    sanitizeOps: false,
    fn: async () => {
      const block = generation === "v1" ? 66 : 67;
      await using s = await startScenario(await env.get(), `etcd-switch-${generation}`, {
        hostBlock: block,
        generation,
      });
      let watch: EtcdWatch | undefined;
      try {
        await s.machines(CP);
        const spec = (repo: string) => ({
          gitRepo: `https://git.example.test/${repo}.git`,
          controlPlane: { machines: CP },
        });
        await s.client.create(KUBERNETES_CLUSTERS, { metadata: { name: "c", namespace: s.ns }, spec: spec("v1") });
        // Every version of the status during bring-up: Ready never stands beside an EtcdHealthy that says otherwise
        // (a control-plane node counts only by a look at etcd taken after its apply, the look EtcdHealthy says).
        const seen: KubernetesCluster[] = [];
        await s.until("Ready, etcd of 3 healthy", (c) => seen.push(c) && etcdSettled(3)(c), 120_000);
        const split = seen.filter((c) =>
          condition(c, "Ready")?.status === "True" && condition(c, "EtcdHealthy")?.reason !== "Healthy"
        );
        assert.deepEqual(
          split.map((c) => `${condition(c, "EtcdHealthy")?.reason}: ${condition(c, "EtcdHealthy")?.message}`),
          [],
          "Ready beside an EtcdHealthy that is not Healthy",
        );
        await s.settled();
        watch = await etcdWatcher(s, block, CP.length);
        const w = watch;
        const first = await eventually(
          "the watcher saw a leader",
          () => Promise.resolve(w.last()?.leader),
          30_000,
          100,
        );
        const changed = Date.now();
        await s.client.mergePatch(KUBERNETES_CLUSTERS, "c", s.ns, { spec: spec("v2") });
        await s.until("Ready on v2, etcd of 3 healthy", (c) =>
          etcdSettled(3)(c) && c.status?.revision === undefined &&
          c.status?.observedGeneration === c.metadata.generation, 240_000);
        await s.settled();
        await w.stop();

        const stops = s.workloads.etcd.stops.filter((x) => x.cluster === `${s.ns}/c` && x.at >= changed);
        assert.deepEqual(
          [...new Set(stops.map((x) => x.machine))].sort(),
          CP,
          "every node's switch stopped its member",
        );
        const moves = (await etcdEvents(s)).filter((e) => e.reason === "EtcdLeaderMoved" && e.at >= changed - 1_000);
        for (const stop of stops) {
          assert.equal(stop.leader, false, `${stop.machine}'s own status said it led when its switch began`);
          const seen = sampleBefore(w, stop.at);
          assert.ok(seen && stop.at - seen.at <= FRESH_MS, `no fresh look before ${stop.machine}'s switch`);
          assert.ok(seen.leader, `no leader seen before ${stop.machine}'s switch`);
          // A look saw etcd at some moment after it began: a move off the member since then makes it out of date.
          const movedSince = moves.some((e) =>
            e.message.startsWith(`moved etcd leadership from ${stop.machine} `) && e.at >= seen.from && e.at <= stop.at
          );
          assert.ok(
            seen.leader !== stop.machine || movedSince,
            `${stop.machine} led when its switch began (the watcher's look of ${seen.from}–${seen.at}, the switch at ` +
              `${stop.at}; moves: ${JSON.stringify(moves)})`,
          );
        }
        const away = moves.find((e) =>
          new RegExp(
            `^moved etcd leadership from ${first} \\(\\d+\\) to cp-\\d \\(\\d+\\): ${first}'s configuration changes$`,
          )
            .test(e.message)
        );
        assert.ok(away, `no move off the first leader ${first}: ${JSON.stringify(moves)}`);
        const firstStop = stops.find((x) => x.machine === first)!;
        assert.ok(away.at <= firstStop.at, `${first}'s switch began before leadership moved off it`);
        await assertNeverBelowQuorum(w, s);
        assert.deepEqual(w.last()!.members.map((m) => m.name).sort(), CP);
      } finally {
        await watch?.stop();
      }
    },
  });
}
