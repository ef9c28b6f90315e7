/**
 * NIO v1's runs of a cluster's nodes, as the reconciler reads them: the Jobs
 * come from the informer's cache; why a failing run's last Pod failed is read
 * from that Pod once per failed attempt (and remembered), so a halt names
 * the node, the attempt and the reason within seconds of the first failure.
 *
 * @module
 */
import type { KubeClient } from "../../lib/kube/client.ts";
import { PODS } from "../../lib/kube/resources.ts";
import { dayTwoName } from "../../core/contract/nio.ts";
import type { BatchJob } from "../../core/nodes/runs.ts";

interface Pod {
  metadata: { name: string; creationTimestamp?: string };
  status?: {
    phase?: string;
    reason?: string;
    message?: string;
    containerStatuses?: { state?: { terminated?: { reason?: string; exitCode?: number; message?: string } } }[];
  };
}

/** The longest reason kept from a Pod (its termination message can be a build log's tail). */
const MAX_REASON = 300;

/**
 * Why a failed Pod failed, in one line.
 *
 * @example
 * ```ts
 * import { podFailure } from "./runs.ts";
 * podFailure({ metadata: { name: "p" }, status: { phase: "Failed", containerStatuses: [{ state: { terminated: { reason: "Error", exitCode: 1, message: "build failed" } } }] } });
 * // "Error (exit code 1): build failed"
 * ```
 */
export function podFailure(p: Pod): string {
  const t = p.status?.containerStatuses?.map((c) => c.state?.terminated).find((x) => x && x.exitCode !== 0);
  const head = t ? `${t.reason ?? "Failed"} (exit code ${t.exitCode ?? "?"})` : p.status?.reason ?? "Failed";
  const msg = (t?.message ?? p.status?.message ?? "").trim().replace(/\s+/g, " ");
  const text = msg ? `${head}: ${msg}` : head;
  return text.length > MAX_REASON ? `${text.slice(0, MAX_REASON - 1)}…` : text;
}

/** Remembers the reason of each failing run's latest failed attempt. */
export class RunFailures {
  readonly #seen = new Map<string, { failed: number; reason: string | undefined }>();

  /** The reasons for the failing runs among `jobs` of these configurations, reading Pods only when new. */
  async reasons(client: KubeClient, namespace: string, configs: string[], jobs: readonly BatchJob[]) {
    const owners = new Set(configs.map(dayTwoName));
    const out = new Map<string, string>();
    const present = new Set(jobs.map((j) => `${namespace}/${j.metadata.name}`));
    for (const k of this.#seen.keys()) if (k.startsWith(`${namespace}/`) && !present.has(k)) this.#seen.delete(k);
    for (const j of jobs) {
      const failed = j.status?.failed ?? 0;
      const complete = j.status?.conditions?.some((c) => c.type === "Complete" && c.status === "True");
      if (failed === 0 || complete || !j.metadata.ownerReferences?.some((o) => owners.has(o.name))) continue;
      const key = `${namespace}/${j.metadata.name}`;
      let seen = this.#seen.get(key);
      if (!seen || seen.failed !== failed) {
        seen = { failed, reason: await this.#read(client, namespace, j.metadata.name) };
        this.#seen.set(key, seen);
      }
      if (seen.reason) out.set(j.metadata.name, seen.reason);
    }
    return out;
  }

  async #read(client: KubeClient, namespace: string, job: string): Promise<string | undefined> {
    const pods = await client.list<Pod>(PODS, { namespace, labelSelector: `batch.kubernetes.io/job-name=${job}` });
    const failed = pods.items.filter((p) => p.status?.phase === "Failed")
      .sort((a, b) => (a.metadata.creationTimestamp ?? "").localeCompare(b.metadata.creationTimestamp ?? ""));
    const last = failed.at(-1);
    return last ? podFailure(last) : undefined;
  }
}
