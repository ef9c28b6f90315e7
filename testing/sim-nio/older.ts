/**
 * The older (Python) NIO, simulated: it applies a configuration over SSH on
 * every change of its spec, writes `Applied=True` with the commit and time
 * when the switch succeeded, and nothing at all when it failed or the
 * Machine cannot be reached.
 *
 * @module
 */
import { BOOTSTRAP_LABEL } from "../../core/labels.ts";
import { type Machine, MACHINES, NIXOS_CONFIGURATIONS, type NixosConfiguration } from "../../core/nio.ts";
import { jitter } from "./clock.ts";
import { type SimContext, usersOf } from "./context.ts";
import { flakeFilesProblem } from "./files.ts";
import {
  APPLIED_GENERATION_ANNOTATION,
  appliedMachineStatus,
  applyMessage,
  earliestConfiguration,
  FAIL_APPLY_ANNOTATION,
  fakeRevision,
  flagged,
  isApplied,
  NEVER_FINISH_ANNOTATION,
  olderAppliedStatus,
  releasedMachineStatus,
  SIM_FINALIZER,
} from "./status.ts";
import { setFinalizers, writeCfgStatus, writeMachineStatus } from "./writes.ts";

interface Attempt {
  uid: string;
  generation: number;
  dueAt: number;
  state: "running" | "hooks" | "hooked" | "failed";
  cause?: "annotation" | "hook";
  error?: string;
  retryAt?: number;
}

/** The older NIO's reconcile of NixosConfigurations (its state is in memory, as kopf's timers are). */
export function olderNio(ctx: SimContext) {
  const attempts = new Map<string, Attempt>();
  const removals = new Map<string, { uid: string; dueAt: number }>();
  const blockedAs = new Map<string, string>();
  const applyDelayMs = ctx.opts.applyDelayMs ?? 300;

  async function reconcile(key: string, ns: string, name: string): Promise<void> {
    let cfg = await ctx.kube.get<NixosConfiguration>(NIXOS_CONFIGURATIONS, name, ns);
    if (!cfg) {
      attempts.delete(key);
      removals.delete(key);
      blockedAs.delete(key);
      return;
    }
    if (cfg.metadata.deletionTimestamp) return await remove(key, cfg);
    removals.delete(key);
    const finalizers = cfg.metadata.finalizers ?? [];
    if (!finalizers.includes(SIM_FINALIZER)) cfg = await setFinalizers(ctx, cfg, [...finalizers, SIM_FINALIZER]);
    const machine = await ctx.kube.get<Machine>(MACHINES, cfg.spec.machineRef.name, ns);
    const blocked = blockedBy(cfg, machine);
    if (blocked || !machine) {
      attempts.delete(key);
      if (blockedAs.get(key) !== blocked) ctx.record("blocked", cfg, blocked);
      blockedAs.set(key, blocked ?? "");
      return;
    }
    blockedAs.delete(key);
    if (isApplied(cfg)) {
      attempts.delete(key);
      return await writeBack(cfg, machine);
    }
    await apply(key, cfg, machine);
  }

  function blockedBy(cfg: NixosConfiguration, machine: Machine | undefined): string | undefined {
    const m = cfg.spec.machineRef.name;
    if (!machine) return `Machine ${m} does not exist`;
    if (machine.status?.discoverable !== true) return `Machine ${m} is not discoverable`;
    const owner = earliestConfiguration(usersOf(ctx, cfg.metadata.namespace ?? "", m).concat(cfg));
    if (owner && owner.metadata.name !== cfg.metadata.name) return `Machine ${m} is used by ${owner.metadata.name}`;
    return undefined;
  }

  async function apply(key: string, cfg: NixosConfiguration, machine: Machine): Promise<void> {
    const gen = cfg.metadata.generation ?? 1;
    const uid = cfg.metadata.uid ?? "";
    const failApply = flagged(cfg, FAIL_APPLY_ANNOTATION) || flakeFilesProblem(ctx, cfg.spec, "older") !== undefined;
    let a = attempts.get(key);
    if (a && (a.uid !== uid || a.generation !== gen)) a = undefined;
    if (a?.state === "failed") {
      if (a.cause === "annotation" && failApply) return;
      if (a.cause === "hook" && Date.now() < (a.retryAt ?? 0)) return ctx.queue.addAfter(key, a.retryAt! - Date.now());
      a = undefined;
    }
    if (!a) {
      a = {
        uid,
        generation: gen,
        dueAt: Date.now() + applyDelayMs + jitter(`${key}@${gen}`, ctx.opts.jitterMs ?? 0),
        state: "running",
      };
      attempts.set(key, a);
      ctx.record("apply-started", cfg, cfg.spec.fullInstall ? "full install" : "switch");
      if (ctx.opts.onApplyStarted) ctx.background(ctx.opts.onApplyStarted(cfg, machine), "apply-started hook");
    }
    if (flagged(cfg, NEVER_FINISH_ANNOTATION)) return;
    const wait = a.dueAt - Date.now();
    if (wait > 0) return ctx.queue.addAfter(key, wait);
    if (failApply) {
      a.state = "failed";
      a.cause = "annotation";
      ctx.record("apply-failed", cfg, flakeFilesProblem(ctx, cfg.spec, "older") ?? FAIL_APPLY_ANNOTATION);
      return; // the older NIO writes nothing on failure
    }
    if (a.state === "running") {
      const bootstrap = cfg.metadata.labels?.[BOOTSTRAP_LABEL] === "true";
      if (!ctx.opts.onApplied && !(bootstrap && ctx.opts.onBootstrapApplied)) a.state = "hooked";
      else if (!ctx.signal.aborted) return runHooks(key, a, cfg, machine, bootstrap);
      else return;
    }
    if (a.state !== "hooked") return;
    const revision = await fakeRevision(cfg.spec.gitRepo, cfg.spec.ref);
    cfg = await writeCfgStatus(
      ctx,
      cfg,
      olderAppliedStatus(cfg.status, revision, applyMessage(cfg.spec, revision), new Date()),
    );
    ctx.counters.writes++;
    cfg = await ctx.kube.mergePatch<NixosConfiguration>(
      NIXOS_CONFIGURATIONS,
      cfg.metadata.name,
      cfg.metadata.namespace,
      {
        metadata: { annotations: { [APPLIED_GENERATION_ANNOTATION]: String(gen) } },
      },
    );
    attempts.delete(key);
    ctx.record("applied", { metadata: { ...cfg.metadata, generation: gen } }, revision);
    await writeBack(cfg, machine);
  }

  function runHooks(key: string, a: Attempt, cfg: NixosConfiguration, machine: Machine, bootstrap: boolean) {
    a.state = "hooks";
    ctx.background(
      (async () => {
        try {
          if (bootstrap && ctx.opts.onBootstrapApplied) await ctx.opts.onBootstrapApplied(cfg, machine);
          if (ctx.opts.onApplied) await ctx.opts.onApplied(cfg, machine);
          a.state = "hooked";
        } catch (err) {
          a.state = "failed";
          a.cause = "hook";
          a.error = `apply hook failed: ${(err as Error).message ?? err}`;
          a.retryAt = Date.now() + Math.max(1000, applyDelayMs);
          ctx.record("apply-failed", cfg, a.error);
        }
        ctx.queue.add(key);
      })(),
      "apply hooks",
    );
  }

  /** The Machine says what is applied on it: `hasConfiguration`, `appliedConfiguration`, commit and time. */
  async function writeBack(cfg: NixosConfiguration, machine: Machine): Promise<void> {
    const s = cfg.status;
    if (!s?.appliedCommit || !s.lastAppliedTime) return;
    await writeMachineStatus(
      ctx,
      machine,
      appliedMachineStatus(machine.status, cfg.metadata.name, s.appliedCommit, s.lastAppliedTime),
    );
  }

  async function remove(key: string, cfg: NixosConfiguration): Promise<void> {
    attempts.delete(key);
    blockedAs.delete(key);
    const finalizers = cfg.metadata.finalizers ?? [];
    if (!finalizers.includes(SIM_FINALIZER)) return;
    let r = removals.get(key);
    if (!r || r.uid !== cfg.metadata.uid) {
      r = { uid: cfg.metadata.uid ?? "", dueAt: Date.now() + (ctx.opts.removeDelayMs ?? 200) };
      removals.set(key, r);
      ctx.record("remove-started", cfg, cfg.spec.onRemoveFlake ?? "#minimal");
    }
    const wait = r.dueAt - Date.now();
    if (wait > 0) return ctx.queue.addAfter(key, wait);
    const machine = await ctx.kube.get<Machine>(MACHINES, cfg.spec.machineRef.name, cfg.metadata.namespace);
    if (machine && machine.status?.appliedConfiguration === cfg.metadata.name) {
      await writeMachineStatus(ctx, machine, releasedMachineStatus(machine.status, ctx.generation));
    }
    await setFinalizers(ctx, cfg, finalizers.filter((f) => f !== SIM_FINALIZER));
    removals.delete(key);
    ctx.record("removed", cfg);
    if (ctx.opts.onRemoved && machine) ctx.background(ctx.opts.onRemoved(cfg, machine), "removed hook");
  }

  return { reconcile };
}
