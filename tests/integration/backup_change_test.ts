/**
 * A Kubernetes version step waits for an etcd snapshot younger than it, on real parts (three simulated hosts'
 * real etcd members, versitygw, etcdutl): every control-plane node's change comes after a pre-change backup taken
 * after the bump, from a member of the cluster, and each is whole. With the store stopped, the next bump halts
 * before any control-plane node changes, `Stalled` naming the store's error and the field to fix; with
 * `beforeChanges: BestEffort` the snapshots are skipped (a Warning each) and the step goes on.
 */
import assert from "node:assert/strict";
import type { KubernetesCluster } from "../../crds/kubernetescluster.ts";
import { KUBERNETES_CLUSTERS } from "../../crds/kubernetescluster.ts";
import { NIXOS_CONFIGURATIONS, type NixosConfiguration } from "../../core/contract/nio.ts";
import { SPEC_CHANGED_ANNOTATION, SPEC_HASH_ANNOTATION } from "../../core/contract/labels.ts";
import { sharedControlPlane } from "../../testing/helpers.ts";
import { condition, startScenario } from "../../testing/scenario.ts";
import { backupSpec, fillEtcd, judgeAll, stored, storeFor } from "../backup_kit.ts";
import { etcdEventsWhen, etcdSettled } from "../etcd_kit.ts";

const env = sharedControlPlane();
const CP = ["cp-1", "cp-2", "cp-3"];

const readyAt = (version: string) => (c: KubernetesCluster) =>
  etcdSettled(3)(c) && c.status?.version === version && condition(c, "EtcdBackedUp") !== undefined;

Deno.test({
  name: "a version bump waits for its snapshot before each control-plane step, and halts when the store is down",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await using s = await startScenario(await env.get(), "backup-change", { hostBlock: 186 });
    const store = await storeFor(s, "127.0.186.250");
    await s.createCluster({
      gitRepo: "https://git.example.test/flake.git",
      version: "1.30",
      controlPlane: { machines: CP },
      dataPlane: { machines: [] },
      etcd: { backup: backupSpec(store) },
    });
    // Up to date too: a step still pending from the bring-up (a node's cluster.nix changed as the others joined) is
    // held for a snapshot of its own, which may be taken before the bump and then serve that node's version step.
    await s.until(
      "Ready and up to date at 1.30, etcd of 3",
      (c) => readyAt("1.30.0")(c) && condition(c, "UpToDate")?.status === "True",
      150_000,
    );
    const revision = await fillEtcd(s, 186, 3, 10);
    const from = new Date().toISOString();
    await s.client.mergePatch(KUBERNETES_CLUSTERS, "c", s.ns, { spec: { version: "1.31" } });
    const done = await s.until("Ready at 1.31", readyAt("1.31.0"), 240_000);

    const pre = (await stored(s, store)).filter((r) => r.reason === "pre-change" && r.time >= from);
    assert.ok(pre.length >= CP.length, `pre-change backups: ${pre.map((r) => r.key).join(", ")}`);
    const members = new Set(done.status?.etcd?.members.map((m) => m.memberID));
    assert.ok(pre.every((r) => members.has(r.member)), "each from a member of the cluster");
    const configs = (await s.client.list<NixosConfiguration>(NIXOS_CONFIGURATIONS, { namespace: s.ns })).items;
    for (const m of CP) {
      const cfg = configs.find((x) => x.spec.machineRef.name === m)!;
      const changed = cfg.metadata.annotations?.[SPEC_CHANGED_ANNOTATION] ?? "";
      assert.ok(changed > from, `${m} changed after the bump (${changed})`);
      const taken = pre.map((r) => `${r.time} (${r.key})`).join(", ");
      assert.ok(pre.some((r) => r.time <= changed), `${m} changed at ${changed} with no snapshot before it: ${taken}`);
    }
    const judged = await judgeAll(store, pre);
    assert.ok(judged.every((j) => j.revision >= revision && j.totalKey >= 10), JSON.stringify(judged));

    const before = new Map(configs.map((x) => [x.metadata.name, x.metadata.annotations?.[SPEC_HASH_ANNOTATION]]));
    await store.stop();
    await s.client.mergePatch(KUBERNETES_CLUSTERS, "c", s.ns, { spec: { version: "1.32" } });
    const halted = await s.until("halted for its snapshot", (c) => {
      const stalled = condition(c, "Stalled");
      return stalled?.status === "True" && stalled.reason === "RolloutHalted" && /BackupFailed/.test(stalled.message);
    }, 120_000);
    const stalled = condition(halted, "Stalled")!;
    assert.match(stalled.message, /spec\.etcd\.backup\.store\.endpoint: the store at http:\/\/127\.0\.186\.250/);
    assert.equal(condition(halted, "EtcdBackedUp")?.reason, "StoreUnreachable");
    const after = (await s.client.list<NixosConfiguration>(NIXOS_CONFIGURATIONS, { namespace: s.ns })).items;
    assert.deepEqual(
      new Map(after.map((x) => [x.metadata.name, x.metadata.annotations?.[SPEC_HASH_ANNOTATION]])),
      before,
      "no control-plane node's configuration changed",
    );
    await etcdEventsWhen(
      s,
      "an EtcdBackupFailed Warning for the pre-change snapshot",
      (events) =>
        events.some((e) =>
          e.reason === "EtcdBackupFailed" && /^pre-change: spec\.etcd\.backup\.store\.endpoint/.test(e.message)
        ),
    );

    // BestEffort: the failed snapshot is skipped (a Warning says so) and the version step goes on, store still down.
    await s.client.mergePatch(KUBERNETES_CLUSTERS, "c", s.ns, {
      spec: { etcd: { backup: { beforeChanges: "BestEffort" } } },
    });
    const skipped = await s.until("Ready at 1.32 without snapshots", readyAt("1.32.0"), 240_000);
    assert.equal(condition(skipped, "EtcdBackedUp")?.reason, "StoreUnreachable");
    await etcdEventsWhen(
      s,
      "an EtcdBackupSkipped Warning",
      (events) =>
        events.some((e) =>
          e.reason === "EtcdBackupSkipped" &&
          /failed and is skipped \(BestEffort\): spec\.etcd\.backup\.store\.endpoint/.test(e.message)
        ),
    );
  },
});
