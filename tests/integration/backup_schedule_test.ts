/**
 * Backups NICO takes itself, on real parts: the simulated host's real etcd member, a real S3-compatible store
 * (versitygw) and etcd's own etcdutl as the judge. Two on-demand backups (the annotation `nico backup` sets),
 * then scheduled ones every minute with `keep: 2`: the oldest are deleted by NICO, an object under the prefix
 * that is not NICO's is left alone, and every backup left is whole (its size and SHA-256 as recorded, and
 * `etcdutl snapshot status` and `restore` accept it). `nico backups` lists what the store holds; after a restart
 * NICO reads its last backup back from the store.
 */
import assert from "node:assert/strict";
import { eventually, sharedControlPlane } from "../../testing/helpers.ts";
import { KUBERNETES_CLUSTERS } from "../../crds/kubernetescluster.ts";
import { condition, startScenario } from "../../testing/scenario.ts";
import { runNicoCli } from "../../testing/cli.ts";
import { backupSpec, BUCKET, fillEtcd, judgeAll, requestBackup, stored, storeFor } from "../backup_kit.ts";
import { etcdEvents, etcdSettled } from "../etcd_kit.ts";

const env = sharedControlPlane();

Deno.test({
  name: "scheduled backups with retention and on-demand ones: only NICO's objects counted and deleted, all whole",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const cp = await env.get();
    await using s = await startScenario(cp, "backup-schedule", { hostBlock: 185 });
    const kc = `--kubeconfig=${cp.kubeconfigPath}`;
    const store = await storeFor(s, "127.0.185.250");
    const foreign = `${s.ns}/c/notes.txt`;
    const s3 = store.client();
    s.defer(() => s3.close());
    await s3.put(BUCKET, foreign, new TextEncoder().encode("not a backup"));
    await s.createCluster({
      gitRepo: "https://git.example.test/flake.git",
      controlPlane: { machines: ["cp-1"] },
      dataPlane: { machines: [] },
      etcd: { backup: backupSpec(store, { schedule: "* * * * *", keep: 2 }) },
    });
    await s.until("Ready, etcd of 1 healthy", etcdSettled(1), 120_000);
    const revision = await fillEtcd(s, 185, 1, 20);

    const one = await requestBackup(s, "one");
    // The backup that answered the request (a scheduled one, every minute here, may already be newer than it).
    const first = one.status?.etcd?.backups?.requestBackup;
    assert.equal(first?.reason, "manual", JSON.stringify(one.status?.etcd?.backups));
    assert.equal(condition(one, "EtcdBackedUp")?.reason, "BackedUp");
    const two = await runNicoCli(["backup", "c", kc, "-n", s.ns]);
    assert.equal(two.code, 0, two.stderr);
    assert.match(two.stdout, new RegExp(`^backup ${s.ns}/c/c-\\d{8}T\\d{6}Z-manual\\.db at .* \\(manual, `));
    await s.until("a scheduled backup", (c) => c.status?.etcd?.backups?.last?.reason === "schedule", 150_000);

    const records = await eventually("keep: 2 backups left", async () => {
      const r = await stored(s, store);
      return r.length === 2 && !r.some((x) => x.key === first.key) ? r : undefined;
    }, 60_000);
    assert.ok(records.some((r) => r.reason === "schedule"), records.map((r) => r.key).join(", "));
    assert.ok(records.every((r) => r.key.startsWith(`${s.ns}/c/c-`) && r.key.endsWith(`-${r.reason}.db`)));
    const judged = await judgeAll(store, records);
    assert.ok(judged.every((j) => j.revision >= revision && j.totalKey >= 20), JSON.stringify(judged));
    assert.ok(records.every((r) => Number(r.revision) >= revision), "each record's revision is the member's");
    assert.ok((await s3.list(BUCKET, `${s.ns}/c/`)).some((o) => o.key === foreign), "the foreign object stays");
    // The listing against the store's own, asked right after (a scheduled backup may land between: ask again).
    const listed = await eventually("nico backups lists what the store holds", async () => {
      const out = await runNicoCli(["backups", "c", kc, "-n", s.ns]);
      assert.equal(out.code, 0, out.stderr);
      const lines = out.stdout.trim().split("\n");
      assert.match(lines[0]!, /^TIME\s+REASON\s+SIZE\s+REVISION\s+SHA256\s+MEMBER\s+KEY$/);
      const keys = lines.slice(1).map((l) => l.split(/\s+/).pop());
      return JSON.stringify(keys) === JSON.stringify((await stored(s, store)).map((r) => r.key)) ? keys : undefined;
    }, 60_000);
    assert.ok(listed.length >= 2 && !listed.includes(foreign), listed.join(", "));

    // A restart: NICO keeps nothing between runs, the store is the record. With the schedule off, the new NICO's
    // first look at the store gives status.etcd.backups.last back (a listed record: no duration of its own).
    await s.client.mergePatch(KUBERNETES_CLUSTERS, "c", s.ns, { spec: { etcd: { backup: { schedule: null } } } });
    await s.until("no backup under way", (c) => c.status?.etcd?.backups?.taking === undefined, 60_000);
    await s.stopNico();
    const newest = (await stored(s, store)).at(-1)!;
    await s.startNico();
    const back = await s.until("the last backup read back from the store", (c) => {
      const last = c.status?.etcd?.backups?.last;
      return last?.key === newest.key && last.seconds === undefined && condition(c, "EtcdBackedUp")?.status === "True";
    }, 90_000);
    assert.equal(back.status?.etcd?.backups?.last?.sha256, newest.sha256);
    const taken = (await etcdEvents(s)).filter((e) => e.reason === "EtcdBackupTaken");
    assert.ok(taken.length >= 3, `EtcdBackupTaken Events: ${taken.length}`);
    assert.ok(taken.some((e) => /deleted 1 older backup\(s\) \(keep\)/.test(e.message)), JSON.stringify(taken));
  },
});
