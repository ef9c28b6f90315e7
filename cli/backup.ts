/**
 * `nico backup <cluster>`: asks NICO for an etcd backup now (a new token in
 * the cluster's `nico.homystack.com/backup-request` annotation), waits for
 * NICO's answer in `status.etcd.backups`, and prints the backup or why it
 * failed. `nico backups <cluster>`: the cluster's backups as the store
 * holds them (time, reason, size, revision, SHA-256, member), read with the
 * store's credentials from the cluster's Secret (your own access to it).
 *
 * @module
 */
import type { KubernetesCluster } from "../crds/kubernetescluster.ts";
import { KUBERNETES_CLUSTERS } from "../crds/kubernetescluster.ts";
import { BACKUP_REQUEST_ANNOTATION } from "../core/contract/labels.ts";
import { isBackupKey } from "../core/backup/keys.ts";
import { describeBackup } from "../core/backup/status.ts";
import { type BackupRecord, listBackups } from "../lib/backup.ts";
import type { KubeClient } from "../lib/kube/client.ts";
import { sleep } from "../lib/runtime/sleep.ts";
import { S3Client } from "../lib/s3/client.ts";
import { loadBackupStore } from "../controllers/cluster/backup/store.ts";
import { commandHelp, type FlagSpec, parseArgs, targetFor, UsageError } from "./flags.ts";

const WAIT_FLAGS: FlagSpec[] = [{ name: "timeout", help: "how long to wait for the backup, in seconds; default 600" }];

export const BACKUP_HELP = commandHelp(
  "nico backup <cluster> [flags]",
  "Asks NICO for an etcd backup of the cluster now (spec.etcd.backup must be set), waits, and prints it.",
  WAIT_FLAGS,
);
export const BACKUPS_HELP = commandHelp(
  "nico backups <cluster> [flags]",
  "Lists the cluster's etcd backups in its store, oldest first: time, reason, size, revision, SHA-256, member.",
  [],
);

/**
 * The backups as a table. Pure.
 *
 * @example
 * ```ts
 * import { backupsTable } from "./backup.ts";
 * backupsTable([]); // "no backups"
 * ```
 */
export function backupsTable(records: readonly BackupRecord[]): string {
  if (!records.length) return "no backups";
  const size = (n: number) => (n >= 1024 * 1024 ? `${(n / 1024 / 1024).toFixed(1)}Mi` : `${Math.ceil(n / 1024)}Ki`);
  const rows = [
    ["TIME", "REASON", "SIZE", "REVISION", "SHA256", "MEMBER", "KEY"],
    ...records.map((r) => [r.time, r.reason, size(r.size), r.revision, r.sha256.slice(0, 12), r.member, r.key]),
  ];
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  return rows.map((row) => row.map((c, i) => (i === row.length - 1 ? c : c.padEnd(widths[i]!))).join("  ")).join("\n");
}

async function clusterOf(client: KubeClient, name: string, namespace: string): Promise<KubernetesCluster> {
  const c = await client.get<KubernetesCluster>(KUBERNETES_CLUSTERS, name, namespace);
  if (!c) throw new Error(`no KubernetesCluster ${name} in namespace ${namespace} (try nico get -A)`);
  if (!c.spec.etcd?.backup) {
    throw new Error(`cluster ${name} keeps no etcd backups: set spec.etcd.backup (docs/backups.md)`);
  }
  return c;
}

/** Entry point of `nico backup`; answers the exit code. */
export async function backup(args: string[]): Promise<number> {
  const { flags, positional } = parseArgs("backup", args, WAIT_FLAGS);
  if (flags.help) return (console.log(BACKUP_HELP), 0);
  if (positional.length !== 1) throw new UsageError("backup needs one cluster name: nico backup <cluster>");
  const timeout = flags.timeout === undefined ? 600 : Number(flags.timeout);
  if (!(timeout > 0)) throw new UsageError("--timeout must be a positive number of seconds");
  const name = positional[0]!;
  const { client, namespace } = targetFor(flags);
  try {
    await clusterOf(client, name, namespace);
    const token = `${new Date().toISOString()}-${crypto.randomUUID().slice(0, 8)}`;
    await client.mergePatch(KUBERNETES_CLUSTERS, name, namespace, {
      metadata: { annotations: { [BACKUP_REQUEST_ANNOTATION]: token } },
    });
    console.error(`asked NICO for a backup of ${namespace}/${name}; waiting (up to ${timeout} s)`);
    const deadline = Date.now() + timeout * 1000;
    while (Date.now() < deadline) {
      const b = (await client.get<KubernetesCluster>(KUBERNETES_CLUSTERS, name, namespace))?.status?.etcd?.backups;
      if (b?.request === token) {
        const taken = b.requestBackup;
        if (taken) return (console.log(`backup ${describeBackup(taken)}, sha256 ${taken.sha256}`), 0);
        console.error(`nico backup: the backup failed: ${b.requestFailure ?? "see EtcdBackedUp"}`);
        return 1;
      }
      await sleep(1_000);
    }
    console.error(`nico backup: no answer within ${timeout} s; see nico describe ${name} (EtcdBackedUp)`);
    return 1;
  } finally {
    await client.close();
  }
}

/** Entry point of `nico backups`; answers the exit code. */
export async function backups(args: string[]): Promise<number> {
  const { flags, positional } = parseArgs("backups", args, []);
  if (flags.help) return (console.log(BACKUPS_HELP), 0);
  if (positional.length !== 1) throw new UsageError("backups needs one cluster name: nico backups <cluster>");
  const name = positional[0]!;
  const { client, namespace } = targetFor(flags);
  try {
    const c = await clusterOf(client, name, namespace);
    const loaded = await loadBackupStore(client, namespace, name, c.spec.etcd!.backup!.store);
    if ("problem" in loaded) throw new Error(loaded.problem.message);
    const s3 = new S3Client(loaded.store.client);
    try {
      const all = await listBackups({ s3, bucket: loaded.store.bucket }, loaded.store.prefix);
      console.log(backupsTable(all.filter((r) => isBackupKey(loaded.store.prefix, name, r.key))));
      return 0;
    } finally {
      s3.close();
    }
  } finally {
    await client.close();
  }
}
