/**
 * The simulated hosts follow the flake contract's restore step (testing/sim-etcd-restore.ts) on real etcd members,
 * a real object store (versitygw) and the real `etcdutl`: keys written before a backup are back after every member
 * and its data was lost, the later ones are not, the revision is bumped past anything served before and a watch from
 * before the disaster is told to relist (compacted); bad inputs (a hash mismatch, an expired URL, a missing object)
 * fail the host's apply before anything is touched. The configurations are NICO's own rendering of a restore.
 */
import assert from "node:assert/strict";
import { desiredConfigurations, resolveEndpoint } from "../../core/render/desired.ts";
import type { DesiredRestore } from "../../core/render/restore.ts";
import { selectMachines } from "../../core/machines/selection.ts";
import type { NixosConfiguration } from "../../core/contract/nio.ts";
import { etcdCaKeySecret, etcdCaSecret, etcdRestoreSecret } from "../../core/contract/names.ts";
import { takeBackup } from "../../lib/backup.ts";
import { encodeBase64 } from "../../lib/encoding.ts";
import { EtcdClient } from "../../lib/etcd/client.ts";
import { SECRETS } from "../../lib/kube/resources.ts";
import { createCa, issueCert } from "../../lib/pki.ts";
import { etcdClientUrl } from "../../testing/etcd.ts";
import { eventually } from "../../testing/helpers.ts";
import { cluster, machine } from "../../testing/objects.ts";
import { startS3Server } from "../../testing/s3.ts";
import { BUMP_REVISION } from "../../testing/sim-etcd-restore.ts";
import { simEtcd } from "../../testing/sim-etcd.ts";
import { type World, world } from "../../testing/world.ts";

const HOSTS = ["127.0.196.1", "127.0.196.2", "127.0.196.3"];
const NAMES = ["cp-1", "cp-2", "cp-3"];
const b64 = (s: string) => btoa(s);

/** The hosts, the store, the etcd CA's Secrets and the helpers the drill uses (the Secrets in `w`'s namespace). */
async function drillKit(w: World) {
  const store = await startS3Server({ host: "127.0.196.9", buckets: ["backups"] });
  w.defer(() => store.stop());
  const s3 = store.client();
  const ca = await createCa({ commonName: "prod-etcd-ca" });
  for (
    const [name, data] of [[etcdCaSecret("prod"), { "tls.crt": ca.certPem }], [etcdCaKeySecret("prod"), {
      "tls.key": ca.keyPem,
    }]] as const
  ) {
    await w.client.create(SECRETS, {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name, namespace: w.ns },
      data: encode(data),
    });
  }
  const machines = NAMES.map((n, i) => machine(n, { host: HOSTS[i]!, namespace: w.ns }));
  const c = cluster({ controlPlane: { machines: NAMES } });
  const c2 = { ...c, namespace: w.ns };
  const configs = (restore?: DesiredRestore) => {
    const out = desiredConfigurations({
      cluster: c2,
      selection: selectMachines({ cluster: c, machines, configurations: [] }),
      machines,
      bootstrap: "cp-1",
      endpoint: resolveEndpoint(c.spec, machines[0], "cp-1"),
      gitRepo: "https://127.0.0.1/flake.git",
      nio: "v1",
      etcd: { clientPort: 2379 },
      restore,
    });
    return new Map(out.map((cfg) => [cfg.spec.machineRef.name, cfg]));
  };
  const sim = simEtcd(w.client);
  w.defer(() => sim.stop());
  const cert = await issueCert(ca, { commonName: "test", usage: "client", days: 1 });
  const etcd = new EtcdClient({ caPem: ca.certPem, certPem: cert.certPem, keyPem: cert.keyPem, timeoutMs: 5_000 });
  w.defer(() => etcd.close());
  const url = (i: number) => etcdClientUrl(HOSTS[i]!);
  const apply = (cfg: NixosConfiguration, i: number) => sim.applied(cfg, machines[i]!);
  const put = (i: number, k: string) => etcd.call(url(i), "kv/put", { key: b64(k), value: b64(`value of ${k}`) });
  const keys = async (i: number) => {
    const r = await etcd.call(url(i), "kv/range", { key: b64("k/"), range_end: b64("k0") }) as {
      kvs?: { key: string }[];
      header: { revision: string };
    };
    return { keys: (r.kvs ?? []).map((kv) => atob(kv.key)).sort(), revision: Number(r.header.revision) };
  };
  const setUrl = async (u: string) => {
    const body = {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: etcdRestoreSecret("prod"), namespace: w.ns },
      data: { url: encodeBase64(u) },
    };
    const old = await w.client.get(SECRETS, etcdRestoreSecret("prod"), w.ns);
    if (old) await w.client.delete(SECRETS, etcdRestoreSecret("prod"), w.ns);
    await w.client.create(SECRETS, body);
  };
  return { s3, configs, apply, put, keys, setUrl, etcd, sim, url };
}

/** Three members up, keys k/a..k/c backed up, then k/d and k/e written: the backup, the last revision seen. */
async function backedUp(k: Omit<Awaited<ReturnType<typeof drillKit>>, "setUrl" | "sim">) {
  const { s3, configs, apply, put, keys, etcd, url } = k;
  const normal = configs();
  for (const i of [0, 1, 2]) await apply(normal.get(NAMES[i]!)!, i);
  await eventually("three voters", async () => (await etcd.members(url(0))).filter((m) => !m.isLearner).length === 3);
  for (const k of ["k/a", "k/b", "k/c"]) await put(1, k);
  const backup = await takeBackup(etcd, url(1), { s3, bucket: "backups" }, { key: "prod/before.db", reason: "manual" });
  for (const k of ["k/d", "k/e"]) await put(0, k);
  const lastSeen = (await keys(0)).revision;
  const parts = (roles: [string, "restore" | "rejoin"][], sha = backup.sha256): DesiredRestore => ({
    requestId: "r1",
    backup: backup.key,
    sha256: sha,
    roles: new Map(roles),
  });
  return { backup, lastSeen, parts };
}

Deno.test("simulated hosts restore etcd from a backup by the flake contract", async (t) => {
  await using w = await world("sim-etcd-restore", { nio: false, nico: false });
  const { s3, configs, apply, put, keys, setUrl, etcd, sim, url } = await drillKit(w);

  const { backup, lastSeen, parts } = await backedUp({ s3, configs, apply, put, keys, etcd, url });

  await t.step("bad inputs fail the host's apply before anything is touched", async () => {
    const bad: [string, string, string, RegExp][] = [
      ["a hash mismatch", await s3.presignGet("backups", backup.key, 300), "00".repeat(32), /sha256 mismatch/],
      [
        "an expired URL",
        await s3.presignGet("backups", backup.key, 1, new Date(Date.now() - 3_600_000)),
        backup.sha256,
        /HTTP 403/,
      ],
      ["a missing object", await s3.presignGet("backups", "prod/none.db", 300), backup.sha256, /HTTP 404/],
    ];
    for (const [what, u, sha, why] of bad) {
      await setUrl(u);
      await assert.rejects(apply(configs(parts([["cp-1", "restore"]], sha)).get("cp-1")!, 0), why, what);
      assert.deepEqual((await keys(0)).keys, ["k/a", "k/b", "k/c", "k/d", "k/e"], `${what}: nothing lost`);
    }
  });

  await t.step("every member and its data lost; the bootstrap host restores the backup, revision bumped", async () => {
    for (const n of NAMES) await sim.kill(w.ns, "prod", n, true);
    await assert.rejects(etcd.members(url(0)));
    await setUrl(await s3.presignGet("backups", backup.key, 300));
    await apply(configs(parts([["cp-1", "restore"]])).get("cp-1")!, 0);
    const after = await eventually("the restored member answers", () => keys(0).catch(() => undefined));
    assert.deepEqual(after.keys, ["k/a", "k/b", "k/c"], "the keys before the backup are back, the later ones not");
    assert.ok(after.revision > lastSeen && after.revision >= BUMP_REVISION, `revision ${after.revision}`);
    assert.deepEqual((await etcd.members(url(0))).map((m) => m.name), ["cp-1"]);
  });

  await t.step(
    "a watch from before the disaster is told its revision was compacted (an informer relists)",
    async () => {
      const res = await etcd.stream(url(0), "watch", {
        create_request: { key: b64("k/"), range_end: b64("k0"), start_revision: String(lastSeen + 1) },
      });
      const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
      let text = "";
      while (!/compact_revision/.test(text)) {
        const { value, done } = await reader.read();
        if (done) break;
        text += value;
      }
      await reader.cancel();
      assert.match(text, /"compact_revision":"(\d+)"/);
      assert.ok(Number(/"compact_revision":"(\d+)"/.exec(text)![1]) > lastSeen, text);
    },
  );

  await t.step("the other hosts remove their data and rejoin one at a time", async () => {
    const during = configs(parts([["cp-1", "restore"], ["cp-2", "rejoin"], ["cp-3", "rejoin"]]));
    for (const i of [1, 2]) {
      await apply(during.get(NAMES[i]!)!, i);
      await eventually(
        `${NAMES[i]} a voter`,
        async () => (await etcd.members(url(0))).filter((m) => !m.isLearner && m.name).length === i + 1,
      );
    }
    for (const i of [0, 1, 2]) assert.deepEqual((await keys(i)).keys, ["k/a", "k/b", "k/c"], NAMES[i]);
    await put(2, "k/f");
    assert.deepEqual((await keys(0)).keys, ["k/a", "k/b", "k/c", "k/f"]);
  });

  await t.step("the same configuration applied again restores nothing twice", async () => {
    await apply(configs(parts([["cp-1", "restore"]])).get("cp-1")!, 0);
    assert.deepEqual((await keys(0)).keys, ["k/a", "k/b", "k/c", "k/f"]);
  });
});

function encode(data: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(data).map(([k, v]) => [k, encodeBase64(v)]));
}
