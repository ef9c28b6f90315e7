/**
 * The one place a client for a workload cluster is made from a kubeconfig
 * NICO issued, read by core/render/kubeconfig.ts's parseIssuedKubeconfig: the
 * server, its CA and a client certificate, all inline. No exec plugin,
 * token file or path is ever followed, so a tampered Secret cannot make
 * NICO run a program or read a file.
 *
 * @module
 */
import { parseIssuedKubeconfig } from "../../../core/render/kubeconfig.ts";
import { KubeClient, type KubeConfig } from "../../../lib/kube/client.ts";
import { staticCredentials } from "../../../lib/kube/credentials.ts";
import { transportOf, transports } from "../../../lib/kube/transport.ts";
import { nameCheck, refusedTarget, type TargetPolicy } from "./targets.ts";

export interface WorkloadClientOptions {
  policy: TargetPolicy;
  /** Deadline of one request (default 5 s): a slow workload API never holds a reconcile long. */
  timeoutMs?: number;
  /** Another server of the cluster than the kubeconfig's (a control-plane node's own API server), checked the same way. */
  server?: string | undefined;
}

/** A client for the kubeconfig text, or an error naming why NICO may not connect. */
export function workloadClient(kubeconfig: string, o: WorkloadClientOptions): KubeClient {
  return clientFor(workloadConfig(kubeconfig, o), o);
}

function clientFor(kc: KubeConfig, o: WorkloadClientOptions): KubeClient {
  return new KubeClient(kc, {
    userAgent: "nico-workload",
    fieldManager: "nico",
    timeoutMs: o.timeoutMs ?? 5_000,
    untrusted: true,
    beforeRequest: nameCheck(o.policy),
  });
}

function workloadConfig(kubeconfig: string, o: WorkloadClientOptions): KubeConfig {
  const kc = parseIssuedKubeconfig(kubeconfig, (server) => refusedTarget(server, o.policy));
  const refused = o.server === undefined ? undefined : refusedTarget(o.server, o.policy);
  if (refused) throw new Error(refused);
  return {
    server: (o.server ?? kc.server).replace(/\/+$/, ""),
    context: kc.context || "workload",
    caCerts: [kc.caPem],
    clientCert: { cert: kc.certPem, key: kc.keyPem },
    credentials: staticCredentials(undefined),
  };
}

/**
 * The cluster's client, and a maker of clients for its control-plane nodes' own API servers that share its HTTP
 * client (one TLS configuration per cluster: the same CA and certificate); closing the first closes them all.
 */
export function workloadClients(
  kubeconfig: string,
  o: Omit<WorkloadClientOptions, "server">,
): { client: KubeClient; nodeClient: (server: string) => KubeClient } {
  const kc = workloadConfig(kubeconfig, o);
  const nodeClient = (server: string) => {
    const nodeKc = workloadConfig(kubeconfig, { ...o, server });
    transports.set(nodeKc, transportOf(kc));
    return clientFor(nodeKc, o);
  };
  return { client: clientFor(kc, o), nodeClient };
}
