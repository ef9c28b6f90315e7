/**
 * A restore whose presigned URL expires before the host downloads it, driven through NICO on real parts (the
 * simulated host's real etcd member, a real store, NIO v1's run Jobs): NIO writes the URL to the host when its run
 * begins and the host downloads it after the build, so a build longer than `--restore-url-lifetime` is refused by
 * the store (403 AccessDenied, "Request has expired"). NICO ends the restore Failed with the host's reason and
 * what to change, takes the URL back and touches no other node; NICO started again with a longer lifetime, the
 * same backup asked for with a new requestId restores.
 */
import assert from "node:assert/strict";
import { configName } from "../../core/contract/names.ts";
import { NIXOS_CONFIGURATIONS, type NixosConfiguration } from "../../core/contract/nio.ts";
import { sharedControlPlane } from "../../testing/helpers.ts";
import { condition, type Scenario, startScenario } from "../../testing/scenario.ts";
import { backedUpCluster, requestedBackup } from "../backup_kit.ts";
import { askRestore, restoreEnded, urlTakenBack, warningsWith } from "../restore_scenario_kit.ts";

const env = sharedControlPlane();
const BLOCK = 203;
/** A run of NIO (the build, then the switch) takes this long: longer than the URL lives in the first attempt. */
const RUN_MS = 4_000;

/** The spec of worker w-1's configuration, as NICO wrote it. */
async function workerSpec(s: Scenario): Promise<string> {
  const cfg = await s.client.get<NixosConfiguration>(NIXOS_CONFIGURATIONS, configName("c", "w-1"), s.ns);
  return JSON.stringify(cfg?.spec);
}

Deno.test({
  name:
    "restore: a URL that expired before the host downloaded it fails with the reason and the fix; a longer one restores",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const cp = await env.get();
    await using s = await startScenario(cp, "restore-expired", {
      hostBlock: BLOCK,
      generation: "v1",
      applyDelayMs: RUN_MS,
      settings: { restoreUrlLifetime: 1_000 },
    });
    await backedUpCluster(s, BLOCK, ["w-1"]);
    const backup = await requestedBackup(s, "one");
    const worker = await workerSpec(s);
    await s.workloads.etcd.kill(s.ns, "c", "cp-1", true);
    await s.until("NICO sees etcd lost", (c) => condition(c, "EtcdHealthy")?.reason === "EtcdUnreachable", 60_000);

    await askRestore(s, { requestId: "short", backup: backup.key });
    const bad = (await restoreEnded(s, "short")).status!.restore!;
    assert.deepEqual([bad.step, bad.reason], ["Failed", "BootstrapRestoreFailed"], bad.message);
    assert.match(bad.message, /could not download backup .*HTTP 403 AccessDenied/);
    assert.match(bad.message, /valid for 1s from when NICO signs it.*--restore-url-lifetime.*new requestId/);
    assert.match(bad.message, /the instruction is withdrawn and no other node was touched/);
    assert.deepEqual(bad.history?.map((h) => h.step), ["Resolving", "Restoring", "Failed"]);
    await urlTakenBack(s);
    const failed = await warningsWith(s, "RestoreFailed", "403");
    assert.ok(failed.some((m) => m.includes("403")), failed.join(" | "));
    assert.equal(await workerSpec(s), worker, "the worker's configuration is as it was");

    await s.startNico({ settings: { restoreUrlLifetime: 120_000 } });
    await askRestore(s, { requestId: "long", backup: backup.key });
    const good = (await restoreEnded(s, "long")).status!.restore!;
    assert.equal(good.step, "Succeeded", good.message);
    assert.ok(good.revision !== undefined && good.revision > Number(backup.revision), JSON.stringify(good));
    await s.until("Ready after the restore", (c) => condition(c, "Ready")?.status === "True", 120_000);
    assert.equal(await workerSpec(s), worker, "the worker's configuration is still as it was");
  },
});
