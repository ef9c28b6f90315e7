/**
 * A backup of a 100 MiB and of a 500 MiB etcd database, against the
 * yardstick of doing it by hand, in the same run on the same parts: one
 * real etcd 3.7.0 member (TLS, client certificates) and a real S3-compatible
 * store (versitygw) on loopback.
 *
 * - NICO: lib/backup.ts's takeBackup (a snapshot streamed over gRPC,
 *   checked, uploaded by multipart with 5 MiB parts), in a child process
 *   with NICO's V8 flags (testing/backup_probe.ts): its time and its peak
 *   resident memory growth (the kernel's high-water mark, reset just
 *   before);
 * - the yardstick: `etcdctl snapshot save` to a local file, then an upload
 *   of that file with the same S3 client (lib/s3), timed together.
 *
 * Each round also runs NICO with its parts buffered (two 5 MiB buffers)
 * instead of streamed, and alternates the order; the ratio is NICO's
 * time over the yardstick's (target ≤ 1.2), and every object is judged by
 * `etcdutl snapshot status`. Prints figures and the load average; not a test.
 *
 *   deno task bench:backup            # ROUNDS=3 SIZES=100,500 by default
 *
 * @module
 */
import { EtcdClient } from "../lib/etcd/client.ts";
import { createCa, issueCert } from "../lib/pki.ts";
import { etcdClientUrl, etcdPeerUrl, startEtcdMember } from "../testing/etcd.ts";
import { etcdctlPath, judgeSnapshot } from "../testing/etcdtools.ts";
import { startS3Server } from "../testing/s3.ts";
import { type ProbeInput, runProbe } from "../testing/backup_probe.ts";
import { eventually } from "../testing/helpers.ts";

const MiB = 1024 * 1024;
const HOST = "127.0.178.1";
const ROUNDS = Number(Deno.env.get("ROUNDS") ?? 3);
const SIZES = (Deno.env.get("SIZES") ?? "100,500").split(",").map(Number);

const load = async () => (await Deno.readTextFile("/proc/loadavg")).split(" ").slice(0, 3).join(" ");
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const dir = await Deno.makeTempDir({ prefix: "nico-bench-backup-" });
const ca = await createCa({ commonName: "bench etcd CA" });
const member = await startEtcdMember({
  name: "m1",
  host: HOST,
  ca,
  initialCluster: `m1=${etcdPeerUrl(HOST)}`,
  state: "new",
  dir: `${dir}/m1`,
});
const cert = await issueCert(ca, { commonName: "nico", usage: "client", days: 1 });
const pems = { caPem: ca.certPem, certPem: cert.certPem, keyPem: cert.keyPem };
for (const [name, text] of Object.entries({ "ca.crt": pems.caPem, "c.crt": pems.certPem, "c.key": pems.keyPem })) {
  await Deno.writeTextFile(`${dir}/${name}`, text, { mode: 0o600 });
}
const endpoint = etcdClientUrl(HOST);
const etcd = new EtcdClient({ ...pems, timeoutMs: 30_000 });
await using store = await startS3Server({ host: "127.0.178.10", buckets: ["bench"] });
const s3 = store.client();
const ctl = await etcdctlPath();
const target: ProbeInput["s3"] = {
  endpoint: store.endpoint,
  region: store.region,
  accessKeyId: store.accessKeyId,
  secretAccessKey: store.secretAccessKey,
  bucket: "bench",
};

/** Adds 1 MiB values (incompressible) until the database holds at least `mib` MiB. */
async function fillTo(mib: number) {
  const value = new Uint8Array(MiB);
  for (let i = 0; (await etcd.status(endpoint)).dbSize < mib * MiB; i++) {
    for (let n = 0; n < 16; n++) {
      for (let at = 0; at < MiB; at += 65_536) crypto.getRandomValues(value.subarray(at, at + 65_536));
      await etcd.call(endpoint, "kv/put", { key: btoa(`/fill/${mib}/${i}/${n}`), value: value.toBase64() });
    }
  }
}

/** Downloads an object and has etcdutl judge it; answers its database size. */
async function judge(key: string): Promise<number> {
  const res = await fetch(await s3.presignGet("bench", key, 600));
  const path = `${dir}/judge.db`;
  await res.body!.pipeTo((await Deno.create(path)).writable);
  const status = await judgeSnapshot(path);
  await Deno.remove(path);
  return status.totalSize;
}

async function nico(key: string, buffered = false) {
  const out = await runProbe({ etcd: { ...pems, endpoint }, s3: target, key, buffered });
  await judge(key);
  return { seconds: out.seconds, peak: out.peakGrowthMiB, size: out.record!.size };
}

async function byHand(key: string) {
  const file = `${dir}/saved.db`;
  const t0 = performance.now();
  const save = await new Deno.Command(ctl, {
    args: [
      `--endpoints=${endpoint}`,
      `--cacert=${dir}/ca.crt`,
      `--cert=${dir}/c.crt`,
      `--key=${dir}/c.key`,
      "snapshot",
      "save",
      file,
    ],
    stdout: "null",
    stderr: "piped",
  }).output();
  if (!save.success) throw new Error(`etcdctl: ${new TextDecoder().decode(save.stderr).slice(-500)}`);
  const saved = (performance.now() - t0) / 1000;
  const up = await runProbe({ etcd: { ...pems, endpoint }, s3: target, key, file });
  await Deno.remove(file);
  await judge(key);
  return { seconds: saved + up.seconds, save: saved, upload: up.seconds };
}

try {
  await eventually("the member answers", () => etcd.status(endpoint), 60_000);
  console.log(`backup benchmark: etcd 3.7.0 (one member, TLS) and versitygw on loopback; ${ROUNDS} rounds a size`);
  console.log(`CPUs ${navigator.hardwareConcurrency}; load average at the start ${await load()}`);
  for (const mib of SIZES) {
    await fillTo(mib);
    const db = (await etcd.status(endpoint)).dbSize / MiB;
    const ratios: number[] = [], peaks: number[] = [], ours: number[] = [], theirs: number[] = [];
    const bufRatios: number[] = [], bufPeaks: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      // Streamed parts (the default), the yardstick, buffered parts; the other way round every other round.
      const first = round % 2 === 0;
      const n0 = first ? await nico(`n-${mib}-${round}.db`) : await nico(`q-${mib}-${round}.db`, true);
      const b = await byHand(`h-${mib}-${round}.db`);
      const n1 = first ? await nico(`q-${mib}-${round}.db`, true) : await nico(`n-${mib}-${round}.db`);
      const [n, q] = first ? [n0, n1] : [n1, n0];
      ratios.push(n.seconds / b.seconds), peaks.push(n.peak), ours.push(n.seconds), theirs.push(b.seconds);
      bufRatios.push(q.seconds / b.seconds), bufPeaks.push(q.peak);
      console.log(
        `  ${mib} MiB round ${round + 1}: NICO ${n.seconds.toFixed(2)} s (peak RSS growth ${n.peak.toFixed(1)} MiB),` +
          ` etcdctl save ${b.save.toFixed(2)} s + upload ${b.upload.toFixed(2)} s = ${b.seconds.toFixed(2)} s,` +
          ` ratio ${(n.seconds / b.seconds).toFixed(2)}; buffered parts ${q.seconds.toFixed(2)} s` +
          ` (${q.peak.toFixed(1)} MiB, ratio ${(q.seconds / b.seconds).toFixed(2)}); load ${await load()}`,
      );
    }
    console.log(
      `${mib} MiB (database ${db.toFixed(0)} MiB): NICO median ${median(ours).toFixed(2)} s, by hand median ` +
        `${median(theirs).toFixed(2)} s, ratio median ${median(ratios).toFixed(2)} (worst ${
          Math.max(...ratios).toFixed(2)
        }),` +
        ` peak RSS growth median ${median(peaks).toFixed(1)} MiB (worst ${Math.max(...peaks).toFixed(1)});` +
        ` buffered parts: ratio median ${median(bufRatios).toFixed(2)}, peak median ${median(bufPeaks).toFixed(1)} MiB`,
    );
  }
} finally {
  s3.close();
  etcd.close();
  await member.stop();
  await Deno.remove(dir, { recursive: true }).catch(() => {});
}
