/**
 * Backups on real parts: real etcd members (the envtest's etcd 3.7.0 on loopback, TLS with client certificates),
 * a real S3-compatible store (versitygw, testing/s3.ts), and etcd's own `etcdutl` as the judge of every object
 * counted (`snapshot status` reads it, `snapshot restore` checks its SHA-256 trailer). A good backup comes back
 * whole through a presigned URL and from the store's listing; a stream cut midway, a member killed midway and a
 * store failing midway through the upload count nothing and leave neither an object nor an open upload; wrong keys,
 * a missing bucket, an unreachable store and an untrusted certificate are typed errors naming the cause; a 100 MiB
 * database goes through with bounded memory; with three members the backup comes from a follower.
 */
import assert from "node:assert/strict";
import { EtcdClient } from "../../lib/etcd/client.ts";
import { openSnapshot, SnapshotError } from "../../lib/etcd/snapshot.ts";
import { S3Error } from "../../lib/s3/errors.ts";
import { elements } from "../../lib/s3/xml.ts";
import { type BackupRecord, type BackupStore, listBackups, takeBackup } from "../../lib/backup.ts";
import { createCa, issueCert, type KeyPair } from "../../lib/pki.ts";
import { etcdClientUrl, type EtcdMemberProcess, etcdPeerUrl, startEtcdMember } from "../../testing/etcd.ts";
import { judgeSnapshot } from "../../testing/etcdtools.ts";
import { cuttingProxy, failingHttpProxy } from "../../testing/faulty_proxy.ts";
import { type S3Server, startS3Server } from "../../testing/s3.ts";
import { eventually } from "../../testing/helpers.ts";
import { runProbe } from "../../testing/backup_probe.ts";

const HOSTS = ["127.0.175.1", "127.0.175.2", "127.0.175.3"];
const STORE_HOST = "127.0.175.10";
const PROXY_HOST = "127.0.175.1"; // the member's own address: its certificate names it
const MiB = 1024 * 1024;

interface Members {
  ca: KeyPair;
  /** The client's credentials (for a probe in a child process). */
  pems: { caPem: string; certPem: string; keyPem: string };
  client: EtcdClient;
  endpoints: string[];
  members: EtcdMemberProcess[];
  dir: string;
  [Symbol.asyncDispose](): Promise<void>;
}

async function startMembers(n: number): Promise<Members> {
  const ca = await createCa({ commonName: "backup-io etcd CA" });
  const dir = await Deno.makeTempDir({ prefix: "nico-backup-io-" });
  const hosts = HOSTS.slice(0, n);
  const initialCluster = hosts.map((h, i) => `m${i + 1}=${etcdPeerUrl(h)}`).join(",");
  const members = await Promise.all(
    hosts.map((host, i) =>
      startEtcdMember({ name: `m${i + 1}`, host, ca, initialCluster, state: "new", dir: `${dir}/m${i + 1}` })
    ),
  );
  const cert = await issueCert(ca, { commonName: "nico", usage: "client", days: 1 });
  const pems = { caPem: ca.certPem, certPem: cert.certPem, keyPem: cert.keyPem };
  const client = new EtcdClient({ ...pems, timeoutMs: 15_000 });
  const endpoints = hosts.map((h) => etcdClientUrl(h));
  await eventually("a leader every member knows", async () => {
    const all = await Promise.all(endpoints.map((e) => client.status(e)));
    return all.every((s) => s.leader !== "0" && s.leader === all[0]!.leader);
  }, 60_000);
  return {
    ca,
    pems,
    client,
    endpoints,
    members,
    dir,
    async [Symbol.asyncDispose]() {
      client.close();
      await Promise.all(members.map((m) => m.stop()));
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    },
  };
}

/** Writes `mib` MiB of values (1 MiB each, incompressible) and a few small keys; answers the keys written. */
async function fill(m: Members, mib: number): Promise<number> {
  const value = new Uint8Array(MiB);
  for (let i = 0; i < mib; i++) {
    for (let at = 0; at < MiB; at += 65_536) crypto.getRandomValues(value.subarray(at, at + 65_536));
    const key = btoa(`/fill/${i}`);
    await m.client.call(m.endpoints[0]!, "kv/put", { key, value: value.toBase64() });
  }
  for (let i = 0; i < 3; i++) {
    await m.client.call(m.endpoints[0]!, "kv/put", { key: btoa(`/k/${i}`), value: btoa("v") });
  }
  return mib + 3;
}

/** Downloads an object through a presigned URL into a file (streamed), and has etcdutl judge it. */
async function judged(store: BackupStore, record: BackupRecord, dir: string, caPem?: string) {
  const url = await store.s3.presignGet(store.bucket, record.key, 300);
  using client = Deno.createHttpClient(caPem ? { caCerts: [caPem] } : {});
  const res = await fetch(url, { client });
  assert.equal(res.status, 200, "the presigned URL reads the object without credentials");
  const path = `${dir}/${record.key.replaceAll("/", "_")}`;
  await res.body!.pipeTo((await Deno.create(path)).writable);
  assert.equal((await Deno.stat(path)).size, record.size);
  const tail = (await Deno.readFile(path)).subarray(-32).toHex();
  assert.equal(tail, record.sha256, "the record's SHA-256 is the object's trailer");
  return await judgeSnapshot(path);
}

/** Nothing under `prefix`: no object, and no multipart upload left open. */
async function nothingLeft(store: BackupStore, prefix: string) {
  assert.deepEqual((await store.s3.list(store.bucket, prefix)).map((o) => o.key), [], "no object");
  const res = await store.s3.request({
    method: "GET",
    operation: "ListMultipartUploads",
    bucket: store.bucket,
    query: { uploads: "", prefix },
  });
  assert.deepEqual(elements(await res.text(), "Upload"), [], "no open upload");
}

/** One member and a store, as the steps of the first test share them. */
interface One {
  m: Members;
  server: S3Server;
  store: BackupStore;
  endpoint: string;
}

/** A good backup, judged by etcdutl, listed back from the store. */
async function goodBackup({ m, store, endpoint }: One): Promise<void> {
  const keys = await fill(m, 2);
  const now = new Date("2026-12-04T12:00:00Z");
  const r = await takeBackup(m.client, endpoint, store, { key: "c1/good.db", reason: "manual", now });
  const status = await m.client.status(endpoint);
  assert.equal(r.member, status.memberId);
  assert.equal(r.time, now.toISOString());
  assert.equal(r.reason, "manual");
  const judge = await judged(store, r, m.dir);
  assert.equal(judge.totalKey, keys);
  assert.equal(String(judge.revision), r.revision, "the revision recorded is the snapshot's");
  assert.equal(judge.totalSize + 32, r.size, "the database and its 32-byte trailer");
  assert.deepEqual(await listBackups(store, "c1/"), [r], "the store is the record");
}

/** Through the HTTP/JSON gateway instead of gRPC: a backup etcdutl accepts as well. */
async function viaGateway({ m, store, endpoint }: One): Promise<void> {
  const r = await takeBackup(m.client, endpoint, store, {
    key: "c1/gw.db",
    reason: "manual",
    transport: "gateway",
  });
  const judge = await judged(store, r, m.dir);
  assert.equal(judge.totalSize + 32, r.size);
}

/** A stream cut midway: nothing counted, nothing left. */
async function cutStream({ m, store }: One): Promise<void> {
  await fill(m, 12);
  const proxy = cuttingProxy(PROXY_HOST, { host: HOSTS[0]!, port: 2379 }, 9 * MiB);
  try {
    const via = etcdClientUrl(PROXY_HOST, proxy.port);
    const err = await takeBackup(m.client, via, store, { key: "c1/cut.db", reason: "schedule", partSize: 5 * MiB })
      .then(() => undefined, (e) => e);
    assert.ok(err instanceof SnapshotError, String(err));
    assert.equal(err.failure, "broken");
    await nothingLeft(store, "c1/cut");
  } finally {
    await proxy.close();
  }
}

/** A store answering 500 midway through the upload: nothing counted, nothing left. */
async function failingStore({ m, server, store, endpoint }: One): Promise<void> {
  const proxy = failingHttpProxy(
    STORE_HOST,
    { host: STORE_HOST, port: server.port },
    (r) => r.method === "PUT" && /[?&]partNumber=2(&|$)/.test(r.target),
  );
  const failing = server.client({ endpoint: `http://${STORE_HOST}:${proxy.port}` });
  try {
    const err = await takeBackup(m.client, endpoint, { s3: failing, bucket: "backups" }, {
      key: "c1/failed.db",
      reason: "pre-change",
      partSize: 5 * MiB,
    }).then(() => undefined, (e) => e);
    assert.ok(err instanceof S3Error, String(err));
    assert.equal(err.kind, "server");
    assert.equal(err.operation, "UploadPart");
    assert.equal(err.code, "InternalError");
    assert.doesNotMatch(err.message, /failing on purpose/, "no response body in the message");
    await nothingLeft(store, "c1/failed");
  } finally {
    failing.close();
    await proxy.close();
  }
}

/** Wrong keys, a missing bucket, no store: typed errors, nothing left. */
async function refusals({ m, server, store, endpoint }: One): Promise<void> {
  const cases: [string, BackupStore, S3Error["kind"]][] = [
    ["a wrong secret", {
      s3: server.client({ credentials: { accessKeyId: server.accessKeyId, secretAccessKey: "wrong" } }),
      bucket: "backups",
    }, "credentials"],
    ["an unknown key", {
      s3: server.client({ credentials: { accessKeyId: "nobody", secretAccessKey: "wrong" } }),
      bucket: "backups",
    }, "credentials"],
    ["a missing bucket", { s3: server.client(), bucket: "nothere" }, "no-bucket"],
    ["no store", { s3: server.client({ endpoint: `http://${STORE_HOST}:1` }), bucket: "backups" }, "unreachable"],
  ];
  for (const [what, bad, kind] of cases) {
    try {
      const head = await bad.s3.headBucket(bad.bucket).then(() => undefined, (e) => e);
      assert.ok(head instanceof S3Error && head.kind === kind, `${what}: HeadBucket says ${head}`);
      const err = await takeBackup(m.client, endpoint, bad, { key: "c1/refused.db", reason: "manual" })
        .then(() => undefined, (e) => e);
      assert.ok(err instanceof S3Error && err.kind === kind, `${what}: ${err}`);
      assert.equal(err.operation, "CreateMultipartUpload");
      assert.ok(!err.message.includes("wrong"), "no secret in the message");
    } finally {
      bad.s3.close();
    }
  }
  await nothingLeft(store, "c1/refused");
}

/** A database of at least 100 MiB, with bounded memory. */
async function bigDatabase({ m, server, store, endpoint }: One): Promise<void> {
  await fill(m, 100);
  const dbSize = (await m.client.status(endpoint)).dbSize;
  assert.ok(dbSize >= 100 * MiB, `the database holds ${dbSize} bytes`);
  // In a child process of its own with NICO's V8 flags: this one has grown filling etcd.
  const { accessKeyId, secretAccessKey, endpoint: s3Endpoint, region } = server;
  const probe = await runProbe({
    etcd: { ...m.pems, endpoint },
    s3: { endpoint: s3Endpoint, region, accessKeyId, secretAccessKey, bucket: "backups" },
    key: "c1/big.db",
  });
  const r = probe.record!;
  const grew = probe.peakGrowthMiB;
  console.log(`${(r.size / MiB).toFixed(1)} MiB in ${probe.seconds.toFixed(1)} s, RSS grew ${grew.toFixed(1)} MiB`);
  assert.ok(grew < 32, `RSS grew ${grew.toFixed(1)} MiB for a ${(r.size / MiB).toFixed(0)} MiB database`);
  const judge = await judged(store, r, m.dir);
  assert.equal(judge.totalSize + 32, r.size);
  assert.deepEqual((await listBackups(store, "c1/")).map((b) => b.key), ["c1/good.db", "c1/gw.db", "c1/big.db"]);
}

/** Kills the member (SIGKILL) once 10 MiB of its 100+ MiB snapshot have been uploaded: more than buffers can hold. */
async function memberKilled({ m, store, endpoint }: One): Promise<void> {
  const snapshot = await openSnapshot(m.client, endpoint);
  let sent = 0;
  async function* killing() {
    for await (const chunk of snapshot) {
      yield chunk;
      sent += chunk.byteLength;
      if (sent >= 10 * MiB && sent - chunk.byteLength < 10 * MiB) await m.members[0]!.process.kill("SIGKILL");
    }
  }
  const err = await store.s3.upload(store.bucket, "c1/killed.db", killing()).then(() => undefined, (e) => e);
  assert.ok(err instanceof SnapshotError, String(err));
  assert.equal(err.failure, "broken");
  assert.equal(snapshot.sha256, undefined);
  await nothingLeft(store, "c1/killed");
}

Deno.test("one member: a good backup, a cut stream, a failing store, refusals, and 100 MiB with bounded memory", async (t) => {
  await using m = await startMembers(1);
  await using server = await startS3Server({ host: STORE_HOST, buckets: ["backups"] });
  const one: One = { m, server, store: { s3: server.client(), bucket: "backups" }, endpoint: m.endpoints[0]! };
  try {
    await t.step("a good backup, judged by etcdutl, listed back from the store", () => goodBackup(one));
    await t.step(
      "through the HTTP/JSON gateway instead of gRPC: a backup etcdutl accepts as well",
      () => viaGateway(one),
    );
    await t.step("a stream cut midway: nothing counted, nothing left", () => cutStream(one));
    await t.step(
      "a store answering 500 midway through the upload: nothing counted, nothing left",
      () => failingStore(one),
    );
    await t.step("wrong keys, a missing bucket, no store: typed errors, nothing left", () => refusals(one));
    await t.step("a database of at least 100 MiB, with bounded memory", () => bigDatabase(one));
    await t.step(
      "the member killed midway through its snapshot: nothing counted, nothing left",
      () => memberKilled(one),
    );
  } finally {
    one.store.s3.close();
  }
});

Deno.test("three members: the backup comes from a follower, and etcdutl accepts it", async () => {
  await using m = await startMembers(3);
  await using server = await startS3Server({ host: STORE_HOST, buckets: ["backups"] });
  const store: BackupStore = { s3: server.client(), bucket: "backups" };
  try {
    await fill(m, 1);
    const answers = await Promise.all(m.endpoints.map(async (endpoint) => ({
      endpoint,
      status: await m.client.status(endpoint),
    })));
    // A follower, as NICO picks (core/backup/member.ts): it spares the leader.
    const chosen = answers.find((a) => a.status.memberId !== a.status.leader)!;
    assert.ok(chosen, "a follower answered");
    const r = await takeBackup(m.client, chosen.endpoint, store, { key: "c3/f.db", reason: "manual" });
    assert.equal(r.member, chosen.status!.memberId);
    assert.equal(r.endpoint, chosen.endpoint);
    const judge = await judged(store, r, m.dir);
    assert.equal(judge.totalKey, 4);
  } finally {
    store.s3.close();
  }
});

Deno.test("a store over TLS: with its CA a backup goes through; without it, a tls error and nothing left", async () => {
  await using m = await startMembers(1);
  await using server = await startS3Server({ host: STORE_HOST, buckets: ["backups"], tls: true });
  assert.ok(server.endpoint.startsWith("https://"));
  const store: BackupStore = { s3: server.client(), bucket: "backups" };
  const untrusting = server.client({ caPem: "" });
  try {
    const err = await takeBackup(m.client, m.endpoints[0]!, { s3: untrusting, bucket: "backups" }, {
      key: "tls/refused.db",
      reason: "manual",
    }).then(() => undefined, (e) => e);
    assert.ok(err instanceof S3Error && err.kind === "tls", String(err));
    const r = await takeBackup(m.client, m.endpoints[0]!, store, { key: "tls/ok.db", reason: "manual" });
    assert.equal((await judged(store, r, m.dir, server.ca!.certPem)).totalSize + 32, r.size);
    await nothingLeft(store, "tls/refused");
  } finally {
    untrusting.close();
    store.s3.close();
  }
});
