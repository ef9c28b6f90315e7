/**
 * Creating or updating one NixosConfiguration. The spec changes only when the
 * rollout planner says so; labels and owner follow at once. A configuration
 * of that name that is not this cluster's is a {@link ClusterProblem}.
 *
 * @module
 */
import { isConflict } from "../../../lib/kube/errors.ts";
import { NIXOS_CONFIGURATIONS } from "../../../core/contract/nio.ts";
import { labelsToWrite } from "../../../core/render/drift.ts";
import { SPEC_CHANGED_ANNOTATION, SPEC_HASH_ANNOTATION } from "../../../core/contract/labels.ts";
import type { NixosConfiguration } from "../../../core/contract/nio.ts";
import { isOwnedBy } from "../../../core/machines/selection.ts";
import { specDrift } from "../../../core/render/drift.ts";
import { KEEP_SCHEDULE, sameSchedule } from "../../../core/nodes/runs.ts";
import { ClusterProblem } from "../problem.ts";
import type { ClusterScope } from "../scope.ts";
import { postEvent } from "../../events.ts";

/** Reason of the problem a foreign NixosConfiguration causes. */
export const FOREIGN_CONFIGURATION = "ForeignConfiguration";

/**
 * Creates or updates `desired`; answers what the server now has, or undefined when untouched. The spec's
 * content changes only when `renderSpec`; `schedule` (NIO v1's `dayTwoSchedule`, NICO's to set at any time:
 * it says when NIO runs, not what) is written whenever it differs, without counting as a change of the spec.
 */
export async function applyConfiguration(
  s: ClusterScope,
  desired: NixosConfiguration,
  existing: NixosConfiguration | undefined,
  renderSpec: boolean,
  scheduleWanted?: string | undefined | typeof KEEP_SCHEDULE,
): Promise<NixosConfiguration | undefined> {
  const { client, recorder } = s.deps;
  const name = desired.metadata.name;
  const stamp = { [SPEC_CHANGED_ANNOTATION]: s.now.toISOString() };
  const schedule = scheduleWanted === KEEP_SCHEDULE ? existing?.spec.dayTwoSchedule : scheduleWanted;
  const withSchedule = (spec: NixosConfiguration["spec"]) => {
    const { dayTwoSchedule: _old, ...rest } = spec;
    return schedule ? { ...rest, dayTwoSchedule: schedule } : rest;
  };
  if (!existing) {
    if (!renderSpec) return undefined;
    const obj = {
      ...desired,
      metadata: { ...desired.metadata, annotations: { ...desired.metadata.annotations, ...stamp } },
      spec: withSchedule(desired.spec),
    };
    let existed = false;
    const created = await client.create(NIXOS_CONFIGURATIONS, obj).catch(async (err) => {
      if (!isConflict(err)) throw err;
      existed = true; // an earlier pass created it and the cache has not seen it yet
      return await client.get<NixosConfiguration>(NIXOS_CONFIGURATIONS, name, s.namespace);
    });
    if (created && !isOwnedBy(created, s.ref)) throw foreign(s, created, desired);
    if (!existed || !created) {
      s.log.info("created configuration", { configuration: name });
      return created;
    }
    // Judged below like a cached one: a child the cache does not hold yet may carry another shard's label (its
    // cluster moved, and the old shard's last pass wrote it): it is relabelled.
    existing = created;
  }
  if (!isOwnedBy(existing, s.ref)) throw foreign(s, existing, desired);
  // Judged by content: a hand edit of a field NICO owns is repaired (as a rollout step, when the planner says so).
  const drift = specDrift(existing.spec, desired.spec);
  const hashChanged = renderSpec && drift.length > 0;
  const scheduleChanged = !sameSchedule(existing.spec.dayTwoSchedule, schedule);
  // A shard label too: a child of a cluster that moved between shards follows it (core/contract/shards.ts).
  const relabel = labelsToWrite(existing.metadata.labels, desired.metadata.labels ?? {});
  if (!hashChanged && !relabel && !scheduleChanged) return existing;
  const labels = relabel ?? existing.metadata.labels ?? {};
  const { status: _status, ...rest } = existing;
  const updated = await client.replace<NixosConfiguration>(NIXOS_CONFIGURATIONS, {
    ...rest,
    metadata: {
      ...existing.metadata,
      labels,
      annotations: hashChanged
        ? { ...existing.metadata.annotations, ...desired.metadata.annotations, ...stamp }
        : existing.metadata.annotations ?? {},
      ownerReferences: desired.metadata.ownerReferences!,
    },
    spec: withSchedule(hashChanged ? desired.spec : existing.spec),
  });
  if (hashChanged) {
    const edited =
      existing.metadata.annotations?.[SPEC_HASH_ANNOTATION] === desired.metadata.annotations?.[SPEC_HASH_ANNOTATION];
    if (edited) {
      const fields = drift.map((f) => `spec.${f}`).join(", ");
      postEvent(
        recorder,
        s.cluster,
        "ConfigurationDriftRepaired",
        `NixosConfiguration ${name} was edited by hand (${fields}); restored NICO's value`,
      );
    }
    s.log.info("updated configuration", { configuration: name, fields: drift });
  }
  return updated;
}

function foreign(s: ClusterScope, existing: NixosConfiguration, desired: NixosConfiguration): ClusterProblem {
  const n = existing.metadata.name;
  const machine = desired.spec.machineRef.name;
  return new ClusterProblem(
    FOREIGN_CONFIGURATION,
    `NixosConfiguration ${n} exists but does not belong to cluster ${s.name}; ` +
      `delete it, or remove Machine ${machine} from the cluster's spec`,
  );
}
