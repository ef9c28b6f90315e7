/**
 * Releasing a Machine the cluster no longer uses, once NIO is done with it
 * (core/machines/release.ts decides): a decommission NixJob NIO left behind is
 * deleted here, with an Event, once its run finished.
 *
 * @module
 */
import { type Machine, NIX_JOBS } from "../../core/contract/nio.ts";
import { releaseDecision } from "../../core/machines/release.ts";
import { releaseMachine } from "./claims.ts";
import type { ClusterMemory } from "./memory.ts";
import type { ClusterContext } from "./scope.ts";
import { postEvent } from "../events.ts";

/** What became of one Machine: released, or what its release waits for. */
export type ReleaseOutcome = { released: boolean; waiting?: string };

/** Releases `machine` from the context's cluster if NIO is done with it; otherwise says what it waits for. */
export async function releaseWhenDone(c: ClusterContext, machine: Machine, now: Date): Promise<ReleaseOutcome> {
  const { deps, cluster, cache, log } = c;
  const freeSince = c.memory.freeSince;
  const ns = machine.metadata.namespace!;
  const key = machine.metadata.name;
  let since = freeSince.get(key);
  if (since === undefined) freeSince.set(key, since = now.getTime());
  const d = releaseDecision({
    machine: machine.metadata.name,
    nio: deps.nio,
    decommissions: cache.decommissions,
    configExists: (n) => cache.config(n) !== undefined,
    freeSince: new Date(since),
    now,
    settleMs: deps.releaseSettle,
  });
  if (d.release) {
    const released = await releaseMachine(deps.client, machine, cluster.metadata.name);
    freeSince.delete(key);
    return { released };
  }
  // The settle starts again once the last NixJob is gone: NIO may start another run after a leftover too.
  if (d.jobSeen) freeSince.set(key, now.getTime());
  if (d.removeLeaked) {
    const nj = cache.decommissions.find((j) => j.metadata.name === d.removeLeaked);
    if (
      await deps.client.delete(NIX_JOBS, d.removeLeaked, ns, {
        uid: nj?.metadata.uid ?? "",
        propagationPolicy: "Background",
      })
    ) {
      log.info("deleted a decommission NixJob NIO left behind", {
        nixJob: d.removeLeaked,
        machine: machine.metadata.name,
      });
      postEvent(
        deps.recorder,
        cluster,
        "LeftoverDecommissionRemoved",
        `NIO left NixJob ${d.removeLeaked} behind after removing Machine ${machine.metadata.name}'s configuration ` +
          `(it would have applied the removal flake again); NICO deleted it before releasing the Machine`,
      );
    }
  }
  return { released: false, waiting: `Machine ${machine.metadata.name}: ${d.waiting}` };
}

/** Forgets that a Machine was free (it is a member again, or busy). */
export function stillUsed(memory: ClusterMemory, machine: Machine): void {
  memory.freeSince.delete(machine.metadata.name);
}
