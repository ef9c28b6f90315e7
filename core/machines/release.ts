/**
 * When a Machine may go back to the pool. With NIO v1, a configuration being
 * gone does not mean NIO is done with its Machine: its removal runs
 * `onRemoveFlake` in a decommission NixJob, and NIO v1 sometimes starts a
 * second one just after the configuration is gone; that one nobody removes,
 * and it runs `onRemoveFlake` again each time its Job expires. A Machine
 * another cluster claimed in the meantime would be wiped under it. So a
 * Machine is released only when no decommission NixJob for it exists, and
 * not before NIO had a moment to start one; a NixJob left behind is removed
 * by NICO once its run finished. Pure; table-tested.
 *
 * @module
 */
import { type DecommissionJob, NIO_CONFIG_LABEL, NIO_MACHINE_LABEL, type NioGeneration } from "../contract/nio.ts";

/** How long after its configuration is gone a Machine stays claimed, for NIO to start a late decommission. */
export const RELEASE_SETTLE_MS = 5_000;

export interface ReleaseInput {
  machine: string;
  nio: NioGeneration;
  /** The decommission NixJobs of the namespace. */
  decommissions: readonly DecommissionJob[];
  /** Whether a NixosConfiguration of that name exists (being deleted or not). */
  configExists: (name: string) => boolean;
  /**
   * When NICO first saw the Machine without a configuration or a decommission NixJob (the settle counts from
   * there: a decision with `jobSeen` asks the caller to start it again).
   */
  freeSince: Date;
  now: Date;
  settleMs?: number;
}

export type ReleaseDecision =
  | { release: true }
  | { release: false; waiting: string; removeLeaked?: string | undefined; jobSeen?: true };

const finished = (j: DecommissionJob) =>
  (j.status?.succeeded ?? 0) > 0 || j.status?.phase === "Ready" || j.status?.phase === "Failed";

/**
 * Whether `machine`, which no configuration of the cluster uses any more, may be released now.
 *
 * @example
 * ```ts
 * import { releaseDecision } from "./release.ts";
 * const base = { machine: "w-3", nio: "v1" as const, configExists: () => false, now: new Date("2026-01-01T00:01:00Z") };
 * releaseDecision({ ...base, decommissions: [], freeSince: new Date("2026-01-01T00:00:00Z") }); // { release: true }
 * const leaked = { metadata: { name: "c.w-3-onremove", labels: { "nio.homystack.com/machine": "w-3", "nio.homystack.com/config": "c.w-3" } }, status: { succeeded: 1 } };
 * releaseDecision({ ...base, decommissions: [leaked], freeSince: new Date("2026-01-01T00:00:00Z") }).release; // false
 * ```
 */
export function releaseDecision(i: ReleaseInput): ReleaseDecision {
  if (i.nio !== "v1") return { release: true };
  const job = i.decommissions.find((j) => j.metadata.labels?.[NIO_MACHINE_LABEL] === i.machine);
  if (job) return { release: false, ...whileJob(job, i.configExists), jobSeen: true };
  const settle = i.settleMs ?? RELEASE_SETTLE_MS;
  if (i.now.getTime() - i.freeSince.getTime() < settle) {
    return { release: false, waiting: "giving NIO a moment to show whether it starts another removal run" };
  }
  return { release: true };
}

/** What a Machine's release waits for while a decommission NixJob for it exists. */
function whileJob(
  j: DecommissionJob,
  configExists: (name: string) => boolean,
): { waiting: string; removeLeaked?: string } {
  const name = j.metadata.name;
  const config = j.metadata.labels?.[NIO_CONFIG_LABEL] ?? "";
  if (configExists(config)) return { waiting: `NIO is applying the removal flake (NixJob ${name})` };
  if (j.metadata.deletionTimestamp) return { waiting: `NixJob ${name} is being removed` };
  if (!finished(j)) {
    return {
      waiting: `NIO started the removal flake again after configuration ${config} was gone (NixJob ${name}); ` +
        `NICO removes that NixJob once its run finished`,
    };
  }
  return {
    waiting: `removing NixJob ${name}, which NIO left behind (it would run the removal flake again)`,
    removeLeaked: name,
  };
}
