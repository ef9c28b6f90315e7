/** What the workload-cluster scenarios of drains, departed Nodes and outages share: two commits, a cluster at rest, a pod. */
import type { KubernetesCluster } from "../crds/kubernetescluster.ts";
import type { KubeClient } from "../lib/kube/client.ts";
import { PODS } from "../lib/kube/resources.ts";
import type { KubePod } from "../core/nodes/workload.ts";
import { condition } from "../testing/scenario.ts";

export const V1 = "https://git.example.test/v1.git";
export const V2 = "https://git.example.test/v2.git";

/** Ready at the current generation, the workload API up, every Node healthy and every node up to date. */
export const settled = (c: KubernetesCluster) =>
  c.status?.observedGeneration === c.metadata.generation && c.status?.phase === "Ready" &&
  condition(c, "WorkloadAPIAvailable")?.status === "True" && condition(c, "NodesHealthy")?.status === "True" &&
  condition(c, "UpToDate")?.status === "True";

/** A pod of app `web` in namespace `apps`, bound to `node` (the simulated kubelet makes it Running and Ready). */
export function webPod(client: KubeClient, name: string, node: string, annotations: Record<string, string> = {}) {
  return client.create<KubePod>(PODS, {
    metadata: { name, namespace: "apps", labels: { app: "web" }, annotations },
    spec: { nodeName: node, containers: [{ name: "c", image: "registry.invalid/none" }] },
  } as KubePod);
}
