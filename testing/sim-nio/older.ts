/**
 * The older (Python) NIO, simulated: it applies a configuration over SSH on
 * every change of its spec, writes `Applied=True` with the commit and time
 * when the switch succeeded, and nothing at all when it failed or the
 * Machine cannot be reached.
 *
 * @module
 */
import { BOOTSTRAP_LABEL } from "../../core/contract/labels.ts";
import { type Machine, MACHINES, NIXOS_CONFIGURATIONS, type NixosConfiguration } from "../../core/contract/nio.ts";
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

/** The older NIO's memory, by queue key (in memory, as kopf's timers are). */
interface OlderState {
  ctx: SimContext;
  /** The apply under way or last failed. */
  attempts: Map<string, Attempt>;
  /** The removal under way, and when it ends. */
  removals: Map<string, { uid: string; dueAt: number }>;
  /** Why the configuration was last blocked (recorded once per reason). */
  blockedAs: Map<string, string>;
}

/** The older NIO's reconcile of NixosConfigurations (its state is in memory, as kopf's timers are). */
export function olderNio(ctx: SimContext) {
  const state: OlderState = { ctx, attempts: new Map(), removals: new Map(), blockedAs: new Map() };
  return { reconcile: (key: string, ns: string, name: string) => reconcile(state, key, ns, name) };
}

/** How long a switch takes. */
const applyDelayMs = (ctx: SimContext) => ctx.opts.applyDelayMs ?? 300;

/** One configuration: removed, blocked on its Machine, written back, or applied. */
async function reconcile(state: OlderState, key: string, ns: string, name: string): Promise<void> {
  const { ctx, attempts, removals, blockedAs } = state;
  let cfg = await ctx.kube.get<NixosConfiguration>(NIXOS_CONFIGURATIONS, name, ns);
  if (!cfg) {
    attempts.delete(key);
    removals.delete(key);
    blockedAs.delete(key);
    return;
  }
  if (cfg.metadata.deletionTimestamp) return await remove(state, key, cfg);
  removals.delete(key);
  const finalizers = cfg.metadata.finalizers ?? [];
  if (!finalizers.includes(SIM_FINALIZER)) cfg = await setFinalizers(ctx, cfg, [...finalizers, SIM_FINALIZER]);
  const machine = await ctx.kube.get<Machine>(MACHINES, cfg.spec.machineRef.name, ns);
  const blocked = blockedBy(ctx, cfg, machine);
  if (blocked || !machine) {
    attempts.delete(key);
    if (blockedAs.get(key) !== blocked) ctx.record("blocked", cfg, blocked);
    blockedAs.set(key, blocked ?? "");
    return;
  }
  blockedAs.delete(key);
  if (isApplied(cfg)) {
    attempts.delete(key);
    return await writeBack(ctx, cfg, machine);
  }
  await apply(state, key, cfg, machine);
}

/** Why the configuration cannot be applied on `machine`, if it cannot. */
function blockedBy(ctx: SimContext, cfg: NixosConfiguration, machine: Machine | undefined): string | undefined {
  const m = cfg.spec.machineRef.name;
  if (!machine) return `Machine ${m} does not exist`;
  if (machine.status?.discoverable !== true) return `Machine ${m} is not discoverable`;
  const owner = earliestConfiguration(usersOf(ctx, cfg.metadata.namespace ?? "", m).concat(cfg));
  if (owner && owner.metadata.name !== cfg.metadata.name) return `Machine ${m} is used by ${owner.metadata.name}`;
  return undefined;
}

/** Starts a switch, waits for it, runs the hooks, and on success writes `Applied` and the Machine's status. */
async function apply(state: OlderState, key: string, cfg: NixosConfiguration, machine: Machine): Promise<void> {
  const { ctx, attempts } = state;
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
      dueAt: Date.now() + applyDelayMs(ctx) + jitter(`${key}@${gen}`, ctx.opts.jitterMs ?? 0),
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
    else if (!ctx.signal.aborted) return runHooks(ctx, key, a, cfg, machine, bootstrap);
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
  await writeBack(ctx, cfg, machine);
}

/** Runs the apply hooks beside the queue; the attempt records how they went, and the key is queued again. */
function runHooks(
  ctx: SimContext,
  key: string,
  a: Attempt,
  cfg: NixosConfiguration,
  machine: Machine,
  bootstrap: boolean,
): void {
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
        a.retryAt = Date.now() + Math.max(1000, applyDelayMs(ctx));
        ctx.record("apply-failed", cfg, a.error);
      }
      ctx.queue.add(key);
    })(),
    "apply hooks",
  );
}

/** The Machine says what is applied on it: `hasConfiguration`, `appliedConfiguration`, commit and time. */
async function writeBack(ctx: SimContext, cfg: NixosConfiguration, machine: Machine): Promise<void> {
  const s = cfg.status;
  if (!s?.appliedCommit || !s.lastAppliedTime) return;
  await writeMachineStatus(
    ctx,
    machine,
    appliedMachineStatus(machine.status, cfg.metadata.name, s.appliedCommit, s.lastAppliedTime),
  );
}

/** The removal flake runs for a while, then the Machine is released and the finalizer goes. */
async function remove(state: OlderState, key: string, cfg: NixosConfiguration): Promise<void> {
  const { ctx, attempts, removals, blockedAs } = state;
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
