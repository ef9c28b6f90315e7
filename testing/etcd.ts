/**
 * Real etcd members for the tests and the simulated workload clusters: the
 * envtest's etcd binary on a loopback address, serving clients and peers
 * over TLS with certificates from a given etcd CA (as a k3s server's
 * embedded etcd does with the CA NICO hands it), client certificates
 * required on both ports.
 *
 * @module
 */
import { issueCert, type KeyPair } from "../lib/pki.ts";
import { binDir } from "./envtest/controlplane.ts";
import { type Guarded, startGuarded } from "./envtest/process.ts";

/** The client URL of a member on `host` (k3s: port 2379 on the node's address). */
export const etcdClientUrl = (host: string, port = 2379) => `https://${bracket(host)}:${port}`;
/** The peer URL of a member on `host` (port 2380). */
export const etcdPeerUrl = (host: string, port = 2380) => `https://${bracket(host)}:${port}`;

const bracket = (host: string) => (host.includes(":") ? `[${host}]` : host);

export interface EtcdMemberOptions {
  name: string;
  host: string;
  clientPort?: number;
  peerPort?: number;
  /** The etcd CA: it signs this member's certificate and every client's. */
  ca: KeyPair;
  /** `name=peerURL,…` of the members the cluster has once this one runs (itself included). */
  initialCluster: string;
  /** `new` for the first member(s) of a cluster, `existing` for one joining a running cluster. */
  state: "new" | "existing";
  /** A folder of the member's own (its data, certificates and log). */
  dir: string;
  /** More names its certificate carries (a client that cannot verify an IP address asks for a name). */
  dnsNames?: string[];
}

/** A running member. */
export interface EtcdMemberProcess {
  name: string;
  clientUrl: string;
  peerUrl: string;
  process: Guarded;
  /** Stops it (SIGTERM, then SIGKILL), keeping its data. */
  stop(): Promise<void>;
}

/** Starts one etcd member; it answers once it has joined its cluster (not waited for here). */
export async function startEtcdMember(o: EtcdMemberOptions): Promise<EtcdMemberProcess> {
  const bin = await binDir();
  await Deno.mkdir(o.dir, { recursive: true });
  const ip = /^[\d.]+$|:/.test(o.host);
  const cert = await issueCert(o.ca, {
    commonName: o.name,
    // Peers dial from 127.0.0.1 (no source address is bound on loopback) and etcd checks a peer's address
    // against its certificate, so the loopback address is named too, as k3s's peer certificates do.
    ipAddresses: [...new Set([...(ip ? [o.host] : []), "127.0.0.1"])],
    dnsNames: [...(ip ? [] : [o.host]), ...(o.dnsNames ?? [])],
    usage: "both",
    days: 30,
  });
  const files = { "ca.crt": o.ca.certPem, "member.crt": cert.certPem, "member.key": cert.keyPem };
  for (const [name, text] of Object.entries(files)) await Deno.writeTextFile(`${o.dir}/${name}`, text, { mode: 0o600 });
  const clientUrl = etcdClientUrl(o.host, o.clientPort);
  const peerUrl = etcdPeerUrl(o.host, o.peerPort);
  const process = startGuarded(`etcd ${o.name}`, `${bin}/etcd`, [
    `--name=${o.name}`,
    `--data-dir=${o.dir}/data`,
    `--listen-client-urls=${clientUrl}`,
    `--advertise-client-urls=${clientUrl}`,
    `--listen-peer-urls=${peerUrl}`,
    `--initial-advertise-peer-urls=${peerUrl}`,
    `--initial-cluster=${o.initialCluster}`,
    `--initial-cluster-state=${o.state}`,
    `--cert-file=${o.dir}/member.crt`,
    `--key-file=${o.dir}/member.key`,
    `--trusted-ca-file=${o.dir}/ca.crt`,
    "--client-cert-auth",
    `--peer-cert-file=${o.dir}/member.crt`,
    `--peer-key-file=${o.dir}/member.key`,
    `--peer-trusted-ca-file=${o.dir}/ca.crt`,
    "--peer-client-cert-auth",
    "--unsafe-no-fsync=true",
    "--log-level=warn",
  ], `${o.dir}/etcd.log`);
  return { name: o.name, clientUrl, peerUrl, process, stop: () => process.stop() };
}
