/**
 * The one place a client for a workload cluster is made from a kubeconfig
 * NICO issued (see core/kubeconfig.ts). Only what NICO writes is read: the
 * server, its CA and a client certificate, all inline. No exec plugin,
 * token file or path is ever followed, so a tampered Secret cannot make
 * NICO run a program or read a file.
 *
 * @module
 */
import { parse as parseYaml } from "yaml";
import type { z } from "zod";
import { decodeBase64 } from "../../../lib/encoding.ts";
import { KubeClient } from "../../../lib/kube/client.ts";
import { staticCredentials } from "../../../lib/kube/credentials.ts";
import { KubeconfigFile } from "../../../lib/kube/kubeconfig.ts";
import { refusedTarget, type TargetPolicy } from "./targets.ts";

export interface WorkloadClientOptions {
  policy: TargetPolicy;
  /** Deadline of one request (default 5 s): a slow workload API never holds a reconcile long. */
  timeoutMs?: number;
}

const UNPARSABLE = "the kubeconfig Secret cannot be parsed; delete it and NICO issues a new one";

/** A client for the kubeconfig text, or an error naming why NICO may not connect. */
export function workloadClient(kubeconfig: string, o: WorkloadClientOptions): KubeClient {
  let file: z.infer<typeof KubeconfigFile>;
  try {
    // The parser's message may quote the text, which holds a private key: say only what is wrong.
    file = KubeconfigFile.parse(parseYaml(kubeconfig));
  } catch {
    throw new Error(UNPARSABLE);
  }
  const ctx = file.contexts?.find((c) => c.name === file["current-context"])?.context;
  const cluster = file.clusters?.find((c) => c.name === ctx?.cluster)?.cluster;
  const user = file.users?.find((u) => u.name === ctx?.user)?.user;
  if (!cluster?.server) throw new Error("the kubeconfig names no server");
  const refused = refusedTarget(cluster.server, o.policy);
  if (refused) throw new Error(refused);
  const ca = cluster["certificate-authority-data"];
  const cert = user?.["client-certificate-data"];
  const key = user?.["client-key-data"];
  if (!ca || !cert || !key) {
    throw new Error("the kubeconfig lacks the inline CA or client certificate NICO writes; delete the Secret");
  }
  let pem: { ca: string; cert: string; key: string };
  try {
    pem = { ca: decodeBase64(ca), cert: decodeBase64(cert), key: decodeBase64(key) };
  } catch {
    throw new Error(UNPARSABLE);
  }
  return new KubeClient({
    server: cluster.server.replace(/\/+$/, ""),
    context: file["current-context"] ?? "workload",
    caCerts: [pem.ca],
    clientCert: { cert: pem.cert, key: pem.key },
    credentials: staticCredentials(undefined),
  }, { userAgent: "nico-workload", fieldManager: "nico", timeoutMs: o.timeoutMs ?? 5_000 });
}
