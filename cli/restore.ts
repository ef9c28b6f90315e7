/**
 * `nico restore <cluster> --from <backup|latest>`: shows what a restore of
 * etcd would rewind (the backup's time and revision, the revision etcd
 * answers with now when it answers), asks unless `--yes`, then sets
 * `spec.etcd.restore` with a fresh request id; NICO does the rest
 * (docs/recovery.md), watched with `nico describe`. The backup is looked up
 * in the cluster's own store with your access to its Secret; the current
 * revision is read with a client certificate issued from the cluster's etcd
 * CA where you may read its key (else it is left out).
 *
 * @module
 */
import type { KubernetesCluster } from "../crds/kubernetescluster.ts";
import { KUBERNETES_CLUSTERS } from "../crds/kubernetescluster.ts";
import { LATEST_BACKUP } from "../crds/restore.ts";
import { isBackupKey } from "../core/backup/keys.ts";
import { etcdCaKeySecret, etcdCaSecret } from "../core/contract/names.ts";
import { ETCD_CLIENT_PORT } from "../core/render/desired.ts";
import { type BackupRecord, listBackups } from "../lib/backup.ts";
import { decodeBase64 } from "../lib/encoding.ts";
import { EtcdClient } from "../lib/etcd/client.ts";
import type { KubeClient } from "../lib/kube/client.ts";
import type { Secret } from "../lib/kube/meta.ts";
import { SECRETS } from "../lib/kube/resources.ts";
import { S3Client } from "../lib/s3/client.ts";
import { loadBackupStore } from "../controllers/cluster/backup/store.ts";
import { etcdClientCertificate } from "../controllers/cluster/etcd/trust.ts";
import { commandHelp, type FlagSpec, parseArgs, targetFor, UsageError } from "./flags.ts";

const FLAGS: FlagSpec[] = [
  { name: "from", help: "the backup to restore: its key as nico backups lists it, or latest (required)" },
  {
    name: "source",
    help:
      "another cluster of the namespace whose store holds the backup (spec.etcd.restore.from); latest is its newest",
  },
  { name: "yes", short: "y", boolean: true, help: "do not ask before setting spec.etcd.restore" },
  { name: "rewind-healthy", boolean: true, help: "restore although etcd has a healthy quorum (rewinds its changes)" },
];

export const RESTORE_HELP = commandHelp(
  "nico restore <cluster> --from <backup|latest> [flags]",
  "Restores the cluster's etcd from a backup (docs/recovery.md): shows what would be rewound, asks, then sets " +
    "spec.etcd.restore with a new request id.",
  FLAGS,
);

/** What a restore would rewind. */
export interface RestorePreview {
  cluster: string;
  backup: Pick<BackupRecord, "key" | "time" | "revision" | "reason">;
  /** The revision etcd answers with now; undefined: it does not answer (or it could not be asked). */
  current?: number | undefined;
  /** Why the current revision is unknown. */
  why?: string | undefined;
  /** NICO last saw a healthy quorum (status.etcd). */
  healthy: boolean;
}

/**
 * What a restore would rewind, for people. Pure.
 *
 * @example
 * ```ts
 * import { previewText } from "./restore.ts";
 * const backup = { key: "ns/c/c-1.db", time: "2026-12-04T12:00:00Z", revision: "120", reason: "manual" };
 * previewText({ cluster: "c", backup, current: 180, healthy: false }).split("\n")[2];
 * // "etcd now:   revision 180: the 60 revisions since the backup are rewound"
 * ```
 */
export function previewText(p: RestorePreview): string {
  const b = p.backup;
  const now = p.current === undefined
    ? `does not answer${p.why ? ` (${p.why})` : ""}: whatever it held after the backup is lost either way`
    : `revision ${p.current}: the ${
      Math.max(0, p.current - Number(b.revision))
    } revisions since the backup are rewound`;
  return [
    `restore etcd of cluster ${p.cluster} from ${b.key}`,
    `backup:     taken ${b.time} (${b.reason}) at revision ${b.revision}`,
    `etcd now:   ${now}`,
    ...(p.healthy ? ["warning:    NICO sees a healthy quorum: every change since the backup is undone"] : []),
  ].join("\n");
}

/** A request id nobody used: the time, and a few random letters. */
export function newRequestId(now: Date): string {
  const t = now.toISOString().replace(/[-:]/g, "").replace(/\.\d+Z$/, "").replace("T", "-").toLowerCase();
  return `restore-${t}-${crypto.randomUUID().slice(0, 8)}`;
}

/** The backup `from` names in the store of cluster `c` (whose backups they are). */
async function backupOf(client: KubeClient, c: KubernetesCluster, from: string): Promise<BackupRecord> {
  const name = c.metadata.name;
  const spec = c.spec.etcd?.backup;
  if (!spec) throw new Error(`cluster ${name} keeps no etcd backups: set spec.etcd.backup (docs/backups.md)`);
  const loaded = await loadBackupStore(client, c.metadata.namespace!, name, spec.store);
  if ("problem" in loaded) throw new Error(loaded.problem.message);
  const s3 = new S3Client(loaded.store.client);
  try {
    const all = await listBackups({ s3, bucket: loaded.store.bucket }, loaded.store.prefix);
    const found = from === LATEST_BACKUP
      ? all.filter((r) => isBackupKey(loaded.store.prefix, name, r.key)).at(-1)
      : all.find((r) => r.key === from);
    if (!found) throw new Error(`no backup ${from} of cluster ${name}; nico backups ${name} lists them`);
    return found;
  } finally {
    s3.close();
  }
}

/** The revision a member of the cluster answers with, or why it cannot be asked. */
async function currentRevision(client: KubeClient, c: KubernetesCluster): Promise<{ rev?: number; why?: string }> {
  const ns = c.metadata.namespace!;
  const [crt, key] = await Promise.all([
    client.get<Secret>(SECRETS, etcdCaSecret(c.metadata.name), ns).catch(() => undefined),
    client.get<Secret>(SECRETS, etcdCaKeySecret(c.metadata.name), ns).catch(() => undefined),
  ]);
  const text = (s: Secret | undefined, k: string) => s?.data?.[k] && decodeBase64(s.data[k]);
  const certPem = text(crt, "tls.crt");
  const keyPem = text(key, "tls.key");
  if (!certPem || !keyPem) return { why: "the etcd CA's Secrets cannot be read with your access" };
  const cert = await etcdClientCertificate({ certPem, keyPem });
  const etcd = new EtcdClient({ caPem: certPem, certPem: cert.certPem, keyPem: cert.keyPem, timeoutMs: 3_000 });
  const port = c.spec.etcd?.clientPort ?? ETCD_CLIENT_PORT;
  const hosts = (c.status?.etcd?.members ?? []).map((m) => m.peerURL && new URL(m.peerURL).host.replace(/:\d+$/, ""));
  try {
    for (const host of hosts.filter((h) => h)) {
      try {
        return { rev: (await etcd.count(`https://${host}:${port}`)).revision };
      } catch {
        // the next member
      }
    }
    return { why: hosts.length ? "no member answered" : "NICO sees no member" };
  } finally {
    etcd.close();
  }
}

/** Entry point of `nico restore`; answers the exit code. */
export async function restore(args: string[]): Promise<number> {
  const { flags, positional } = parseArgs("restore", args, FLAGS);
  if (flags.help) return (console.log(RESTORE_HELP), 0);
  if (positional.length !== 1) throw new UsageError("restore needs one cluster name: nico restore <cluster>");
  if (typeof flags.from !== "string") throw new UsageError("restore needs --from <backup key|latest>");
  const name = positional[0]!;
  const { client, namespace } = targetFor(flags);
  try {
    const c = await client.get<KubernetesCluster>(KUBERNETES_CLUSTERS, name, namespace);
    if (!c) throw new Error(`no KubernetesCluster ${name} in namespace ${namespace} (try nico get -A)`);
    const source = typeof flags.source === "string" && flags.source !== name ? flags.source : undefined;
    const holder = source ? await client.get<KubernetesCluster>(KUBERNETES_CLUSTERS, source, namespace) : c;
    if (!holder) throw new Error(`--source: no KubernetesCluster ${source} in namespace ${namespace}`);
    const backup = await backupOf(client, holder, flags.from);
    const { rev, why } = await currentRevision(client, c);
    const e = c.status?.etcd;
    const healthy = e !== undefined && e.voters > 0 && e.healthyVoters >= e.quorum;
    console.log(previewText({ cluster: `${namespace}/${name}`, backup, current: rev, why, healthy }));
    if (healthy && flags["rewind-healthy"] !== true) {
      console.error("nico restore: NICO refuses to rewind a healthy cluster; add --rewind-healthy if you mean it");
      return 1;
    }
    if (flags.yes !== true) {
      if (!Deno.stdin.isTerminal()) throw new UsageError("not a terminal to ask on: add --yes to restore");
      if (prompt("type yes to restore:")?.trim() !== "yes") return (console.error("nothing changed"), 1);
    }
    const requestId = newRequestId(new Date());
    const rewindHealthy = flags["rewind-healthy"] === true;
    const request = { requestId, backup: backup.key, rewindHealthy, from: source ?? null };
    await client.mergePatch(KUBERNETES_CLUSTERS, name, namespace, { spec: { etcd: { restore: request } } });
    console.log(`asked NICO to restore (request ${requestId}); watch it with nico describe ${name}`);
    return 0;
  } finally {
    await client.close();
  }
}
