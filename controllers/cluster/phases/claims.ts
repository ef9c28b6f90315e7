/**
 * Phase: every selected member carries this cluster's claim label. Claims
 * come before anything is created for a Machine; a lost race throws
 * {@link ClaimConflictError} and the next pass selects again. Claims are
 * independent of each other, so a few are sent at once ({@link WRITES_IN_FLIGHT}).
 *
 * @module
 */
import { CLUSTER_LABEL } from "../../../core/contract/labels.ts";
import { eachBounded } from "../../../lib/runtime/bounded.ts";
import { claimMachine } from "../claims.ts";
import { type ClusterScope, WRITES_IN_FLIGHT } from "../scope.ts";

/** Claims the members not yet claimed (each claim is put in `s.machines` as the server answered it). */
export async function reconcileClaims(s: ClusterScope): Promise<void> {
  const unclaimed = s.members.filter((member) => {
    const m = s.machines.get(member);
    return m !== undefined && m.metadata.labels?.[CLUSTER_LABEL] !== s.name;
  });
  const claimed: string[] = [];
  try {
    await eachBounded(unclaimed, WRITES_IN_FLIGHT, async (member) => {
      s.machines.set(member, await claimMachine(s.deps.client, s.machines.get(member)!, s.name));
      claimed.push(member);
    });
  } finally {
    if (claimed.length) s.log.info("claimed machines", { machines: claimed });
  }
}
