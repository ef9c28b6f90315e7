/**
 * NIO v1's NixosConfiguration orchestrator, simulated (after
 * `nixosconfiguration_controller.go`): it adds its finalizer with a full
 * update (Go's `omitempty` drops `fullInstall: false`, so the generation
 * moves), sets `observedGeneration` at the start of every reconcile, blocks
 * on a Machine another configuration owns or that cannot be reached (and
 * says `Stalled` then too), projects the day-two NixCronJob and reports
 * `Ready` once any run ever succeeded. Deletion runs the decommission NixJob.
 *
 * @module
 */
import {
  type Machine,
  MACHINES,
  NIX_CRON_JOBS,
  NIXOS_CONFIGURATIONS,
  type NixosConfiguration,
} from "../../../core/contract/nio.ts";
import { dayTwoName } from "../../../core/contract/nio.ts";
import { type SimContext, usersOf } from "../context.ts";
import {
  appliedMachineStatus,
  earliestConfiguration,
  FAIL_APPLY_ANNOTATION,
  flagged,
  SIM_FINALIZER,
  stableJson,
} from "../status.ts";
import { writeCfgStatus, writeMachineStatus } from "../writes.ts";
import { removeConfiguration } from "./decommission.ts";
import { dayTwoCronJob, type Obj } from "./shapes.ts";
import { type Phase, v1Status } from "./status.ts";

type Cron = Obj & {
  status?: {
    phase?: string;
    lastSuccessfulTime?: string;
    rolledOutRevision?: string;
    conditions?: { type: string; status: string; reason?: string; message?: string }[];
  };
};

/** The NixosConfiguration controller's state: the simulator's context and the full installs under way. */
interface ConfigState {
  ctx: SimContext;
  /** By queue key: the configuration installing, when its install ends, and how often it failed. */
  installs: Map<string, { uid: string; dueAt: number; tries: number }>;
}

/** NIO v1's NixosConfiguration orchestrator: `reconcile` one configuration by its key. */
export function configController(ctx: SimContext) {
  const state: ConfigState = { ctx, installs: new Map() };
  return { reconcile: (key: string, ns: string, name: string) => reconcile(state, key, ns, name) };
}

/** Finalizer, ownership and reachability of the Machine, the full install, the day-two NixCronJob, the status. */
async function reconcile(state: ConfigState, key: string, ns: string, name: string): Promise<void> {
  const { ctx, installs } = state;
  let cfg = await ctx.kube.get<NixosConfiguration>(NIXOS_CONFIGURATIONS, name, ns);
  if (!cfg) return void installs.delete(key);
  if (cfg.metadata.deletionTimestamp) return await removeConfiguration(ctx, cfg);
  if (!(cfg.metadata.finalizers ?? []).includes(SIM_FINALIZER)) {
    // A full update of the Go object: `fullInstall: false` is omitted (omitempty), which changes the spec.
    const { fullInstall, ...spec } = cfg.spec;
    ctx.counters.writes++;
    cfg = await ctx.kube.replace<NixosConfiguration>(NIXOS_CONFIGURATIONS, {
      ...cfg,
      metadata: { ...cfg.metadata, finalizers: [...(cfg.metadata.finalizers ?? []), SIM_FINALIZER] },
      spec: fullInstall ? { ...spec, fullInstall } : spec,
    });
  }
  const gen = cfg.metadata.generation ?? 1;
  const set = (phase: Phase) => writeCfgStatus(ctx, cfg!, v1Status(cfg!.status, gen, phase, new Date()));
  const machineName = cfg.spec.machineRef.name;
  const owner = earliestConfiguration(usersOf(ctx, ns, machineName).concat(cfg));
  if (owner && owner.metadata.name !== cfg.metadata.name) {
    const message = `machine "${machineName}" already owned by NixosConfiguration "${owner.metadata.name}"`;
    return await blocked(ctx, cfg, "MachineInUse", message, set);
  }
  const machine = await ctx.kube.get<Machine>(MACHINES, machineName, ns);
  if (!machine) return await blocked(ctx, cfg, "MachineNotReady", `Machine "${machineName}" not found`, set);
  if (!machine.status?.discoverable) {
    return await blocked(ctx, cfg, "MachineNotReady", `Machine "${machineName}" is not reachable via SSH`, set);
  }
  if (cfg.spec.fullInstall && !(cfg.status as { fullDiskInstallCompleted?: boolean })?.fullDiskInstallCompleted) {
    if (!(await install(state, key, cfg, set))) return;
    cfg = (await ctx.kube.get<NixosConfiguration>(NIXOS_CONFIGURATIONS, name, ns)) ?? cfg;
  }
  const cron = await ensureCron(ctx, cfg, machine, false);
  const cs = cron.status ?? {};
  const applied = !!cs.lastSuccessfulTime ||
    !!(cfg.status as { fullDiskInstallCompleted?: boolean })?.fullDiskInstallCompleted;
  const extra = {
    dayTwoCronJobRef: cron.metadata.name,
    resolvedRevision: cs.rolledOutRevision,
    targetMachine: machineName,
  };
  const gitSynced = cs.conditions?.find((c) => c.type === "GitSynced");
  if (cs.phase === "Ready" && cs.lastSuccessfulTime) {
    const last = { lastAppliedTime: cs.lastSuccessfulTime };
    cfg = await set({ phase: "Ready", applied: true, extra: { ...extra, ...last }, gitSynced });
    await writeMachineStatus(ctx, machine, {
      ...appliedMachineStatus(machine.status, cfg.metadata.name, cs.rolledOutRevision ?? "", cs.lastSuccessfulTime),
    });
    return;
  }
  if (cs.phase === "Degraded" || cs.phase === "Failed") {
    await set({ phase: "Degraded", message: "Day-2 convergence run failed", applied, extra });
    return;
  }
  const last = cs.lastSuccessfulTime ? { lastAppliedTime: cs.lastSuccessfulTime } : {};
  await set({ phase: "Converging", applied, extra: { ...extra, ...last }, gitSynced });
}

/** Blocked on the Machine: says why, and suspends the day-two NixCronJob if there is one. */
async function blocked(
  ctx: SimContext,
  cfg: NixosConfiguration,
  reason: "MachineInUse" | "MachineNotReady",
  message: string,
  set: (p: Phase) => Promise<NixosConfiguration>,
): Promise<void> {
  if (cfg.status?.phase !== "Blocked") ctx.record("blocked", cfg, `${reason}: ${message}`);
  await set({ phase: "Blocked", reason, message, applied: false });
  const cron = await ctx.kube.get<Cron>(NIX_CRON_JOBS, dayTwoName(cfg.metadata.name), cfg.metadata.namespace);
  const nix = cron?.spec?.["nix"] as { suspend?: boolean } | undefined;
  if (cron && nix && !nix.suspend) {
    ctx.counters.writes++;
    await ctx.kube.replace(NIX_CRON_JOBS, { ...cron, spec: { ...cron.spec, nix: { ...nix, suspend: true } } });
  }
}

/** A full install (nixos-anywhere) as one timed step; failures retried three times, then Degraded. */
async function install(
  state: ConfigState,
  key: string,
  cfg: NixosConfiguration,
  set: (p: Phase) => Promise<NixosConfiguration>,
): Promise<boolean> {
  const { ctx, installs } = state;
  const uid = cfg.metadata.uid ?? "";
  let i = installs.get(key);
  if (!i || i.uid !== uid) {
    installs.set(key, i = { uid, dueAt: Date.now() + (ctx.opts.applyDelayMs ?? 300), tries: 0 });
  }
  if (Date.now() < i.dueAt) {
    await set({ phase: "Installing", message: "Full-disk install is running", applied: false });
    ctx.queue.addAfter(key, i.dueAt - Date.now());
    return false;
  }
  if (flagged(cfg, FAIL_APPLY_ANNOTATION)) {
    if (i.tries >= 3) {
      await set({ phase: "Degraded", message: "Full-disk install failed after 3 retries", applied: false });
      return false;
    }
    i.tries++;
    i.dueAt = Date.now() + (ctx.opts.applyDelayMs ?? 300);
    ctx.queue.addAfter(key, i.dueAt - Date.now());
    return false;
  }
  ctx.counters.writes++;
  await ctx.kube.mergePatch(NIXOS_CONFIGURATIONS, cfg.metadata.name, cfg.metadata.namespace, {
    status: { fullDiskInstallCompleted: true },
  }, "status");
  installs.delete(key);
  return true;
}

/** Creates or re-templates the configuration's day-two NixCronJob. */
async function ensureCron(ctx: SimContext, cfg: NixosConfiguration, machine: Machine, suspend: boolean): Promise<Cron> {
  const want = dayTwoCronJob(
    { ...cfg, apiVersion: "nio.homystack.com/v1alpha1", kind: "NixosConfiguration" },
    machine,
    suspend,
  );
  const have = await ctx.kube.get<Cron>(NIX_CRON_JOBS, want.metadata.name, want.metadata.namespace);
  if (have && stableJson(have.spec) === stableJson(want.spec)) return have;
  ctx.counters.writes++;
  if (!have) return await ctx.kube.create<Cron>(NIX_CRON_JOBS, want);
  return await ctx.kube.replace<Cron>(NIX_CRON_JOBS, { ...have, spec: want.spec! });
}
