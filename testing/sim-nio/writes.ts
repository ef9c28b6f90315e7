/**
 * The simulated NIO's writes, each counted, each version-checked: a stale
 * read costs a conflict and a retry, as it does NIO.
 *
 * @module
 */
import { type Machine, MACHINES, NIXOS_CONFIGURATIONS, type NixosConfiguration } from "../../core/contract/nio.ts";
import type { SimContext } from "./context.ts";
import { type CfgStatus, type MachineStatus, mergePatchOf, stableJson } from "./status.ts";

/** Writes `next` as the configuration's status unless it already is. */
export async function writeCfgStatus(
  ctx: SimContext,
  cfg: NixosConfiguration,
  next: CfgStatus,
): Promise<NixosConfiguration> {
  if (stableJson(cfg.status ?? {}) === stableJson(next)) return cfg;
  ctx.counters.writes++;
  return await ctx.kube.mergePatch<NixosConfiguration>(
    NIXOS_CONFIGURATIONS,
    cfg.metadata.name,
    cfg.metadata.namespace,
    {
      metadata: { resourceVersion: cfg.metadata.resourceVersion },
      status: mergePatchOf(cfg.status, next),
    },
    "status",
  );
}

/** Writes `next` as the Machine's status unless it already is. */
export async function writeMachineStatus(ctx: SimContext, m: Machine, next: MachineStatus): Promise<Machine> {
  if (stableJson(m.status ?? {}) === stableJson(next)) return m;
  ctx.counters.writes++;
  return await ctx.kube.mergePatch<Machine>(MACHINES, m.metadata.name, m.metadata.namespace, {
    metadata: { resourceVersion: m.metadata.resourceVersion },
    status: mergePatchOf(m.status, next),
  }, "status");
}

/** Replaces the configuration with these finalizers (a full update, as NIO does it). */
export async function setFinalizers(
  ctx: SimContext,
  cfg: NixosConfiguration,
  finalizers: string[],
): Promise<NixosConfiguration> {
  ctx.counters.writes++;
  return await ctx.kube.replace<NixosConfiguration>(NIXOS_CONFIGURATIONS, {
    ...cfg,
    metadata: { ...cfg.metadata, finalizers },
  });
}
