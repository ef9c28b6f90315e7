/**
 * The simulated control-plane node's API server: one `apiserver-front`
 * process (testing/front/main.go) on the node's address, answering
 * `/version` with the version the node runs and passing everything else to
 * the simulated cluster's one real kube-apiserver, with the caller's identity
 * (front-proxy headers). {@link frontProxyArgs} are the flags that
 * kube-apiserver needs to trust the fronts.
 *
 * @module
 */
import { createCa, issueCert, type KeyPair } from "../lib/pki.ts";
import { installed } from "./installed.ts";
import { type Guarded, startGuarded } from "./envtest/process.ts";

/** The path of the apiserver-front binary, built once (testing/front/install.sh). */
export const frontPath: () => Promise<string> = installed(new URL("./front/install.sh", import.meta.url));

/** The CA the fronts' client certificates are signed by, and the files kube-apiserver reads to trust it. */
export interface FrontProxyTrust {
  ca: KeyPair;
  /** The client certificate every front presents to kube-apiserver. */
  client: KeyPair;
  /** The folder the files are in. */
  dir: string;
}

/** Makes a front-proxy CA and client certificate, written under `dir`. */
export async function frontProxyTrust(dir: string): Promise<FrontProxyTrust> {
  const ca = await createCa({ commonName: "nico-sim-front-proxy-ca" });
  const client = await issueCert(ca, { commonName: "front-proxy", usage: "client", days: 30 });
  await Deno.mkdir(dir, { recursive: true });
  const files = {
    "front-proxy-ca.crt": ca.certPem,
    "front-proxy.crt": client.certPem,
    "front-proxy.key": client.keyPem,
  };
  for (const [name, text] of Object.entries(files)) await Deno.writeTextFile(`${dir}/${name}`, text, { mode: 0o600 });
  return { ca, client, dir };
}

/** kube-apiserver flags that make it take a front's X-Remote-User and X-Remote-Group as the caller. */
export function frontProxyArgs(trust: FrontProxyTrust): string[] {
  return [
    `--requestheader-client-ca-file=${trust.dir}/front-proxy-ca.crt`,
    "--requestheader-allowed-names=front-proxy",
    "--requestheader-username-headers=X-Remote-User",
    "--requestheader-group-headers=X-Remote-Group",
    "--requestheader-extra-headers-prefix=X-Remote-Extra-",
  ];
}

export interface FrontOptions {
  /** The node's address; the front listens on it at `port`. */
  host: string;
  port: number;
  /** The cluster CA: it signs the front's serving certificate and the clients'. */
  clusterCa: KeyPair;
  /** The real kube-apiserver (`https://host:port`) and the CA of its serving certificate. */
  upstream: string;
  upstreamCa: KeyPair;
  trust: FrontProxyTrust;
  /** The version the node runs at first (`v1.31.4`); absent: its API server does not answer /version yet. */
  version?: string | undefined;
  /** A folder of the front's own. */
  dir: string;
}

/** A running front: what it says its version is, and how to stop it. */
export interface Front {
  readonly host: string;
  readonly port: number;
  /** Sets the version the node's API server answers (`undefined`: it answers 503, not running). */
  setVersion(version: string | undefined): Promise<void>;
  stop(): Promise<void>;
  process: Guarded;
}

/** Starts a front for one node and waits until it answers. */
export async function startFront(o: FrontOptions): Promise<Front> {
  const bin = await frontPath();
  await Deno.mkdir(o.dir, { recursive: true });
  const serving = await issueCert(o.clusterCa, {
    commonName: o.host,
    ...(/^[\d.]+$|:/.test(o.host) ? { ipAddresses: [o.host] } : { dnsNames: [o.host] }),
    usage: "server",
    days: 30,
  });
  const files = {
    "serving.crt": serving.certPem,
    "serving.key": serving.keyPem,
    "client-ca.crt": o.clusterCa.certPem,
    "upstream-ca.crt": o.upstreamCa.certPem,
  };
  for (const [name, text] of Object.entries(files)) await Deno.writeTextFile(`${o.dir}/${name}`, text, { mode: 0o600 });
  const versionFile = `${o.dir}/version`;
  const setVersion = (v: string | undefined) => Deno.writeTextFile(versionFile, v ?? "");
  await setVersion(o.version);
  const process = startGuarded("apiserver-front", bin, [
    `--listen=${o.host.includes(":") ? `[${o.host}]` : o.host}:${o.port}`,
    `--cert=${o.dir}/serving.crt`,
    `--key=${o.dir}/serving.key`,
    `--client-ca=${o.dir}/client-ca.crt`,
    `--upstream=${o.upstream}`,
    `--upstream-ca=${o.dir}/upstream-ca.crt`,
    `--proxy-cert=${o.trust.dir}/front-proxy.crt`,
    `--proxy-key=${o.trust.dir}/front-proxy.key`,
    `--version-file=${versionFile}`,
  ], `${o.dir}/front.log`);
  await waitListening(o.host, o.port, process);
  return { host: o.host, port: o.port, setVersion, stop: () => process.stop(), process };
}

/** Waits until something accepts connections at `host:port`, or the process exits (then throws with its log). */
async function waitListening(host: string, port: number, p: Guarded): Promise<void> {
  let exited = false;
  p.exited.then(() => (exited = true));
  for (let i = 0; i < 400 && !exited; i++) {
    try {
      (await Deno.connect({ hostname: host, port })).close();
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 25));
    }
  }
  throw new Error(`apiserver-front on ${host}:${port} did not start:\n${await p.tail()}`);
}
