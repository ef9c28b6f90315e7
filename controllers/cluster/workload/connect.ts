/**
 * The one place a client for a workload cluster is made from a kubeconfig
 * NICO issued (see core/kubeconfig.ts): replace the loader here and every
 * workload connection follows.
 *
 * @module
 */
import { KubeConfig } from "@kubernetes/client-node";
import { KubeClient } from "../../../lib/kube/client.ts";
import { refusedTarget, type TargetPolicy } from "./targets.ts";

export interface WorkloadClientOptions {
  policy: TargetPolicy;
  /** Deadline of one request (default 5 s): a slow workload API never holds a reconcile long. */
  timeoutMs?: number;
}

/** A client for the kubeconfig text, or an error naming why NICO may not connect. */
export function workloadClient(kubeconfig: string, o: WorkloadClientOptions): KubeClient {
  const kc = new KubeConfig();
  kc.loadFromString(kubeconfig);
  const server = kc.getCurrentCluster()?.server;
  if (!server) throw new Error("the kubeconfig names no server");
  const refused = refusedTarget(server, o.policy);
  if (refused) throw new Error(refused);
  return new KubeClient(kc, { userAgent: "nico-workload", fieldManager: "nico", timeoutMs: o.timeoutMs ?? 5_000 });
}
