/**
 * What the restore scenarios share (tests/integration/restore_*_test.ts): asking cluster c for a restore, waiting for
 * one to end and for its URL to be taken back, and NICO's Warning Events of a reason.
 */
import { KUBERNETES_CLUSTERS, type KubernetesCluster } from "../crds/kubernetescluster.ts";
import type { KubeObject } from "../lib/kube/client.ts";
import { EVENTS, SECRETS } from "../lib/kube/resources.ts";
import { etcdRestoreSecret } from "../core/contract/names.ts";
import { eventually, readUntil } from "../testing/helpers.ts";
import type { Scenario } from "../testing/scenario.ts";

/** Sets `spec.etcd.restore` of cluster c, keeping the rest of its `spec.etcd`. */
export async function askRestore(s: Scenario, restore: Record<string, unknown>): Promise<void> {
  const c = await s.client.get<KubernetesCluster>(KUBERNETES_CLUSTERS, "c", s.ns);
  await s.client.mergePatch(KUBERNETES_CLUSTERS, "c", s.ns, { spec: { etcd: { ...c!.spec.etcd, restore } } });
}

/** Restore `id`'s record in `c`, once it ended (however it ended). */
function endedRecord(c: KubernetesCluster, id: string) {
  const r = c.status?.restore;
  return r?.requestId === id && ["Succeeded", "Failed", "Refused"].includes(r.step) ? r : undefined;
}

/** Waits for restore `id` of cluster c to end, however it ends; answers the cluster then. */
export function restoreEnded(s: Scenario, id: string, timeoutMs = 240_000): Promise<KubernetesCluster> {
  return s.until(`${id} ended`, (c) => endedRecord(c, id) !== undefined, timeoutMs);
}

/** Waits for restore `id` of cluster c to end as `step`; fails at once, naming why, when it ends otherwise. */
export function restoreEndedAs(s: Scenario, id: string, step: string, timeoutMs = 180_000): Promise<KubernetesCluster> {
  return s.until(`${id} ${step}`, (c) => {
    const r = endedRecord(c, id);
    if (r && r.step !== step) throw new Error(`restore ${id} ${r.step} (${r.reason}): ${r.message}`);
    return r !== undefined;
  }, timeoutMs);
}

/** The messages of NICO's Warning Events of `reason` in the scenario's namespace. */
async function warnings(s: Scenario, reason: string): Promise<string[]> {
  type Event = KubeObject & { reason?: string; type?: string; note?: string };
  const items = (await s.client.list<Event>(EVENTS, { namespace: s.ns })).items;
  return items.filter((e) => e.reason === reason && e.type === "Warning").map((e) => e.note ?? "");
}

/**
 * The messages of NICO's Warning Events of `reason` once one of them includes `text` (an Event is posted beside the
 * status it explains and may land after it), or those there are after 30 s, for the caller's assertion to name.
 */
export async function warningsWith(s: Scenario, reason: string, text: string): Promise<string[]> {
  const read = () => warnings(s, reason);
  const { value } = await readUntil(
    `a ${reason} Warning with ${text}`,
    read,
    (seen) => seen.some((m) => m.includes(text)),
  );
  return value ?? [];
}

/** Waits until cluster c's restore Secret (the presigned URL) is gone. */
export async function urlTakenBack(s: Scenario): Promise<void> {
  await eventually(
    "the URL taken back",
    async () => (await s.client.get(SECRETS, etcdRestoreSecret("c"), s.ns)) === undefined,
    60_000,
  );
}
