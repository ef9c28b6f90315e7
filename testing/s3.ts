/**
 * A real S3-compatible object store for the tests, the demo and the
 * benchmarks: versitygw (Apache-2.0, built from its pinned Go module by
 * testing/s3/install.sh) with its posix backend, on a free loopback port,
 * with a data folder and keys of its own, under the process guard (it
 * cannot outlive the process that started it). Optionally over TLS, with a
 * certificate from a CA of its own.
 *
 * @example
 * ```ts ignore
 * await using store = await startS3Server({ buckets: ["backups"] });
 * const s3 = store.client();
 * await s3.headBucket("backups");
 * ```
 *
 * @module
 */
import { S3Client, type S3ClientOptions } from "../lib/s3/client.ts";
import { createCa, issueCert, type KeyPair } from "../lib/pki.ts";
import { type Guarded, startGuarded } from "./envtest/process.ts";
import { installed } from "./installed.ts";

/** The versitygw binary's path; the first call may build it (flock-guarded, a minute or two once). */
export const versitygwPath: () => Promise<string> = installed(new URL("./s3/install.sh", import.meta.url));

export interface S3ServerOptions {
  /** The loopback address to listen on (default 127.0.0.1). */
  host?: string;
  /** Buckets to create once it answers. */
  buckets?: string[];
  /** Serve HTTPS with a certificate from a CA of its own ({@link S3Server.ca}). */
  tls?: boolean;
  /** The region it signs for (default us-east-1). */
  region?: string;
}

/** A running store. */
export interface S3Server extends AsyncDisposable {
  /** `http://127.0.0.1:<port>` (or https). */
  endpoint: string;
  host: string;
  port: number;
  region: string;
  /** Its root keys. */
  accessKeyId: string;
  secretAccessKey: string;
  /** The folder under which each bucket is a folder (posix backend). */
  dataDir: string;
  /** The CA of its certificate, with `tls`. */
  ca?: KeyPair;
  process: Guarded;
  /** A client with the root keys (or `over` some options, such as other keys or another endpoint). */
  client(over?: Partial<S3ClientOptions>): S3Client;
  createBucket(name: string): Promise<void>;
  /** Stops it and removes its folder. */
  stop(): Promise<void>;
}

/** A port on `host` that was free a moment ago. */
function freePortOn(host: string): number {
  const l = Deno.listen({ hostname: host, port: 0 });
  const { port } = l.addr as Deno.NetAddr;
  l.close();
  return port;
}

/** Starts a store; answers once it accepts requests and the buckets exist. */
export async function startS3Server(o: S3ServerOptions = {}): Promise<S3Server> {
  const bin = await versitygwPath();
  const host = o.host ?? "127.0.0.1";
  if (!/^127\./.test(host)) throw new Error(`the test store listens on loopback only, not ${host}`);
  const region = o.region ?? "us-east-1";
  const root = await Deno.makeTempDir({ prefix: "nico-s3-" });
  const dataDir = `${root}/data`;
  await Deno.mkdir(dataDir);
  const accessKeyId = `nico${crypto.randomUUID().slice(0, 8)}`;
  const secretAccessKey = crypto.randomUUID() + crypto.randomUUID();
  const port = freePortOn(host);
  const args = [`--port=${host}:${port}`, `--region=${region}`, "--quiet"];
  let ca: KeyPair | undefined;
  if (o.tls) {
    ca = await createCa({ commonName: "nico test store CA" });
    const cert = await issueCert(ca, { commonName: host, ipAddresses: [host], usage: "server", days: 1 });
    await Deno.writeTextFile(`${root}/tls.crt`, cert.certPem);
    await Deno.writeTextFile(`${root}/tls.key`, cert.keyPem, { mode: 0o600 });
    args.push(`--cert=${root}/tls.crt`, `--key=${root}/tls.key`);
  }
  // The keys go in the environment, not on the command line (where `ps` shows them).
  const process = startGuarded("versitygw", bin, [...args, "posix", dataDir], `${root}/versitygw.log`, {
    ROOT_ACCESS_KEY_ID: accessKeyId,
    ROOT_SECRET_ACCESS_KEY: secretAccessKey,
  });
  const endpoint = `${o.tls ? "https" : "http"}://${host}:${port}`;
  let stopped: Promise<void> | undefined;
  const stop = () =>
    stopped ??= (async () => {
      await process.stop();
      await Deno.remove(root, { recursive: true }).catch(() => {});
    })();
  const server: S3Server = {
    endpoint,
    host,
    port,
    region,
    accessKeyId,
    secretAccessKey,
    dataDir,
    ...(ca ? { ca } : {}),
    process,
    client: (over = {}) =>
      new S3Client({
        endpoint,
        region,
        credentials: { accessKeyId, secretAccessKey },
        ...(ca ? { caPem: ca.certPem } : {}),
        ...over,
      }),
    async createBucket(name) {
      const s3 = server.client();
      try {
        const res = await s3.request({ method: "PUT", operation: "CreateBucket", bucket: name });
        await res.body?.cancel();
      } finally {
        s3.close();
      }
    },
    stop,
    [Symbol.asyncDispose]: stop,
  };
  globalThis.addEventListener("unload", () => process.killNow());
  try {
    await answers(server);
    for (const b of o.buckets ?? []) await server.createBucket(b);
  } catch (err) {
    const tail = await process.tail();
    await stop();
    throw new Error(`versitygw did not start: ${err}\n${tail}`);
  }
  return server;
}

/** Waits (up to 30 s: a loaded machine) until the store answers a listing of its buckets. */
async function answers(server: S3Server): Promise<void> {
  const deadline = Date.now() + 30_000;
  const s3 = server.client({ timeoutMs: 2_000 });
  try {
    while (true) {
      const exited = await Promise.race([server.process.exited, new Promise((r) => setTimeout(r, 50, false))]);
      if (exited) throw new Error(`it exited (${JSON.stringify(exited)})`);
      try {
        const res = await s3.request({ method: "GET", operation: "ListBuckets", bucket: "" });
        await res.body?.cancel();
        return;
      } catch (err) {
        if (Date.now() > deadline) throw err;
      }
    }
  } finally {
    s3.close();
  }
}
