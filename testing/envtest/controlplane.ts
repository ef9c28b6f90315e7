/**
 * NICO's envtest: a real etcd and kube-apiserver on loopback, with
 * generated certificates and an admin kubeconfig (client certificate).
 *
 * @example
 * ```ts
 * await using cp = await startControlPlane();
 * const ns = await cp.namespace("demo");
 * ```
 * @module
 */
import { parseAllDocuments } from "yaml";
import { KubeClient, type KubeObject } from "../../lib/kube/client.ts";
import { applyCrds } from "../../lib/kube/crd.ts";
import { encodeBase64 } from "../../lib/encoding.ts";
import { NAMESPACES } from "../../lib/kube/resources.ts";
import { createCa, issueCert, type KeyPair } from "../../lib/pki.ts";
import { freePort, type Guarded, startGuarded } from "./process.ts";
import { installed } from "../installed.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

/** The CRDs every test control plane gets: NICO's own and the NIO fixtures. */
export const DEFAULT_CRDS = [`${ROOT}crds/kubernetescluster.yaml`, `${ROOT}testing/nio-crds.yaml`];

/** The folder with kube-apiserver, etcd and kubectl, built once and cached. */
export const binDir: () => Promise<string> = installed(new URL("./install.sh", import.meta.url));

const Command = Deno.Command;

export interface ControlPlaneOptions {
  /** CRD manifests to install and wait for (default: {@link DEFAULT_CRDS}). */
  crds?: string[];
  /** Extra kube-apiserver flags. */
  apiserverArgs?: string[];
  /** The CA for serving and client certificates (default: a new one). */
  ca?: KeyPair;
  /** Loopback address to serve on (default 127.0.0.1). */
  host?: string;
  /** Port to serve on (default: a free one). */
  port?: number;
  /**
   * Also run kube-controller-manager with these controllers (for example
   * `["disruption"]`, which keeps PodDisruptionBudget status current).
   */
  controllers?: string[];
  /**
   * Store the data in these etcd members instead of a private etcd (as a k3s or kubeadm control plane keeps it in
   * its stacked etcd): their client URLs and a client certificate their CA signed.
   */
  etcd?: ExternalEtcd;
}

/** An etcd the API server keeps its data in, reached over TLS with a client certificate. */
export interface ExternalEtcd {
  /** Client URLs (`https://host:2379`), all of the same cluster. */
  servers: string[];
  /** The etcd CA (verifies the members' serving certificates). */
  caPem: string;
  /** The API server's client certificate and key, signed by the etcd CA. */
  client: KeyPair;
}

export interface ControlPlane extends AsyncDisposable {
  /** A folder for this handle's files: the control plane's own, or a scratch folder of a connected handle. */
  dir: string;
  server: string;
  kubeconfigPath: string;
  /** An admin client. */
  client: KubeClient;
  /** The CA that signs the API server's and clients' certificates. */
  ca: KeyPair;
  bin: string;
  /** A fresh namespace, named `<prefix>-<random>`. */
  namespace(prefix?: string): Promise<string>;
  /** Runs kubectl against this control plane. */
  kubectl(
    args: string[],
    opts?: { stdin?: string; kubeconfig?: string },
  ): Promise<{ code: number; stdout: string; stderr: string }>;
  /** Writes a kubeconfig for a client certificate signed by the control plane's CA. */
  userKubeconfig(user: string, groups?: string[]): Promise<string>;
  stop(): Promise<void>;
  /** Stops at once and synchronously, for an `unload` handler: kills the processes, removes the folder. */
  stopNow(): void;
}

/** Writes a kubeconfig file with client-certificate auth. */
export function kubeconfigYaml(server: string, caPem: string, user: string, client: KeyPair): string {
  const b64 = encodeBase64;
  return JSON.stringify(
    {
      apiVersion: "v1",
      kind: "Config",
      clusters: [{ name: "envtest", cluster: { server, "certificate-authority-data": b64(caPem) } }],
      users: [{
        name: user,
        user: { "client-certificate-data": b64(client.certPem), "client-key-data": b64(client.keyPem) },
      }],
      contexts: [{ name: "envtest", context: { cluster: "envtest", user } }],
      "current-context": "envtest",
    },
    null,
    2,
  );
}

/** Starts etcd and kube-apiserver, installs CRDs and waits until ready. */
export async function startControlPlane(opts: ControlPlaneOptions = {}): Promise<ControlPlane> {
  const bin = await binDir();
  const dir = await Deno.makeTempDir({ prefix: "nico-envtest-" });
  const procs: Guarded[] = [];
  let adminClient: KubeClient | undefined;
  const stop = async () => {
    await adminClient?.close();
    for (const p of procs.reverse()) await p.stop();
    procs.length = 0;
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  };
  const stopNow = () => {
    for (const p of procs) p.killNow();
    procs.length = 0;
    try {
      Deno.removeSync(dir, { recursive: true });
    } catch { /* already gone, or a process was still writing: the OS temp folder keeps it */ }
  };
  try {
    const host = opts.host ?? "127.0.0.1";
    const ca = opts.ca ?? await createCa({ commonName: "nico-envtest-ca" });
    const admin = await writeCertificates(dir, ca, host);
    const etcd = opts.etcd ? undefined : startEtcd(bin, dir);
    if (etcd) procs.push(etcd.proc);
    const etcdArgs = etcd ? [`--etcd-servers=http://127.0.0.1:${etcd.port}`] : await externalEtcdArgs(dir, opts.etcd!);
    const port = opts.port ?? freePort();
    const apiserver = startApiserver(bin, dir, { host, port, extra: [...etcdArgs, ...opts.apiserverArgs ?? []] });
    procs.push(apiserver);

    const server = `https://${host}:${port}`;
    const kubeconfigPath = `${dir}/admin.kubeconfig`;
    await Deno.writeTextFile(kubeconfigPath, kubeconfigYaml(server, ca.certPem, "admin", admin), { mode: 0o600 });
    const client = KubeClient.load(kubeconfigPath, { userAgent: "nico-tests", fieldManager: "nico-tests" });
    adminClient = client;
    await waitReady(client, procs);
    await installCrds(client, opts.crds ?? DEFAULT_CRDS);
    if (opts.controllers?.length) {
      procs.push(startGuarded("kube-controller-manager", `${bin}/kube-controller-manager`, [
        `--kubeconfig=${kubeconfigPath}`,
        `--controllers=${opts.controllers.join(",")}`,
        "--leader-elect=false",
        "--secure-port=0",
        // The node lifecycle controller (where asked for) marks a Node whose kubelet stopped renewing its Lease
        // Unknown after 20 s instead of 50: the same behaviour, sooner.
        "--node-monitor-grace-period=20s",
        "--v=0",
      ], `${dir}/kube-controller-manager.log`));
    }

    return controlPlaneHandle({ dir, server, kubeconfigPath, client, ca, bin }, stop, stopNow);
  } catch (err) {
    const logs = await Promise.all(procs.map(async (p) => `--- ${p.name} ---\n${await p.tail()}`));
    await stop();
    throw new Error(`Cannot start the local control plane: ${(err as Error).message}\n${logs.join("\n")}`, {
      cause: err,
    });
  }
}

/** Writes the API server's serving certificate and the service-account keys into `dir`; answers the admin's. */
async function writeCertificates(dir: string, ca: KeyPair, host: string): Promise<KeyPair> {
  const serving = await issueCert(ca, {
    commonName: "kube-apiserver",
    dnsNames: ["localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"],
    ipAddresses: [...new Set(["127.0.0.1", host, "10.0.0.1"])],
    usage: "server",
    days: 30,
  });
  const admin = await issueCert(ca, {
    commonName: "admin",
    organizations: ["system:masters"],
    usage: "client",
    days: 30,
  });
  const saKey = await createCa({ commonName: "service-accounts" });
  const files: Record<string, string> = {
    "ca.crt": ca.certPem,
    "apiserver.crt": serving.certPem,
    "apiserver.key": serving.keyPem,
    "sa.key": saKey.keyPem,
    "sa.crt": saKey.certPem,
  };
  for (const [name, text] of Object.entries(files)) await Deno.writeTextFile(`${dir}/${name}`, text, { mode: 0o600 });
  return admin;
}

/** Starts etcd on free loopback ports, its data in `dir`; answers the process and its client port. */
function startEtcd(bin: string, dir: string): { proc: Guarded; port: number } {
  const etcdPort = freePort();
  const peerPort = freePort();
  const proc = startGuarded("etcd", `${bin}/etcd`, [
    "--name=default",
    `--data-dir=${dir}/etcd`,
    `--listen-client-urls=http://127.0.0.1:${etcdPort}`,
    `--advertise-client-urls=http://127.0.0.1:${etcdPort}`,
    `--listen-peer-urls=http://127.0.0.1:${peerPort}`,
    `--initial-advertise-peer-urls=http://127.0.0.1:${peerPort}`,
    `--initial-cluster=default=http://127.0.0.1:${peerPort}`,
    "--unsafe-no-fsync=true",
    "--log-level=warn",
  ], `${dir}/etcd.log`);
  return { proc, port: etcdPort };
}

/** Writes the external etcd's CA and the client certificate into `dir`; answers kube-apiserver's flags for it. */
async function externalEtcdArgs(dir: string, etcd: ExternalEtcd): Promise<string[]> {
  const files = {
    "etcd-ca.crt": etcd.caPem,
    "etcd-client.crt": etcd.client.certPem,
    "etcd-client.key": etcd.client.keyPem,
  };
  for (const [name, text] of Object.entries(files)) await Deno.writeTextFile(`${dir}/${name}`, text, { mode: 0o600 });
  return [
    `--etcd-servers=${etcd.servers.join(",")}`,
    `--etcd-cafile=${dir}/etcd-ca.crt`,
    `--etcd-certfile=${dir}/etcd-client.crt`,
    `--etcd-keyfile=${dir}/etcd-client.key`,
  ];
}

/** Starts kube-apiserver on `host:port` with the certificates in `dir`; `extra` names its etcd, and more. */
function startApiserver(bin: string, dir: string, at: { host: string; port: number; extra: string[] }): Guarded {
  return startGuarded("kube-apiserver", `${bin}/kube-apiserver`, [
    `--bind-address=${at.host}`,
    `--advertise-address=${at.host}`,
    `--secure-port=${at.port}`,
    `--cert-dir=${dir}`,
    `--tls-cert-file=${dir}/apiserver.crt`,
    `--tls-private-key-file=${dir}/apiserver.key`,
    `--client-ca-file=${dir}/ca.crt`,
    "--authorization-mode=RBAC",
    "--service-account-issuer=https://kubernetes.default.svc",
    `--service-account-key-file=${dir}/sa.crt`,
    `--service-account-signing-key-file=${dir}/sa.key`,
    "--service-cluster-ip-range=10.0.0.0/24",
    "--disable-admission-plugins=ServiceAccount",
    "--allow-privileged=true",
    "--endpoint-reconciler-type=none",
    "--v=0",
    ...at.extra,
  ], `${dir}/kube-apiserver.log`);
}

/** The parts of a running control plane a {@link ControlPlane} handle is made of. */
export interface ControlPlaneParts {
  dir: string;
  server: string;
  kubeconfigPath: string;
  client: KubeClient;
  ca: KeyPair;
  bin: string;
}

/**
 * A {@link ControlPlane} handle on a running control plane: namespaces,
 * kubectl and user kubeconfigs; `stop` and `stopNow` end it (or only this handle).
 */
export function controlPlaneHandle(
  parts: ControlPlaneParts,
  stop: () => Promise<void>,
  stopNow: () => void,
): ControlPlane {
  const { dir, server, kubeconfigPath, client, ca, bin } = parts;
  return {
    dir,
    server,
    kubeconfigPath,
    client,
    ca,
    bin,
    async namespace(prefix = "t") {
      const name = `${prefix}-${crypto.randomUUID().slice(0, 8)}`;
      await client.create(NAMESPACES, { metadata: { name } });
      return name;
    },
    async kubectl(args, o = {}) {
      const child = new Command(`${bin}/kubectl`, {
        args: [`--kubeconfig=${o.kubeconfig ?? kubeconfigPath}`, ...args],
        stdin: o.stdin === undefined ? "null" : "piped",
        stdout: "piped",
        stderr: "piped",
      }).spawn();
      if (o.stdin !== undefined) {
        const w = child.stdin.getWriter();
        await w.write(new TextEncoder().encode(o.stdin));
        await w.close();
      }
      const out = await child.output();
      const dec = new TextDecoder();
      return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
    },
    async userKubeconfig(user, groups = []) {
      const cert = await issueCert(ca, { commonName: user, organizations: groups, usage: "client", days: 30 });
      const path = `${dir}/${user.replace(/[^a-z0-9-]/gi, "_")}.kubeconfig`;
      await Deno.writeTextFile(path, kubeconfigYaml(server, ca.certPem, user, cert), { mode: 0o600 });
      return path;
    },
    stop,
    stopNow,
    [Symbol.asyncDispose]: stop,
  };
}

async function waitReady(client: KubeClient, procs: Guarded[], timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let exited: string | undefined;
  for (const p of procs) p.exited.then(() => exited ??= p.name);
  let last = "";
  while (Date.now() < deadline) {
    if (exited) throw new Error(`${exited} exited before the API server became ready`);
    try {
      if ((await client.getText("/readyz", AbortSignal.timeout(2000))).trim() === "ok") return;
    } catch (err) {
      last = (err as Error).message;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`the API server was not ready within ${timeoutMs / 1000}s: ${last}`);
}

/** Applies CRD manifests and waits until each is Established. */
export async function installCrds(client: KubeClient, paths: string[]): Promise<void> {
  const crds: KubeObject[] = [];
  for (const path of paths) {
    for (const doc of parseAllDocuments(await Deno.readTextFile(path))) {
      const obj = doc.toJS();
      if (obj) crds.push(obj);
    }
  }
  await applyCrds(client, crds);
}
