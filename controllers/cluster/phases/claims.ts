/**
 * Phase: every selected member carries this cluster's claim label. Claims
 * come before anything is created for a Machine; a lost race throws
 * {@link ClaimConflictError} and the next pass selects again.
 *
 * @module
 */
import { CLUSTER_LABEL } from "../../../core/labels.ts";
import { claimMachine } from "../claims.ts";
import type { ClusterScope } from "../scope.ts";

/** Claims the members not yet claimed; answers their names. */
export async function reconcileClaims(s: ClusterScope): Promise<string[]> {
  const claimed: string[] = [];
  for (const member of s.members) {
    const m = s.machines.get(member);
    if (m && m.metadata.labels?.[CLUSTER_LABEL] !== s.name) {
      s.machines.set(member, await claimMachine(s.deps.client, m, s.name));
      claimed.push(member);
    }
  }
  if (claimed.length) s.log.info("claimed machines", { machines: claimed });
  return claimed;
}
