/**
 * How the simulated NIO's parts are put together: the shared context, one
 * reconcile that hands each queue key to its controller, the worker that
 * drains the queue, and the watches that fill it.
 *
 * @module
 */
import type { KubeClient, KubeObject } from "../../lib/kube/client.ts";
import { isConflict, isNotFound } from "../../lib/kube/errors.ts";
import {
  JOBS,
  type Machine,
  MACHINES,
  NIX_CRON_JOBS,
  NIX_JOBS,
  NIXOS_CONFIGURATIONS,
} from "../../core/contract/nio.ts";
import type { NixosConfiguration } from "../../core/contract/nio.ts";
import { SimClock } from "./clock.ts";
import { keyOf, type SimContext, type SimEvent, type SimEventKind, type SimNioOptions } from "./context.ts";
import { runInformer, WorkQueue } from "./loop.ts";
import { machineController } from "./machines.ts";
import { olderNio } from "./older.ts";
import { configController } from "./v1/config.ts";
import { cronController } from "./v1/cron.ts";
import { nixJobController } from "./v1/decommission.ts";
import { jobRunner } from "./v1/runner.ts";
import { RUN_ANNOTATION } from "./v1/shapes.ts";

type Owned = KubeObject & { metadata: { ownerReferences?: { kind: string; name: string }[] } };

/** The context every part shares; hooks run through `background` land in `tasks`, for `stop()` to wait on. */
export function simContext(
  client: KubeClient,
  opts: SimNioOptions,
  signal: AbortSignal,
  tasks: Set<Promise<void>>,
): SimContext {
  const onError = opts.onError ??
    ((err: unknown, what: string) => console.warn(`sim-nio: ${what}: ${(err as Error).message ?? err}`));
  const ctx: SimContext = {
    kube: client.with({ fieldManager: "sim-nio", userAgent: "sim-nio" }),
    generation: opts.generation ?? "v1",
    opts,
    clock: new SimClock(opts.minuteMs ?? 1000),
    queue: new WorkQueue(),
    signal,
    history: [],
    counters: { reconciles: 0, writes: 0, errors: 0 },
    configs: new Map(),
    jobs: new Map(),
    record(kind: SimEventKind, obj, detail, run) {
      const ev: SimEvent = { at: Date.now(), kind, namespace: obj.metadata.namespace ?? "", name: obj.metadata.name };
      if (run !== undefined) ev.run = run;
      if (obj.metadata.generation !== undefined) ev.generation = obj.metadata.generation;
      if (detail !== undefined) ev.detail = detail;
      const hash = obj.metadata.annotations?.["nico.homystack.com/spec-hash"];
      if (hash && (kind === "apply-started" || kind === "applied" || kind === "apply-failed")) ev.specHash = hash;
      ctx.history.push(ev);
      opts.log?.(
        `${kind} ${ev.namespace}/${ev.name}${ev.generation ? ` gen ${ev.generation}` : ""}${
          detail ? `: ${detail}` : ""
        }`,
      );
    },
    background(p, what) {
      const task = p.catch((err) => {
        ctx.counters.errors++;
        onError(err, what);
      });
      tasks.add(task);
      task.then(() => tasks.delete(task));
    },
    onError,
  };
  return ctx;
}

/** One reconcile for every queue key (`kind/namespace/name`), handed to the controller of its kind. */
export function reconcilerFor(ctx: SimContext): (key: string) => Promise<void> {
  const machines = machineController(ctx);
  const older = olderNio(ctx);
  const configs = configController(ctx);
  const crons = cronController(ctx);
  const runs = jobRunner(ctx);
  const nixJobs = nixJobController(ctx);
  return async (key: string) => {
    const [kind, ns, name] = key.split("/") as [string, string, string];
    ctx.counters.reconciles++;
    if (kind === "machine") return await machines.reconcile(key, ns, name);
    if (kind === "cfg") return await (ctx.generation === "v1" ? configs : older).reconcile(key, ns, name);
    if (kind === "ncj") return await crons.reconcile(key, ns, name);
    if (kind === "tick") return await crons.tick(ns, name);
    if (kind === "job") return await runs.reconcile(key, ns, name);
    if (kind === "nj") return await nixJobs.reconcile(key, ns, name);
  };
}

/**
 * Reconciles one key at a time until the queue closes: a conflict or a vanished object is tried again
 * shortly, any other error with exponential back-off (up to 5 s).
 */
export async function work(ctx: SimContext, reconcile: (key: string) => Promise<void>): Promise<void> {
  const backoff = new Map<string, number>();
  while (true) {
    const key = await ctx.queue.next();
    if (key === undefined) return;
    try {
      await reconcile(key);
      backoff.delete(key);
    } catch (err) {
      if (ctx.signal.aborted) continue;
      if (isConflict(err) || isNotFound(err)) {
        ctx.queue.addAfter(key, 10);
        continue;
      }
      ctx.counters.errors++;
      const n = backoff.get(key) ?? 0;
      backoff.set(key, n + 1);
      ctx.onError(err, `reconcile ${key}`);
      ctx.queue.addAfter(key, Math.min(5000, 50 * 2 ** n));
    }
  }
}

const nsOf = (o: KubeObject) => o.metadata.namespace ?? "";

/** Queues `kind/ns/name`, if there is a name. */
function add(ctx: SimContext, kind: string, ns: string, name: string | undefined): void {
  if (name) ctx.queue.add(keyOf(kind, ns, name));
}

/** Every cached configuration in `ns` that targets Machine `machine`. */
function configsOn(ctx: SimContext, ns: string, machine: string | undefined): NixosConfiguration[] {
  return [...ctx.configs.values()].filter((c) => c.metadata.namespace === ns && c.spec?.machineRef?.name === machine);
}

/** A list+watch of `r` until the simulator stops; watch errors count as errors. */
function watch<T extends KubeObject>(
  ctx: SimContext,
  r: Parameters<typeof runInformer>[1],
  onList: (items: T[]) => void,
  onEvent: (type: string, obj: T) => void,
): Promise<void> {
  return runInformer<T>(ctx.kube, r, {
    namespace: ctx.opts.namespace,
    signal: ctx.signal,
    onList,
    onEvent,
    onError(err) {
      ctx.counters.errors++;
      ctx.onError(err, `watch ${r.plural}`);
    },
  });
}

/** Watches Machines and NixosConfigurations (keeping `ctx.configs` current), and with v1 what NIO v1 runs. */
export function watchAll(ctx: SimContext): Promise<void>[] {
  const loops = [
    watch<Machine>(ctx, MACHINES, (items) => {
      for (const m of items) add(ctx, "machine", nsOf(m), m.metadata.name);
      for (const c of ctx.configs.values()) add(ctx, "cfg", nsOf(c), c.metadata.name);
    }, (_type, m) => {
      add(ctx, "machine", nsOf(m), m.metadata.name);
      for (const c of configsOn(ctx, nsOf(m), m.metadata.name)) add(ctx, "cfg", nsOf(c), c.metadata.name);
    }),
    watch<NixosConfiguration>(ctx, NIXOS_CONFIGURATIONS, (items) => {
      const before = [...ctx.configs.values()];
      ctx.configs.clear();
      for (const c of items) ctx.configs.set(`${nsOf(c)}/${c.metadata.name}`, c);
      for (const c of [...before, ...items]) add(ctx, "cfg", nsOf(c), c.metadata.name);
    }, (type, c) => {
      const id = `${nsOf(c)}/${c.metadata.name}`;
      const prev = ctx.configs.get(id);
      if (type === "DELETED") ctx.configs.delete(id);
      else ctx.configs.set(id, c);
      add(ctx, "cfg", nsOf(c), c.metadata.name);
      for (const u of configsOn(ctx, nsOf(c), prev?.spec?.machineRef?.name)) add(ctx, "cfg", nsOf(u), u.metadata.name);
      for (const u of configsOn(ctx, nsOf(c), c.spec?.machineRef?.name)) add(ctx, "cfg", nsOf(u), u.metadata.name);
    }),
  ];
  return ctx.generation === "v1" ? [...loops, ...watchV1(ctx)] : loops;
}

/**
 * Puts the Job in the Job cache under each of its owners, or takes it out. (An owner taken off a Job would leave it
 * under that owner too; the reader checks the Job's owners as they are.)
 */
function cacheJob(ctx: SimContext, j: KubeObject, present: boolean): void {
  const key = `${nsOf(j)}/${j.metadata.name}`;
  for (const o of j.metadata.ownerReferences ?? []) {
    const owned = ctx.jobs.get(o.uid) ?? new Map<string, KubeObject>();
    if (present) owned.set(key, j);
    else owned.delete(key);
    if (owned.size) ctx.jobs.set(o.uid, owned);
    else ctx.jobs.delete(o.uid);
  }
}

/** NIO v1's own objects: NixCronJobs, their Jobs and the decommission NixJobs, each back to its configuration. */
function watchV1(ctx: SimContext): Promise<void>[] {
  const configOf = (o: KubeObject) => o.metadata.labels?.["nio.homystack.com/config"];
  const onCron = (n: KubeObject) => {
    add(ctx, "ncj", nsOf(n), n.metadata.name);
    add(ctx, "cfg", nsOf(n), configOf(n));
  };
  const onJob = (j: Owned) => {
    if (!j.metadata.annotations?.[RUN_ANNOTATION]) return;
    add(ctx, "job", nsOf(j), j.metadata.name);
    for (const o of j.metadata.ownerReferences ?? []) {
      if (o.kind === "NixCronJob" || o.kind === "CronJob") add(ctx, "ncj", nsOf(j), o.name);
      if (o.kind === "NixJob") add(ctx, "nj", nsOf(j), o.name);
    }
  };
  const onNixJob = (n: KubeObject) => {
    add(ctx, "nj", nsOf(n), n.metadata.name);
    add(ctx, "cfg", nsOf(n), configOf(n));
  };
  return [
    watch<KubeObject>(ctx, NIX_CRON_JOBS, (items) => items.forEach(onCron), (_t, n) => onCron(n)),
    // The cache first, then the queue: a reconcile the event causes reads the Job as the event had it.
    watch<Owned>(ctx, JOBS, (items) => {
      ctx.jobs.clear();
      for (const j of items) cacheJob(ctx, j, true);
      items.forEach(onJob);
    }, (type, j) => {
      cacheJob(ctx, j, type !== "DELETED");
      onJob(j);
    }),
    watch<KubeObject>(ctx, NIX_JOBS, (items) => items.forEach(onNixJob), (_t, n) => onNixJob(n)),
  ];
}
