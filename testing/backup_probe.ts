/**
 * One backup in a process of its own, to measure it: the backup test and
 * bench/backup.ts run it as a child (with the V8 flags NICO's binary is
 * compiled with, deploy/v8-flags) and read one JSON line: the record, the
 * seconds it took and how far the process's resident memory rose above
 * where it stood just before (the kernel's high-water mark, reset first
 * through /proc/self/clear_refs, so no spike between samples is missed).
 *
 *   deno run --allow-all testing/backup_probe.ts '<ProbeInput as JSON>'
 *
 * @module
 */
import { EtcdClient } from "../lib/etcd/client.ts";
import { S3Client } from "../lib/s3/client.ts";
import { type BackupRecord, takeBackup } from "../lib/backup.ts";

/** What the probe is told (keys included: it is a child of the test, on loopback). */
export interface ProbeInput {
  etcd: { caPem: string; certPem: string; keyPem: string; endpoint: string };
  s3: { endpoint: string; region: string; accessKeyId: string; secretAccessKey: string; bucket: string };
  key: string;
  transport?: "grpc" | "gateway";
  /** Buffer the parts instead of streaming them. */
  buffered?: boolean;
  /** Upload this file (a snapshot `etcdctl snapshot save` wrote) with the same client instead: the benchmark's yardstick. */
  file?: string;
}

/** What it answers. */
export interface ProbeOutput {
  /** Undefined for a file's upload. */
  record?: BackupRecord;
  seconds: number;
  /** Resident memory just before the backup, MiB. */
  baseMiB: number;
  /** The most it rose above that during the backup, MiB. */
  peakGrowthMiB: number;
}

const statusMiB = (field: "VmRSS" | "VmHWM") =>
  Number(new RegExp(`${field}:\\s+(\\d+)`).exec(Deno.readTextFileSync("/proc/self/status"))![1]) / 1024;

/** Runs the probe in a child with NICO's V8 flags; answers its output. */
export async function runProbe(input: ProbeInput): Promise<ProbeOutput> {
  const flags = (await Deno.readTextFile(new URL("../deploy/v8-flags", import.meta.url))).trim();
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", `--v8-flags=${flags}`, new URL(import.meta.url).pathname, JSON.stringify(input)],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  if (!out.success) throw new Error(`the backup probe failed: ${dec.decode(out.stderr).slice(-2000)}`);
  return JSON.parse(dec.decode(out.stdout).trim().split("\n").pop()!) as ProbeOutput;
}

if (import.meta.main) {
  const input = JSON.parse(Deno.args[0]!) as ProbeInput;
  const etcd = new EtcdClient({ ...input.etcd, timeoutMs: 15_000 });
  const { endpoint, region, accessKeyId, secretAccessKey, bucket } = input.s3;
  const s3 = new S3Client({ endpoint, region, credentials: { accessKeyId, secretAccessKey } });
  // Connections made and code loaded first: what is measured is the backup.
  await etcd.status(input.etcd.endpoint);
  await s3.headBucket(bucket);
  Deno.writeTextFileSync("/proc/self/clear_refs", "5");
  const baseMiB = statusMiB("VmRSS");
  const t0 = performance.now();
  let record: BackupRecord | undefined;
  if (input.file) {
    await using f = await Deno.open(input.file);
    await s3.upload(bucket, input.key, f.readable);
  } else {
    record = await takeBackup(etcd, input.etcd.endpoint, { s3, bucket }, {
      key: input.key,
      reason: "probe",
      ...(input.transport ? { transport: input.transport } : {}),
      ...(input.buffered ? { buffered: true } : {}),
    });
  }
  const seconds = (performance.now() - t0) / 1000;
  const out: ProbeOutput = {
    ...(record ? { record } : {}),
    seconds,
    baseMiB,
    peakGrowthMiB: statusMiB("VmHWM") - baseMiB,
  };
  console.log(JSON.stringify(out));
  etcd.close();
  s3.close();
}
