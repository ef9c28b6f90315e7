/**
 * Deleting a configuration on NIO v1, simulated (after `reconcileRemoving`
 * and `nixjob_controller.go`): the day-two NixCronJob goes, an orphan
 * decommission NixJob runs `onRemoveFlake` (retried up to three times), then
 * the Machine's write-back is cleared, the NixJob deleted and the finalizer
 * removed. With `decommissionLeak`, NIO's next reconcile (its cache still
 * shows the configuration) starts a second decommission NixJob nobody
 * removes: it runs `onRemoveFlake` again, and again each time its run Job
 * expires (the NixJob re-creates a missing run Job on its next poll).
 *
 * @module
 */
import {
  JOBS,
  type Machine,
  MACHINES,
  NIX_CRON_JOBS,
  NIX_JOBS,
  type NixosConfiguration,
} from "../../../core/contract/nio.ts";
import { dayTwoName } from "../../../core/contract/nio.ts";
import type { SimContext } from "../context.ts";
import { type CfgStatus, fakeRevision, releasedMachineStatus, SIM_FINALIZER } from "../status.ts";
import { setFinalizers, writeCfgStatus, writeMachineStatus } from "../writes.ts";
import { deleteJobAndPods } from "./runner.ts";
import { decommissionNixJob, nixJobRun, type Obj } from "./shapes.ts";

const CRONJOBS = { group: "batch", version: "v1", kind: "CronJob", plural: "cronjobs", namespaced: true };
type Job = Obj & { status?: { conditions?: { type: string; status: string }[] } };
type NixJob = Obj & { status?: { phase?: string; succeeded?: number; failed?: number; activeJob?: string } };

const done = (j: Job | undefined, type: string) =>
  j?.status?.conditions?.some((c) => c.type === type && c.status === "True");

/** One step of removing `cfg` (it has a deletionTimestamp). */
export async function removeConfiguration(ctx: SimContext, cfg: NixosConfiguration): Promise<void> {
  const ns = cfg.metadata.namespace!;
  if (!(cfg.metadata.finalizers ?? []).includes(SIM_FINALIZER)) return;
  await deleteDayTwo(ctx, ns, dayTwoName(cfg.metadata.name));
  const machine = await ctx.kube.get<Machine>(MACHINES, cfg.spec.machineRef.name, ns);
  if (!cfg.spec.onRemoveFlake || !machine) {
    if (machine) await clearMachine(ctx, cfg, machine);
    return await finalize(ctx, cfg, machine, false);
  }
  const nj = await findDecommission(ctx, ns, cfg.metadata.name);
  if (!nj) {
    const job = decommissionNixJob(cfg, machine);
    ctx.counters.writes++;
    await ctx.kube.create(NIX_JOBS, job);
    // Only the phase and the reference: NIO v1's removal path calls no `setPhase`, so the conditions (Ready
    // among them) and observedGeneration stay as the last reconcile left them.
    const status = { ...cfg.status, phase: "Removing", decommissionJobRef: job.metadata.name } as CfgStatus;
    await writeCfgStatus(ctx, cfg, status);
    return;
  }
  if ((nj.status?.succeeded ?? 0) > 0) {
    await clearMachine(ctx, cfg, machine);
    await deleteNixJob(ctx, nj);
    return await finalize(ctx, cfg, machine, ctx.opts.decommissionLeak !== false);
  }
  if (nj.status?.phase === "Failed") {
    // Three tries, then NIO finalizes anyway.
    const tries = Number(nj.metadata.annotations?.["sim.nio.homystack.com/tries"] ?? 1);
    await deleteNixJob(ctx, nj);
    if (tries >= 3) {
      await clearMachine(ctx, cfg, machine);
      return await finalize(ctx, cfg, machine, false);
    }
    const again = decommissionNixJob(cfg, machine);
    again.metadata.annotations = { "sim.nio.homystack.com/tries": String(tries + 1) };
    ctx.counters.writes++;
    await ctx.kube.create(NIX_JOBS, again);
  }
}

async function finalize(ctx: SimContext, cfg: NixosConfiguration, machine: Machine | undefined, leak: boolean) {
  await setFinalizers(ctx, cfg, (cfg.metadata.finalizers ?? []).filter((f) => f !== SIM_FINALIZER));
  ctx.record("removed", cfg);
  if (ctx.opts.onRemoved && machine) ctx.background(ctx.opts.onRemoved(cfg, machine), "removed hook");
  if (leak && machine) {
    // NIO's next reconcile of the same key, from a cache that still holds the configuration, finds no
    // decommission NixJob (it just deleted it) and creates one.
    ctx.counters.writes++;
    await ctx.kube.create(NIX_JOBS, decommissionNixJob(cfg, machine)).catch(() => undefined);
    ctx.record("leaked", cfg, `${cfg.metadata.name}-onremove`);
  }
}

async function clearMachine(ctx: SimContext, cfg: NixosConfiguration, machine: Machine): Promise<void> {
  if (machine.status?.appliedConfiguration !== cfg.metadata.name) return;
  await writeMachineStatus(ctx, machine, releasedMachineStatus(machine.status, ctx.generation));
}

async function findDecommission(ctx: SimContext, ns: string, config: string): Promise<NixJob | undefined> {
  const list = await ctx.kube.list<NixJob>(NIX_JOBS, {
    namespace: ns,
    labelSelector: `nio.homystack.com/config=${config},nio.homystack.com/operation=decommission`,
  });
  return list.items.find((j) => !j.metadata.deletionTimestamp);
}

/** Deletes a NixJob and what the garbage collector would take with it. */
async function deleteNixJob(ctx: SimContext, nj: NixJob): Promise<void> {
  const ns = nj.metadata.namespace!;
  ctx.counters.writes++;
  await ctx.kube.delete(NIX_JOBS, nj.metadata.name, ns);
  const jobs = await ctx.kube.list<Job>(JOBS, {
    namespace: ns,
    labelSelector: `nio.homystack.com/workload-name=${nj.metadata.name}`,
  });
  for (const j of jobs.items) await deleteJobAndPods(ctx, ns, j.metadata.name);
}

/** Deletes the day-two NixCronJob, its CronJob and their runs (no garbage collector runs in tests). */
async function deleteDayTwo(ctx: SimContext, ns: string, name: string): Promise<void> {
  const ncj = await ctx.kube.get<Obj>(NIX_CRON_JOBS, name, ns);
  if (!ncj) return;
  const cron = await ctx.kube.get<Obj>(CRONJOBS, name, ns);
  const owners = new Set([ncj.metadata.uid, cron?.metadata.uid].filter(Boolean));
  const jobs = await ctx.kube.list<Job>(JOBS, { namespace: ns });
  for (const j of jobs.items) {
    if (j.metadata.ownerReferences?.some((o) => owners.has(o.uid))) await deleteJobAndPods(ctx, ns, j.metadata.name);
  }
  ctx.counters.writes += cron ? 2 : 1;
  if (cron) await ctx.kube.delete(CRONJOBS, name, ns, { propagationPolicy: "Background" });
  await ctx.kube.delete(NIX_CRON_JOBS, name, ns);
}

/** NIO v1's NixJob controller: one run Job per commit (re-created when missing), its outcome on the NixJob. */
export function nixJobController(ctx: SimContext) {
  async function reconcile(key: string, ns: string, name: string): Promise<void> {
    const nj = await ctx.kube.get<NixJob>(NIX_JOBS, name, ns);
    if (!nj || nj.metadata.deletionTimestamp) return;
    const nix = nj.spec!["nix"] as { source: { gitRepo?: string; ref?: string; rev?: string } };
    const revision = await fakeRevision(nix.source.gitRepo, nix.source.rev ?? nix.source.ref);
    const want = nixJobRun(nj, revision);
    let job = await ctx.kube.get<Job>(JOBS, want.metadata.name, ns);
    if (!job) {
      // Also after the TTL took the last one: the NixJob runs again.
      ctx.counters.writes++;
      job = await ctx.kube.create<Job>(JOBS, want);
      ctx.record("run-created", job, "decommission");
    }
    const status = done(job, "Complete")
      ? { phase: "Ready", succeeded: 1, activeJob: job.metadata.name }
      : done(job, "Failed")
      ? { phase: "Failed", failed: 1, activeJob: job.metadata.name }
      : { phase: "Progressing", activeJob: job.metadata.name };
    if (JSON.stringify(nj.status ?? {}) !== JSON.stringify(status)) {
      ctx.counters.writes++;
      await ctx.kube.mergePatch(NIX_JOBS, name, ns, { status }, "status");
    }
    // NIO polls each workload once a minute (its own time).
    ctx.queue.addAfter(key, ctx.clock.real(60_000));
  }
  return { reconcile };
}
