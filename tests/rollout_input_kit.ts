/**
 * The planner's inputs a test does not set, at their quiet values: the API endpoint is not the bootstrap node,
 * BootstrapFirst provisioning, not the first bring-up, no outage hold, nothing releasing, no versions known, no etcd backups.
 * The planner's input has no optional field (core/rollout/types.ts RolloutInput); a test spreads these first and
 * sets what it is about after them.
 */
import type { RolloutInput } from "../core/rollout/types.ts";

export const QUIET: Pick<
  RolloutInput,
  "endpointIsBootstrap" | "provisioning" | "firstBringUp" | "hold" | "releasing" | "versions" | "backup"
> = {
  endpointIsBootstrap: false,
  provisioning: "BootstrapFirst",
  firstBringUp: false,
  hold: undefined,
  releasing: [],
  versions: undefined,
  backup: undefined,
};
