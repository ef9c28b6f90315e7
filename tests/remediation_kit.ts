/** What the remediation scenario tests share: a kubelet that stops for good, the Events, a settled cluster. */
import type { KubernetesCluster } from "../crds/kubernetescluster.ts";
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
