/**
 * Claiming Machines: a label `nico.homystack.com/cluster=<name>` written with
 * a resourceVersion precondition, so two clusters can never both win.
 *
 * @module
 */
import { isDeepStrictEqual } from "node:util";
import type { KubeClient } from "../../lib/kube/client.ts";
import { isConflict, isNotFound, isUnprocessable } from "../../lib/kube/errors.ts";
import { MACHINES } from "../../core/nio.ts";
import { CLUSTER_LABEL } from "../../core/labels.ts";
import type { Machine } from "../../core/nio.ts";

/** Another writer changed the Machine first: re-read and select again. */
export class ClaimConflictError extends Error {
  override readonly name = "ClaimConflictError";
}

/**
 * Labels `machine` as claimed by `cluster`, only if it is unchanged since it
 * was read (`metadata.resourceVersion`). Throws {@link ClaimConflictError} on
 * a lost race.
 */
export async function claimMachine(client: KubeClient, machine: Machine, cluster: string): Promise<Machine> {
  const { name, namespace } = machine.metadata;
  let current = machine;
  // NIO v1 rewrites every Machine's status twice a minute: a conflict caused by that alone (labels as
  // selected, still unclaimed) is retried against the fresh object instead of starting the selection over.
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      return await client.mergePatch<Machine>(MACHINES, name, namespace, {
        metadata: { resourceVersion: current.metadata.resourceVersion, labels: { [CLUSTER_LABEL]: cluster } },
      });
    } catch (err) {
      if (!isConflict(err) && !isNotFound(err)) throw err;
      const fresh = isConflict(err) ? await client.get<Machine>(MACHINES, name, namespace) : undefined;
      if (!fresh || !isDeepStrictEqual(fresh.metadata.labels ?? {}, machine.metadata.labels ?? {})) {
        throw new ClaimConflictError(
          `Machine ${name} changed while claiming it for cluster ${cluster}; selecting again`,
          { cause: err },
        );
      }
      current = fresh;
    }
  }
  throw new ClaimConflictError(
    `Machine ${name} kept changing while claiming it for cluster ${cluster}; selecting again`,
  );
}

/** Removes `cluster`'s claim from `machine`, if it still holds it. Answers whether it did. */
export async function releaseMachine(client: KubeClient, machine: Machine, cluster: string): Promise<boolean> {
  const { name, namespace } = machine.metadata;
  if (machine.metadata.labels?.[CLUSTER_LABEL] !== cluster) return false;
  try {
    // The test makes the release conditional on the claim still being ours.
    await client.jsonPatch(MACHINES, name, namespace, [
      { op: "test", path: `/metadata/labels/${CLUSTER_LABEL.replace("/", "~1")}`, value: cluster },
      { op: "remove", path: `/metadata/labels/${CLUSTER_LABEL.replace("/", "~1")}` },
    ]);
    return true;
  } catch (err) {
    if (isNotFound(err)) return false;
    // A failed `test`: someone else holds it now; nothing to release.
    if (isUnprocessable(err)) return false;
    throw err;
  }
}
