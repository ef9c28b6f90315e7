/**
 * The kubelets' heartbeat, for workload clusters that run the node lifecycle controller: every `everyMs` each live
 * simulated node renews its Lease in `kube-node-lease` (holder: the node, duration 40 s), as a real kubelet does
 * every 10 s. A Node whose Lease is not renewed (a kubelet gone, or a Node a restore brought back whose host is
 * elsewhere) is then marked Unknown by the real controller after its grace period, as in a real cluster.
 *
 * @module
 */
import type { KubeClient } from "../lib/kube/client.ts";
import { resource } from "../lib/kube/resources.ts";

const LEASES = resource("coordination.k8s.io", "v1", "Lease", "leases");

/** A Kubernetes MicroTime: RFC 3339 with microseconds. */
const microTime = (d: Date) => d.toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");

/** Renews the Leases of `nodes()` every `everyMs` until the answer is called. */
export function renewNodeLeases(client: KubeClient, nodes: () => string[], everyMs = 10_000): () => void {
  let stopped = false;
  const renew = async () => {
    for (const name of nodes()) {
      if (stopped) return;
      await client.apply(LEASES, {
        metadata: { name, namespace: "kube-node-lease" },
        spec: { holderIdentity: name, leaseDurationSeconds: 40, renewTime: microTime(new Date()) },
      }).catch((err: Error) => {
        if (!stopped) console.warn(`simulated kubelet lease of ${name}: ${err.message}`);
      });
    }
  };
  const timer = setInterval(() => void renew(), everyMs);
  void renew();
  return () => {
    stopped = true;
    clearInterval(timer);
  };
}
