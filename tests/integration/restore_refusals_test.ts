/**
 * A restore that cannot go through, driven through NICO on real parts (the simulated host's real etcd member, a real
 * store, NIO v1's run Jobs): a backup changed in the store after it was taken fails the bootstrap node's apply on
 * its SHA-256 check, and NICO ends the restore Failed with the host's reason, the URL taken back and no other node
 * touched; a store that does not answer fails the restore at once, nothing touched. Each says so in status and
 * in a Warning Event.
 */
import assert from "node:assert/strict";
import { sharedControlPlane } from "../../testing/helpers.ts";
import { condition, type Scenario, startScenario } from "../../testing/scenario.ts";
import { backedUpCluster, BUCKET, requestedBackup } from "../backup_kit.ts";
import { askRestore, restoreEnded, urlTakenBack, warningsWith } from "../restore_scenario_kit.ts";

const env = sharedControlPlane();
const BLOCK = 201;

/** Waits for restore `id` to end; answers its record. */
async function endOf(s: Scenario, id: string) {
  const c = await restoreEnded(s, id);
  return { record: c.status!.restore!, cluster: c };
}

Deno.test({
  name: "restore: a backup changed in the store fails at the host's hash check; a store that is down fails at once",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const cp = await env.get();
    await using s = await startScenario(cp, "restore-refusals", { hostBlock: BLOCK, generation: "v1" });
    const store = await backedUpCluster(s, BLOCK, ["w-1"]);
    const backup = await requestedBackup(s, "one");

    // One byte of the database changed, its metadata and the hash etcd appended kept: it still lists as a backup.
    const s3 = store.client();
    try {
      const got = await s3.request({ method: "GET", operation: "GetObject", bucket: BUCKET, key: backup.key });
      const bytes = new Uint8Array(await got.arrayBuffer());
      bytes[Math.floor(bytes.length / 2)]! ^= 0xff;
      const info = await s3.headObject(BUCKET, backup.key);
      await s3.put(BUCKET, backup.key, bytes, info.metadata);
    } finally {
      s3.close();
    }
    await s.workloads.etcd.kill(s.ns, "c", "cp-1", true);
    await s.until("NICO sees etcd lost", (c) => condition(c, "EtcdHealthy")?.reason === "EtcdUnreachable", 60_000);
    await askRestore(s, { requestId: "tampered", backup: backup.key });
    const bad = await endOf(s, "tampered");
    assert.deepEqual([bad.record.step, bad.record.reason], ["Failed", "BootstrapRestoreFailed"], bad.record.message);
    assert.match(bad.record.message, /sha256 mismatch for backup .*nothing restored/);
    assert.match(bad.record.message, /the instruction is withdrawn and no other node was touched/);
    assert.equal(condition(bad.cluster, "Restoring")?.reason, "BootstrapRestoreFailed");
    await urlTakenBack(s);
    const failed = await warningsWith(s, "RestoreFailed", "sha256 mismatch");
    assert.ok(failed.some((m) => m.includes("sha256 mismatch")), failed.join(" | "));

    // The store down: the lookup fails, nothing is touched.
    await store.stop();
    await askRestore(s, { requestId: "down", backup: "latest" });
    const down = await endOf(s, "down");
    assert.deepEqual([down.record.step, down.record.reason], ["Failed", "StoreUnreachable"], down.record.message);
    assert.match(down.record.message, /the backup store did not answer/);
    assert.deepEqual(down.record.history?.map((h) => h.step), ["Resolving", "Failed"], "nothing touched");
  },
});
