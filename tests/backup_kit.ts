/**
 * What the backup scenarios share (tests/integration/backup_*_test.ts): a real store (versitygw) on the
 * scenario's loopback block with a credentials Secret in its namespace, the cluster's `spec.etcd.backup`, the
 * backups the store holds, each judged by etcd's own `etcdutl`, and the on-demand request.
 */
import assert from "node:assert/strict";
import type { KubernetesCluster } from "../crds/kubernetescluster.ts";
import type { BackupRecordView } from "../core/backup/state.ts";
import { KUBERNETES_CLUSTERS } from "../crds/kubernetescluster.ts";
import { BACKUP_REQUEST_ANNOTATION } from "../core/contract/labels.ts";
import { type BackupRecord, listBackups } from "../lib/backup.ts";
import { encodeBase64 } from "../lib/encoding.ts";
import { SECRETS } from "../lib/kube/resources.ts";
import { EtcdClient } from "../lib/etcd/client.ts";
import { issueCert } from "../lib/pki.ts";
import { endpoints, etcdSettled } from "./etcd_kit.ts";
import { judgeSnapshot, type SnapshotStatus } from "../testing/etcdtools.ts";
import { type S3Server, startS3Server } from "../testing/s3.ts";
import type { Scenario } from "../testing/scenario.ts";

export const BUCKET = "etcd";

/** Starts a store on `host` (stopped with the scenario) and puts its keys in Secret `s3` of the namespace. */
export async function storeFor(s: Scenario, host: string): Promise<S3Server> {
  const store = await startS3Server({ host, buckets: [BUCKET] });
  s.defer(() => store.stop());
  await secret(s, "s3", { accessKeyId: store.accessKeyId, secretAccessKey: store.secretAccessKey });
  return store;
}

/**
 * A store on 127.0.`block`.250 and cluster c on cp-1 (and `workers`) backing up into it, once Ready with etcd of one
 * healthy member; answers the store.
 */
export async function backedUpCluster(
  s: Scenario,
  block: number,
  workers: string[] = [],
  backup: Record<string, unknown> = {},
): Promise<S3Server> {
  const store = await storeFor(s, `127.0.${block}.250`);
  await s.createCluster({
    gitRepo: "https://git.example.test/flake.git",
    controlPlane: { machines: ["cp-1"] },
    dataPlane: { machines: workers },
    etcd: { backup: backupSpec(store, backup) },
  });
  await s.until("Ready, etcd of 1 healthy", etcdSettled(1), 180_000);
  return store;
}

/** Creates Secret `name` in the scenario's namespace with `data`. */
export async function secret(s: Scenario, name: string, data: Record<string, string>): Promise<void> {
  const encoded = Object.fromEntries(Object.entries(data).map(([k, v]) => [k, encodeBase64(v)]));
  await s.client.create(SECRETS, {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name, namespace: s.ns },
    data: encoded,
  });
}

/** `spec.etcd.backup` for `store`, with `over` on top. */
export function backupSpec(store: S3Server, over: Record<string, unknown> = {}) {
  return { store: { endpoint: store.endpoint, bucket: BUCKET, credentialsSecret: { name: "s3" } }, ...over };
}

/** The cluster's backups in the store (the default prefix), oldest first. */
export async function stored(s: Scenario, store: S3Server, cluster = "c"): Promise<BackupRecord[]> {
  const s3 = store.client();
  try {
    return await listBackups({ s3, bucket: BUCKET }, `${s.ns}/${cluster}/`);
  } finally {
    s3.close();
  }
}

/** Downloads each backup and has etcdutl judge it (status, and a restore that checks the SHA-256 trailer). */
export async function judgeAll(store: S3Server, records: BackupRecord[]): Promise<SnapshotStatus[]> {
  const dir = await Deno.makeTempDir({ prefix: "nico-backup-judge-" });
  const s3 = store.client();
  try {
    const out: SnapshotStatus[] = [];
    for (const r of records) {
      const res = await fetch(await s3.presignGet(BUCKET, r.key, 300));
      assert.equal(res.status, 200, r.key);
      const path = `${dir}/${r.key.replaceAll("/", "_")}`;
      await res.body!.pipeTo((await Deno.create(path)).writable);
      assert.equal((await Deno.stat(path)).size, r.size, `${r.key}: its size as recorded`);
      assert.equal((await Deno.readFile(path)).subarray(-32).toHex(), r.sha256, `${r.key}: its trailer as recorded`);
      out.push(await judgeSnapshot(path));
    }
    return out;
  } finally {
    s3.close();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

/**
 * Writes `n` keys into cluster c's etcd (without `stackedEtcd` the hosts' members hold no Kubernetes data), so a
 * snapshot has something to show; answers the revision after the last write.
 */
export async function fillEtcd(s: Scenario, block: number, members: number, n: number): Promise<number> {
  const ca = s.workloads.etcd.ca(s.ns, "c");
  if (!ca) throw new Error("the simulated hosts run no etcd for cluster c");
  const cert = await issueCert(ca, { commonName: "test", usage: "client", days: 1 });
  const client = new EtcdClient({ caPem: ca.certPem, certPem: cert.certPem, keyPem: cert.keyPem, timeoutMs: 10_000 });
  try {
    const at = endpoints(block, members)[0]!;
    let revision = 0;
    for (let i = 0; i < n; i++) {
      const put = await client.call(at, "kv/put", { key: btoa(`/test/key-${i}`), value: btoa(`value ${i}`) });
      revision = Number((put.header as { revision?: string } | undefined)?.revision ?? 0);
    }
    return revision;
  } finally {
    client.close();
  }
}

/** Asks NICO for a backup now (what `nico backup` does) and waits for its answer in status. */
export async function requestBackup(s: Scenario, token: string, timeoutMs = 90_000): Promise<KubernetesCluster> {
  await s.client.mergePatch(KUBERNETES_CLUSTERS, "c", s.ns, {
    metadata: { annotations: { [BACKUP_REQUEST_ANNOTATION]: token } },
  });
  return await s.until(`backup ${token} answered`, (c) => c.status?.etcd?.backups?.request === token, timeoutMs);
}

/** Asks NICO for a backup and answers the one it took for the request (a scheduled one may be newer); throws on a failure. */
export async function requestedBackup(s: Scenario, token: string, timeoutMs = 90_000): Promise<BackupRecordView> {
  const b = (await requestBackup(s, token, timeoutMs)).status?.etcd?.backups;
  if (!b?.requestBackup) throw new Error(`backup ${token} failed: ${b?.requestFailure ?? JSON.stringify(b)}`);
  return b.requestBackup;
}
