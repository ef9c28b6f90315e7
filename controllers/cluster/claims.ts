/**
 * Claiming Machines: a label `nico.homystack.com/cluster=<name>` written on
 * the condition that the Machine's labels are still those it was selected
 * by, so two clusters can never both win.
 *
 * @module
 */
import type { KubeClient } from "../../lib/kube/client.ts";
import { isConflict, isNotFound, isUnprocessable } from "../../lib/kube/errors.ts";
import { addLabel, removeLabel, testLabel, testLabels } from "../../lib/kube/patch.ts";
import { MACHINES } from "../../core/contract/nio.ts";
import { CLUSTER_LABEL } from "../../core/contract/labels.ts";
import type { Machine } from "../../core/contract/nio.ts";

/** Another writer changed the Machine first: re-read and select again. */
export class ClaimConflictError extends Error {
  override readonly name = "ClaimConflictError";
}

/**
 * Labels `machine` as claimed by `cluster`, only if its labels are still
 * those it was selected by: a JSON patch whose `test` compares them, applied
 * atomically by the API server. A status write in between (NIO v1 rewrites
 * Machine status several times a second) does not get in the way; a label
 * change does. A Machine with no labels at all is claimed with a
 * resourceVersion precondition instead (`test` cannot say "absent").
 * Throws {@link ClaimConflictError} on a lost race.
 */
export async function claimMachine(client: KubeClient, machine: Machine, cluster: string): Promise<Machine> {
  const { name, namespace } = machine.metadata;
  const labels = machine.metadata.labels;
  try {
    if (labels) {
      return await client.jsonPatch<Machine>(MACHINES, name, namespace, [
        testLabels(labels),
        addLabel(CLUSTER_LABEL, cluster),
      ]);
    }
    return await client.mergePatch<Machine>(MACHINES, name, namespace, {
      metadata: { resourceVersion: machine.metadata.resourceVersion, labels: { [CLUSTER_LABEL]: cluster } },
    });
  } catch (err) {
    if (!isConflict(err) && !isNotFound(err) && !isUnprocessable(err)) throw err;
    throw new ClaimConflictError(
      `Machine ${name} changed while claiming it for cluster ${cluster}; selecting again`,
      { cause: err },
    );
  }
}

/** Removes `cluster`'s claim from `machine`, if it still holds it. Answers whether it did. */
export async function releaseMachine(client: KubeClient, machine: Machine, cluster: string): Promise<boolean> {
  const { name, namespace } = machine.metadata;
  if (machine.metadata.labels?.[CLUSTER_LABEL] !== cluster) return false;
  try {
    // The test makes the release conditional on the claim still being ours.
    await client.jsonPatch(MACHINES, name, namespace, [
      testLabel(CLUSTER_LABEL, cluster),
      removeLabel(CLUSTER_LABEL),
    ]);
    return true;
  } catch (err) {
    if (isNotFound(err)) return false;
    // A failed `test`: someone else holds it now; nothing to release.
    if (isUnprocessable(err)) return false;
    throw err;
  }
}
