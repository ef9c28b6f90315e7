/**
 * A simulated workload API server that keeps its data in the cluster's stacked etcd (the option `stackedEtcd` of
 * testing/workload.ts), as a k3s or kubeadm control plane does: it talks TLS to the control-plane hosts' members
 * (./sim-etcd.ts) with a client certificate of the cluster's etcd CA, so a restore of those members brings back its
 * Kubernetes objects.
 *
 * @module
 */
import type { Machine, NixosConfiguration } from "../core/contract/nio.ts";
import { CLUSTER_LABEL } from "../core/contract/labels.ts";
import { clusterNixOf } from "../core/render/clusternix.ts";
import { issueCert } from "../lib/pki.ts";
import type { ExternalEtcd } from "./envtest/controlplane.ts";
import { etcdClientUrl } from "./etcd.ts";
import type { SimEtcd } from "./sim-etcd.ts";

/**
 * The client URLs of the control-plane nodes' members `cluster.nix` names (its `controlPlane` addresses, its etcd
 * `clientPort`), in its order.
 */
export function etcdServersOf(clusterNix: string): string[] {
  const list = /^ {2}controlPlane = \[\n([\s\S]*?)\n {2}\];$/m.exec(clusterNix)?.[1] ?? "";
  const port = Number(/^ {2}etcd = \{ clientPort = (\d+); \};$/m.exec(clusterNix)?.[1] ?? 2379);
  return [...list.matchAll(/address = "([^"\\]*)";/g)].map((m) => etcdClientUrl(m[1]!, port));
}

/**
 * The bootstrap node applied: its member is started first (the API server cannot start without its store), then
 * the etcd the API server is to use: every control-plane node's member, and a client certificate of the cluster's
 * etcd CA. Throws when the configuration runs no etcd (a cluster without an etcd CA, or hosts that run none).
 */
export async function stackedEtcd(etcd: SimEtcd, cfg: NixosConfiguration, machine: Machine): Promise<ExternalEtcd> {
  await etcd.applied(cfg, machine);
  const cluster = cfg.metadata.labels?.[CLUSTER_LABEL] ?? "";
  const ca = etcd.ca(cfg.metadata.namespace ?? "", cluster);
  const servers = etcdServersOf(clusterNixOf(cfg) ?? "");
  if (!ca || servers.length === 0) {
    throw new Error(`stackedEtcd: the hosts of ${cfg.metadata.namespace}/${cluster} run no etcd to store in`);
  }
  const client = await issueCert(ca, { commonName: "kube-apiserver-etcd-client", usage: "client", days: 30 });
  return { servers, caPem: ca.certPem, client };
}
