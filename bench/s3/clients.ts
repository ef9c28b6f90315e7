/**
 * S3 clients side by side on the same real store (versitygw on loopback,
 * testing/s3.ts): NICO's lib/s3, and, pinned here and used nowhere else,
 * `aws4fetch` (a SigV4 signer over fetch; the multipart steps written here
 * around it), the AWS SDK's `@aws-sdk/client-s3` with `@aws-sdk/lib-storage`'s
 * `Upload`, and the `minio` client. Each uploads the same 100 MiB stream (32
 * KiB chunks, as a snapshot arrives) by multipart upload with 5 MiB parts (S3's least),
 * in a child process of its own started with NICO's V8 flags
 * (deploy/v8-flags): the time, the child's resident memory before the
 * client's code is loaded and after (with one request made), and its peak
 * growth during the upload (the kernel's high-water mark, reset just
 * before). What each brings in: the npm packages it loads and their size
 * in Deno's cache. Its packages are pinned in this folder's own config and
 * lock (bench/s3/deno.json), so NICO's deno.lock holds none of them. Prints
 * figures; not a test.
 *
 *   deno task bench:s3-clients
 *
 * @module
 */
import { startS3Server } from "../../testing/s3.ts";

const MiB = 1024 * 1024;
const SIZE = 100 * MiB;
const PART = 5 * MiB;
const CLIENTS = ["lib/s3", "aws4fetch", "aws-sdk", "minio"] as const;
type Name = typeof CLIENTS[number];
interface Target {
  endpoint: string;
  host: string;
  port: number;
  accessKeyId: string;
  secretAccessKey: string;
  bucket: string;
}

const memMiB = (field: "VmRSS" | "VmHWM") =>
  Number(new RegExp(`${field}:\\s+(\\d+)`).exec(Deno.readTextFileSync("/proc/self/status"))![1]) / 1024;

/**
 * The stream every client uploads: 32 KiB chunks, the same bytes each time, so a client that keeps chunks until a
 * part is full keeps the right bytes, and no client is charged for garbage the source makes.
 */
async function* source(): AsyncGenerator<Uint8Array> {
  const chunk = crypto.getRandomValues(new Uint8Array(32_768));
  for (let sent = 0; sent < SIZE; sent += chunk.byteLength) yield chunk;
}

/** Makes the client and one request with it; answers the upload of {@link source} to `key`. */
async function prepare(name: Name, t: Target): Promise<(key: string) => Promise<void>> {
  const region = "us-east-1";
  if (name === "lib/s3") {
    const { S3Client } = await import("../../lib/s3/client.ts");
    const s3 = new S3Client({ endpoint: t.endpoint, region, credentials: t });
    await s3.headBucket(t.bucket);
    return async (key) => void await s3.upload(t.bucket, key, source(), { partSize: PART });
  }
  if (name === "aws4fetch") {
    const { AwsClient } = await import("npm:aws4fetch@1.0.20");
    const aws = new AwsClient({ ...t, service: "s3", region });
    const ok = async (res: Response) => {
      if (!res.ok) throw new Error(`aws4fetch: HTTP ${res.status}`);
      return await res.text();
    };
    await ok(await aws.fetch(`${t.endpoint}/${t.bucket}`, { method: "HEAD" }));
    return async (key) => {
      const url = `${t.endpoint}/${t.bucket}/${key}`;
      const id = /<UploadId>([^<]+)</.exec(await ok(await aws.fetch(`${url}?uploads`, { method: "POST" })))![1]!;
      const etags: string[] = [];
      const part = new Uint8Array(PART);
      let fill = 0;
      const send = async (bytes: Uint8Array) => {
        const res = await aws.fetch(`${url}?partNumber=${etags.length + 1}&uploadId=${id}`, {
          method: "PUT",
          body: bytes as Uint8Array<ArrayBuffer>,
        });
        await ok(res);
        etags.push(res.headers.get("etag")!);
      };
      for await (const chunk of source()) {
        part.set(chunk, fill);
        fill += chunk.byteLength;
        if (fill === PART) await send(part), fill = 0;
      }
      if (fill) await send(part.subarray(0, fill));
      const xml = etags.map((e, i) => `<Part><PartNumber>${i + 1}</PartNumber><ETag>${e}</ETag></Part>`).join("");
      const body = `<CompleteMultipartUpload>${xml}</CompleteMultipartUpload>`;
      await ok(await aws.fetch(`${url}?uploadId=${id}`, { method: "POST", body }));
    };
  }
  const { Readable } = await import("node:stream");
  if (name === "aws-sdk") {
    const { S3Client, HeadBucketCommand } = await import("npm:@aws-sdk/client-s3@3.1175.0");
    const { Upload } = await import("npm:@aws-sdk/lib-storage@3.1175.0");
    const client = new S3Client({ endpoint: t.endpoint, region, forcePathStyle: true, credentials: t });
    await client.send(new HeadBucketCommand({ Bucket: t.bucket }));
    return async (key) => {
      const params = { Bucket: t.bucket, Key: key, Body: Readable.from(source()) };
      await new Upload({ client, params, partSize: PART, queueSize: 2 }).done();
    };
  }
  const Minio = await import("npm:minio@8.0.7");
  const client = new Minio.Client({
    endPoint: t.host,
    port: t.port,
    useSSL: false,
    accessKey: t.accessKeyId,
    secretKey: t.secretAccessKey,
    region,
    partSize: PART,
  });
  await client.bucketExists(t.bucket);
  return async (key) => void await client.putObject(t.bucket, key, Readable.from(source()));
}

/** In the child: one client's figures, as one JSON line. */
async function child(name: Name, t: Target) {
  const bare = memMiB("VmRSS");
  const upload = await prepare(name, t);
  const loaded = memMiB("VmRSS");
  Deno.writeTextFileSync("/proc/self/clear_refs", "5");
  const t0 = performance.now();
  await upload(`bench/${name.replace("/", "-")}.bin`);
  const seconds = (performance.now() - t0) / 1000;
  console.log(JSON.stringify({ name, seconds, loadMiB: loaded - bare, peakMiB: memMiB("VmHWM") - loaded }));
}

/** The npm packages a client brings in (its closure in deno.lock) and their size in Deno's cache, MiB. */
async function bringsIn(name: Name): Promise<{ packages: number; mib: number }> {
  const roots = {
    "lib/s3": [],
    aws4fetch: ["aws4fetch@1.0.20"],
    "aws-sdk": ["@aws-sdk/client-s3@3.1175.0", "@aws-sdk/lib-storage@3.1175.0"],
    minio: ["minio@8.0.7"],
  }[name];
  const lock = JSON.parse(await Deno.readTextFile(new URL("./deno.lock", import.meta.url))) as {
    npm: Record<string, { dependencies?: string[] }>;
  };
  const keys = Object.keys(lock.npm);
  /** A dependency as the lock names it (`name`, or `name@version` where several versions are kept) to its key. */
  const keyOf = (dep: string) =>
    lock.npm[dep]
      ? dep
      : keys.find((k) => k.split("_")[0] === dep || k.slice(0, k.lastIndexOf("@")) === dep || k.startsWith(`${dep}@`));
  const seen = new Set<string>();
  const visit = (key: string | undefined) => {
    if (!key) throw new Error(`a dependency deno.lock does not name`);
    const k = key.split("_")[0]!; // peer-dependency suffixes name the same files
    if (seen.has(k) || !lock.npm[key]) return;
    seen.add(k);
    for (const d of lock.npm[key]!.dependencies ?? []) visit(keyOf(d));
  };
  for (const r of roots) visit(keyOf(r));
  const cache = `${Deno.env.get("DENO_DIR") ?? `${Deno.env.get("HOME")}/.cache/deno`}/npm/registry.npmjs.org`;
  let bytes = 0;
  for (const id of seen) {
    const at = id.lastIndexOf("@");
    const dir = `${cache}/${id.slice(0, at)}/${id.slice(at + 1)}`;
    const du = await new Deno.Command("du", { args: ["-sb", dir], stdout: "piped" }).output();
    bytes += Number(new TextDecoder().decode(du.stdout).split("\t")[0]) || 0;
  }
  return { packages: seen.size, mib: bytes / MiB };
}

if (Deno.args[0] === "child") {
  await child(Deno.args[1] as Name, JSON.parse(Deno.args[2]!));
  Deno.exit(0);
}

const ROUNDS = Number(Deno.env.get("ROUNDS") ?? 2);
await using store = await startS3Server({ host: "127.0.177.1", buckets: ["bench"] });
const target: Target = { ...store, bucket: "bench" };
const flags = (await Deno.readTextFile(new URL("../../deploy/v8-flags", import.meta.url))).trim();
console.log(`100 MiB by multipart upload (5 MiB parts) to versitygw on loopback; V8 flags ${flags}; ${ROUNDS} rounds`);
console.log(`load average ${(await Deno.readTextFile("/proc/loadavg")).split(" ").slice(0, 3).join(" ")}`);
for (const name of CLIENTS) {
  const runs = [];
  for (let i = 0; i < ROUNDS; i++) {
    const out = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--allow-all",
        `--v8-flags=${flags}`,
        "--config",
        new URL("./deno.json", import.meta.url).pathname,
        new URL(import.meta.url).pathname,
        "child",
        name,
        JSON.stringify(target),
      ],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const dec = new TextDecoder();
    if (!out.success) throw new Error(`${name}: ${dec.decode(out.stderr).slice(-1500)}`);
    runs.push(JSON.parse(dec.decode(out.stdout).trim().split("\n").pop()!));
  }
  const b = await bringsIn(name);
  const f = (xs: number[], d = 1) => xs.map((x) => x.toFixed(d)).join(" / ");
  console.log(
    `${name.padEnd(10)} ${f(runs.map((r) => r.seconds), 2)} s; code and first request ${
      f(runs.map((r) => r.loadMiB))
    } MiB;` +
      ` peak growth ${f(runs.map((r) => r.peakMiB))} MiB; npm packages ${b.packages} (${b.mib.toFixed(1)} MiB)`,
  );
}
