/**
 * The kubelets' share of pod life, for workload clusters without kubelets:
 * pods bound to a simulated node become Running and Ready, and a pod being
 * deleted (an accepted eviction, say) finishes some time later, as a real
 * kubelet stops its containers first: after `terminationMs`, or, while it
 * carries {@link TERMINATION_HOLD_ANNOTATION}, not until that is removed.
 *
 * @module
 */
import type { KubeClient } from "../lib/kube/client.ts";
import { isNotFound } from "../lib/kube/errors.ts";
import { PODS } from "../lib/kube/resources.ts";
import { Informer } from "../lib/runtime/informer.ts";
import { silentLogger } from "../lib/runtime/log.ts";
import type { KubePod } from "../core/nodes/workload.ts";

/** The client's request method type, whatever the kube library underneath calls it. */
type Method = Parameters<KubeClient["request"]>[0];

const nowIso = () => new Date().toISOString().replace(/\.\d+Z$/, "Z");

/** On a pod: while present, a deleted pod stays terminating (a test removes it to let the pod finish). */
export const TERMINATION_HOLD_ANNOTATION = "sim.nico.homystack.com/termination-hold";

/** How long a deleted pod takes to finish by default (containers stopping). */
export const TERMINATION_MS = 300;

/** Runs until the returned informer is stopped; `ours` says which nodes it plays the kubelet of. */
export function simulateKubelets(
  client: KubeClient,
  ours: (node: string) => boolean,
  terminationMs = TERMINATION_MS,
): Informer<KubePod> {
  const pods = new Informer<KubePod>(client, PODS, { logger: silentLogger, resyncMs: 0 });
  const finishing = new Map<string, ReturnType<typeof setTimeout>>();
  const warn = (err: unknown) => {
    if (!isNotFound(err)) console.warn(`simulated kubelet: ${(err as Error).message}`);
  };
  pods.onEvent((type, p) => {
    const ns = p.metadata.namespace!;
    const path = `/api/v1/namespaces/${encodeURIComponent(ns)}/pods/${encodeURIComponent(p.metadata.name)}`;
    if (type === "delete") {
      clearTimeout(finishing.get(path));
      finishing.delete(path);
      return;
    }
    if (!p.spec?.nodeName || !ours(p.spec.nodeName)) return;
    if (p.metadata.deletionTimestamp) {
      if (finishing.has(path) || p.metadata.annotations?.[TERMINATION_HOLD_ANNOTATION] !== undefined) return;
      finishing.set(
        path,
        setTimeout(() => {
          if (!pods.running) return;
          const body = { kind: "DeleteOptions", apiVersion: "v1", gracePeriodSeconds: 0 };
          client.request("DELETE" as Method, path, { body }).catch(warn);
        }, terminationMs),
      );
    } else if (p.status?.phase !== "Running") {
      client.mergePatch(PODS, p.metadata.name, ns, {
        status: { phase: "Running", conditions: [{ type: "Ready", status: "True", lastTransitionTime: nowIso() }] },
      }, "status").catch(warn);
    }
  });
  pods.start();
  return pods;
}
