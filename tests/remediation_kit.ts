/**
 * What the remediation scenario tests share: the clusters they heal (workers by selector with spares, a
 * control plane of three with a spare), a kubelet that stops for good, the Events, a settled cluster.
 */
import type { KubernetesCluster } from "../crds/kubernetescluster.ts";
import { KUBERNETES_CLUSTERS } from "../crds/kubernetescluster.ts";
import { type Machine, MACHINES } from "../core/contract/nio.ts";
import type { KubeObject } from "../lib/kube/client.ts";
import { EVENTS } from "../lib/kube/resources.ts";
import { condition, type Scenario } from "../testing/scenario.ts";
import { NODE_JOIN_ANNOTATION } from "../testing/workload.ts";

/** Phase Ready at the current generation, every node up to date, the workload API and every Node healthy. */
export const settled = (c: KubernetesCluster) =>
  c.status?.observedGeneration === c.metadata.generation && c.status?.phase === "Ready" &&
  condition(c, "UpToDate")?.status === "True" && condition(c, "WorkloadAPIAvailable")?.status === "True" &&
  condition(c, "NodesHealthy")?.status === "True";

/** The node's kubelet stops and never comes back (later switches on the host do not bring it back either). */
export async function killKubelet(s: Scenario, machine: string): Promise<void> {
  await s.client.mergePatch(MACHINES, machine, s.ns, {
    metadata: { annotations: { [NODE_JOIN_ANNOTATION]: "never" } },
  });
  await s.workloads.setReady(s.ns, "c", machine, "False");
}

export async function machineOf(s: Scenario, name: string): Promise<Machine> {
  const m = await s.client.get<Machine>(MACHINES, name, s.ns);
  if (!m) throw new Error(`Machine ${name} is gone`);
  return m;
}

/** NICO's Events about remediation in the scenario's namespace, oldest first. */
export async function remediationEvents(s: Scenario): Promise<{ reason: string; message: string }[]> {
  type Event = KubeObject & { reason?: string; note?: string; eventTime?: string };
  const items = (await s.client.list<Event>(EVENTS, { namespace: s.ns })).items;
  return items.filter((e) => e.reason?.startsWith("Remediation"))
    .sort((a, b) => (a.eventTime ?? "").localeCompare(b.eventTime ?? ""))
    .map((e) => ({ reason: e.reason!, message: e.note ?? "" }));
}

const V1_REPO = "https://git.example.test/v1.git";
/** The control-plane scenarios' nodeNotReadyTimeout, in seconds. */
export const CP_TIMEOUT_S = 4;

/** cp-1 by name; workers by selector, `count` of them from the Machines `workers` (the rest are spares). */
export async function workerCluster(
  s: Scenario,
  workers: string[],
  count: number,
  remediation: Record<string, unknown>,
) {
  await s.machines(["cp-1"]);
  await s.machines(workers, {}, { role: "worker" });
  await s.discovered(["cp-1", ...workers]);
  await s.client.create(KUBERNETES_CLUSTERS, {
    metadata: { name: "c", namespace: s.ns },
    spec: {
      gitRepo: V1_REPO,
      controlPlane: { machines: ["cp-1"] },
      dataPlane: { machineSelector: { matchLabels: { role: "worker" } }, count, remediation },
    },
  });
  return await s.until("Ready", settled, 90_000);
}

/**
 * A control plane of three by selector (cp-1 … cp-3), the rest of `pool` (cp-4) free spares; no workers; Ready, and
 * whatever else `ready` asks.
 */
export async function controlPlaneCluster(
  s: Scenario,
  pool = ["cp-1", "cp-2", "cp-3", "cp-4"],
  ready: (c: KubernetesCluster) => boolean = settled,
) {
  await s.machines(pool, {}, { role: "cp" });
  await s.discovered(pool);
  await s.client.create(KUBERNETES_CLUSTERS, {
    metadata: { name: "c", namespace: s.ns },
    spec: {
      gitRepo: "https://git.example.test/v1.git",
      controlPlane: {
        machineSelector: { matchLabels: { role: "cp" } },
        count: 3,
        remediation: { nodeNotReadyTimeout: `${CP_TIMEOUT_S}s` },
      },
    },
  });
  return await s.until("Ready", ready, 120_000);
}
