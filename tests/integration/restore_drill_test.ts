/**
 * A restore of etcd driven by NICO (controllers/cluster/phases/restore.ts) on real parts: the simulated host's real
 * etcd member, a real store (versitygw) and the real `etcdutl` the host restores with. First a restore asked of a
 * healthy cluster without rewindHealthy is refused with its reason and nothing changes; then the drill: keys
 * written, a backup taken (`nico backup`'s request), more keys written, the control-plane host's etcd killed and its
 * data wiped, `nico restore --yes` (it shows what is rewound): NICO drives it to Succeeded, the keys from before the backup are back and the
 * later ones are not, the revision is bumped past the backup's, and the cluster ends Ready. Then, on another
 * cluster: a backup that does not exist is refused; a healthy cluster rewound on purpose (rewindHealthy) gets its
 * safety snapshot first, and restoring that snapshot undoes the rewind. Last, three control-plane nodes lost with
 * their data: the bootstrap node restores, the other two rejoin one at a time, and the cluster ends Ready.
 */
import assert from "node:assert/strict";
import type { KubernetesCluster } from "../../crds/kubernetescluster.ts";
import { KUBERNETES_CLUSTERS } from "../../crds/kubernetescluster.ts";
import { NIXOS_CONFIGURATIONS, type NixosConfiguration } from "../../core/contract/nio.ts";
import { etcdRestoreSecret } from "../../core/contract/names.ts";
import { EtcdClient } from "../../lib/etcd/client.ts";
import type { KubeObject } from "../../lib/kube/client.ts";
import { EVENTS, SECRETS } from "../../lib/kube/resources.ts";
import { issueCert } from "../../lib/pki.ts";
import { eventually, sharedControlPlane } from "../../testing/helpers.ts";
import { condition, type Scenario, startScenario } from "../../testing/scenario.ts";
import { runNicoCli } from "../../testing/cli.ts";
import { backedUpCluster, backupSpec, requestedBackup, stored, storeFor } from "../backup_kit.ts";
import { askRestore, restoreEndedAs } from "../restore_scenario_kit.ts";
import { endpoints, etcdSettled } from "../etcd_kit.ts";

const env = sharedControlPlane();

/** A client of cluster c's etcd with a certificate of the hosts' etcd CA; closed with the scenario. */
async function etcdOf(s: Scenario, hostBlock: number) {
  const ca = s.workloads.etcd.ca(s.ns, "c");
  if (!ca) throw new Error("the simulated hosts run no etcd for cluster c");
  const cert = await issueCert(ca, { commonName: "test", usage: "client", days: 1 });
  const client = new EtcdClient({ caPem: ca.certPem, certPem: cert.certPem, keyPem: cert.keyPem, timeoutMs: 10_000 });
  s.defer(() => client.close());
  const at = endpoints(hostBlock, 1)[0]!;
  return {
    put: (k: string) => client.call(at, "kv/put", { key: btoa(k), value: btoa(`value of ${k}`) }),
    keys: async () => {
      const r = await client.call(at, "kv/range", { key: btoa("/drill/"), range_end: btoa("/drill0") }) as {
        kvs?: { key: string }[];
        header: { revision: string };
      };
      return { keys: (r.kvs ?? []).map((kv) => atob(kv.key)).sort(), revision: Number(r.header.revision) };
    },
  };
}

/**
 * What NICO writes of cluster c's configurations, by name: the spec (its generation), the labels and the annotations.
 * Not the resourceVersion: NIO v1 writes a configuration's status at each run, its scheduled ones too.
 */
async function configWrites(s: Scenario): Promise<string> {
  const all = (await s.client.list<NixosConfiguration>(NIXOS_CONFIGURATIONS, { namespace: s.ns })).items;
  return all.map(({ metadata: m }) => `${m.name}@${m.generation} ${JSON.stringify([m.labels, m.annotations])}`).sort()
    .join(",");
}

/** NICO's restore Events in the namespace, by reason. */
async function restoreEvents(s: Scenario): Promise<string[]> {
  type Event = KubeObject & { reason?: string };
  const items = (await s.client.list<Event>(EVENTS, { namespace: s.ns })).items;
  return items.map((e) => e.reason ?? "").filter((r) => /Restor|SafetySnapshot/.test(r));
}

Deno.test({
  name: "restore: refused on a healthy cluster; after etcd and its data are lost, NICO brings it back from a backup",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const cp = await env.get();
    await using s = await startScenario(cp, "restore-drill", { hostBlock: 197 });
    await backedUpCluster(s, 197, ["w-1"]);
    const etcd = await etcdOf(s, 197);
    for (let i = 0; i < 5; i++) await etcd.put(`/drill/before-${i}`);
    const backup = await requestedBackup(s, "drill");
    for (let i = 0; i < 5; i++) await etcd.put(`/drill/after-${i}`);

    // A healthy cluster, no rewindHealthy: refused, nothing touched.
    const before = await configWrites(s);
    await askRestore(s, { requestId: "r0", backup: backup.key });
    const refused = await s.until("r0 refused", (c) =>
      c.status?.restore?.requestId === "r0" &&
      c.status.restore.step === "Refused", 60_000);
    assert.equal(refused.status?.restore?.reason, "HealthyQuorum");
    assert.match(refused.status!.restore!.message, /healthy quorum .*rewindHealthy: true/);
    assert.equal(condition(refused, "Restoring")?.status, "False");
    assert.equal(await configWrites(s), before, "no configuration was written");
    assert.equal(await s.client.get(SECRETS, etcdRestoreSecret("c"), s.ns), undefined, "no restore Secret");
    assert.equal((await etcd.keys()).keys.length, 10, "etcd untouched");

    // The disaster: the control plane's etcd dies with its data.
    await s.workloads.etcd.kill(s.ns, "c", "cp-1", true);
    await s.until("NICO sees etcd lost", (c) => condition(c, "EtcdHealthy")?.reason === "EtcdUnreachable", 60_000);
    // Asked through nico restore: not without --yes off a terminal; with it, what is rewound, then the request.
    const cli = ["restore", "c", "--from", "latest", `--kubeconfig=${cp.kubeconfigPath}`, "-n", s.ns];
    const unasked = await runNicoCli(cli);
    assert.equal(unasked.code, 2, unasked.stderr);
    assert.match(unasked.stderr, /add --yes/);
    const asked = await runNicoCli([...cli, "--yes"]);
    assert.equal(asked.code, 0, asked.stderr);
    const lines = asked.stdout.trim().split("\n");
    assert.equal(lines[0], `restore etcd of cluster ${s.ns}/c from ${backup.key}`);
    assert.equal(lines[1], `backup:     taken ${backup.time} (manual) at revision ${backup.revision}`);
    assert.match(
      lines[2]!,
      /^etcd now: {3}does not answer \(.*\): whatever it held after the backup is lost either way$/,
    );
    const id = (await s.client.get<KubernetesCluster>(KUBERNETES_CLUSTERS, "c", s.ns))!.spec.etcd!.restore!.requestId;
    assert.match(lines[3]!, new RegExp(`^asked NICO to restore \\(request ${id}\\)`));
    const r = (await restoreEndedAs(s, id, "Succeeded")).status!.restore!;
    assert.equal(r.backup, backup.key, "latest is the backup just taken");
    assert.equal(r.safetySnapshot, undefined, "no member answered: no safety snapshot");
    assert.deepEqual(r.nodes, [{ name: "cp-1", state: "Restored" }]);
    assert.ok(r.revision !== undefined && r.revision > Number(backup.revision), JSON.stringify(r));
    assert.deepEqual(r.history?.map((h) => h.step), ["Resolving", "Restoring", "Rejoining", "Succeeded"]);

    const got = await etcd.keys();
    assert.deepEqual(got.keys, [0, 1, 2, 3, 4].map((i) => `/drill/before-${i}`), "before back, after gone");
    assert.ok(got.revision > Number(backup.revision), `revision ${got.revision} bumped past ${backup.revision}`);
    await s.until("Ready again, etcd of 1 healthy", etcdSettled(1), 180_000);
    // The pass after the one that ended the restore takes the URL back.
    await eventually(
      "the URL taken back",
      async () => (await s.client.get(SECRETS, etcdRestoreSecret("c"), s.ns)) === undefined,
      60_000,
    );
    const events = await restoreEvents(s);
    // One control-plane node: restored and done in the same look, so one Event says both (RestoreSucceeded).
    for (const e of ["RestoreRefused", "RestoreStarted", "RestoreSucceeded"]) {
      assert.ok(events.includes(e), `${e} in ${events.join(", ")}`);
    }
  },
});

Deno.test({
  name:
    "restore: a missing backup is refused; a healthy cluster rewound on purpose, then undone from its safety snapshot",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const cp = await env.get();
    await using s = await startScenario(cp, "restore-rewind", { hostBlock: 198 });
    await backedUpCluster(s, 198);
    const etcd = await etcdOf(s, 198);
    await etcd.put("/drill/before-0");
    const backup = await requestedBackup(s, "one");

    const before = await configWrites(s);
    await askRestore(s, { requestId: "missing", backup: `${s.ns}/c/c-20200101T000000Z-manual.db` });
    const missing = (await restoreEndedAs(s, "missing", "Refused")).status!.restore!;
    assert.equal(missing.reason, "BackupNotFound");
    assert.match(missing.message, /no backup .*c-20200101T000000Z-manual\.db.*nico backups c/);
    assert.equal(await configWrites(s), before, "no configuration was written");

    await etcd.put("/drill/later-0");
    await askRestore(s, { requestId: "rewind", backup: backup.key, rewindHealthy: true });
    const rewound = (await restoreEndedAs(s, "rewind", "Succeeded")).status!.restore!;
    assert.ok(rewound.safetySnapshot?.startsWith(`${s.ns}/c/c-`), JSON.stringify(rewound));
    assert.match(rewound.safetySnapshot!, /-pre-restore\.db$/);
    assert.deepEqual(rewound.history?.map((h) => h.step), [
      "Resolving",
      "SafetySnapshot",
      "Restoring",
      "Rejoining",
      "Succeeded",
    ]);
    assert.deepEqual((await etcd.keys()).keys, ["/drill/before-0"], "rewound to the backup");
    assert.notEqual(await configWrites(s), before, "the witness sees NICO's writes: the rewind wrote cp-1's files");
    // NICO marked etcd just before its safety snapshot; the restored data is the backup's, without the mark.
    assert.equal(rewound.marker, "/nico.homystack.com/restore/rewind");
    await s.until("Ready after the rewind", etcdSettled(1), 180_000);

    // Undo: the safety snapshot holds what the rewind undid.
    await askRestore(s, { requestId: "undo", backup: rewound.safetySnapshot, rewindHealthy: true });
    await restoreEndedAs(s, "undo", "Succeeded");
    assert.deepEqual((await etcd.keys()).keys, ["/drill/before-0", "/drill/later-0"], "undone");
    await s.until("Ready after the undo", etcdSettled(1), 180_000);
    const events = await restoreEvents(s);
    assert.ok(events.includes("SafetySnapshotTaken"), events.join(", "));
  },
});

Deno.test({
  name: "restore: three control-plane nodes lost with their data; the bootstrap node restores, the others rejoin",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const cp = await env.get();
    await using s = await startScenario(cp, "restore-three", { hostBlock: 199 });
    const store = await storeFor(s, "127.0.199.250");
    await s.createCluster({
      gitRepo: "https://git.example.test/flake.git",
      controlPlane: { machines: ["cp-1", "cp-2", "cp-3"] },
      dataPlane: { machines: [] },
      // Every minute: none is taken while the restore runs.
      etcd: { backup: backupSpec(store, { schedule: "* * * * *" }) },
    });
    await s.until("Ready, etcd of 3 healthy", etcdSettled(3), 240_000);
    const etcd = await etcdOf(s, 199);
    await etcd.put("/drill/before-0");
    const backup = await requestedBackup(s, "three");
    await etcd.put("/drill/after-0");
    for (const m of ["cp-1", "cp-2", "cp-3"]) await s.workloads.etcd.kill(s.ns, "c", m, true);
    await s.until("NICO sees etcd lost", (c) => condition(c, "EtcdHealthy")?.reason === "EtcdUnreachable", 60_000);
    await askRestore(s, { requestId: "r3", backup: backup.key });
    const r = (await restoreEndedAs(s, "r3", "Succeeded", 300_000)).status!.restore!;
    assert.deepEqual(r.nodes, [
      { name: "cp-1", state: "Restored" },
      { name: "cp-2", state: "Rejoined" },
      { name: "cp-3", state: "Rejoined" },
    ]);
    assert.deepEqual((await etcd.keys()).keys, ["/drill/before-0"], "before back, after gone");
    const [from, to] = [Date.parse(r.startedAt), Date.parse(r.finishedAt!)];
    const during = (await stored(s, store)).filter((b) => Date.parse(b.time) > from && Date.parse(b.time) < to);
    assert.deepEqual(during.map((b) => `${b.key} (${b.reason})`), [], "no backup while the restore ran");
    await s.until("Ready again, etcd of 3 healthy", etcdSettled(3), 300_000);
    const events = await restoreEvents(s);
    assert.ok(events.includes("EtcdRestored") && events.includes("RestoreSucceeded"), events.join(", "));
  },
});
