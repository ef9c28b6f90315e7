/**
 * The kubelets' share of pod life, for workload clusters without kubelets:
 * pods bound to a simulated node become Running and Ready, and pods being
 * deleted finish at once (a real kubelet would stop their containers first).
 *
 * @module
 */
import type { KubeClient } from "../lib/kube/client.ts";
import { isNotFound } from "../lib/kube/errors.ts";
import { PODS } from "../lib/kube/resources.ts";
import { Informer } from "../lib/runtime/informer.ts";
import { silentLogger } from "../lib/runtime/log.ts";
import type { KubePod } from "../core/workload.ts";

/** The client's request method type, whatever the kube library underneath calls it. */
type Method = Parameters<KubeClient["request"]>[0];

const nowIso = () => new Date().toISOString().replace(/\.\d+Z$/, "Z");

/** Runs until the returned informer is stopped; `ours` says which nodes it plays the kubelet of. */
export function simulateKubelets(client: KubeClient, ours: (node: string) => boolean): Informer<KubePod> {
  const pods = new Informer<KubePod>(client, PODS, { logger: silentLogger, resyncMs: 0 });
  pods.onEvent((type, p) => {
    if (type === "delete" || !p.spec?.nodeName || !ours(p.spec.nodeName)) return;
    const ns = p.metadata.namespace!;
    const path = `/api/v1/namespaces/${encodeURIComponent(ns)}/pods/${encodeURIComponent(p.metadata.name)}`;
    const work = p.metadata.deletionTimestamp
      ? client.request("DELETE" as Method, path, {
        body: { kind: "DeleteOptions", apiVersion: "v1", gracePeriodSeconds: 0 },
      })
      : p.status?.phase === "Running"
      ? undefined
      : client.mergePatch(PODS, p.metadata.name, ns, {
        status: { phase: "Running", conditions: [{ type: "Ready", status: "True", lastTransitionTime: nowIso() }] },
      }, "status");
    work?.catch((err) => {
      if (!isNotFound(err)) console.warn(`simulated kubelet: ${(err as Error).message}`);
    });
  });
  pods.start();
  return pods;
}
