/**
 * What the simulated NIO's own tests share (tests/integration/sim_nio*_test.ts): a namespace with a
 * simulator watching it ({@link simWorld}), readers of what NIO v1 makes (Jobs, Pods, NixCronJobs), and a node
 * the simulator reports Ready.
 */
import assert from "node:assert/strict";
import type { KubeClient } from "../lib/kube/client.ts";
import type { KubeObject } from "../lib/kube/types.ts";
import { PODS, type Resource, resource } from "../lib/kube/resources.ts";
import {
  findCondition,
  JOBS,
  type Machine,
  MACHINES,
  NIXOS_CONFIGURATIONS,
  type NixosConfiguration,
  type NixosConfigurationSpec,
} from "../core/contract/nio.ts";
import { sharedControlPlane } from "../testing/helpers.ts";
import { simConfiguration, simMachine, type SimNioOptions, startSimNio, waitFor } from "../testing/sim-nio.ts";

/** The run's shared control plane. */
export const env = sharedControlPlane();
export const CRONJOBS = resource("batch", "v1", "CronJob", "cronjobs");
export const RFC3339 = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;
export const PINNED = "0123456789abcdef0123456789abcdef01234567";
export const DEBUG = Deno.env.get("SIM_NIO_DEBUG") !== undefined;
/** Once a year of NIO's time: where counting runs, no scheduled run may come in between. */
export const YEARLY = "0 0 1 1 *";

export interface Cond {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
}
export type Conditioned = { status?: { conditions?: Cond[] } };
export type Job = KubeObject & {
  spec?: { ttlSecondsAfterFinished?: number; template?: { metadata?: { labels?: Record<string, string> } } };
  status?: { active?: number; failed?: number; succeeded?: number; completionTime?: string; conditions?: Cond[] };
};
export type Pod = KubeObject & {
  status?: {
    phase?: string;
    containerStatuses?: { state?: { terminated?: { exitCode: number; message?: string } } }[];
  };
};
export type NixCronJob = KubeObject & {
  spec?: {
    nix: { suspend?: boolean; source: Record<string, string>; args: string[]; triggerOnChange?: boolean };
    cronJobTemplate: { schedule: string; concurrencyPolicy?: string };
  };
  status?: {
    phase?: string;
    observedGeneration?: number;
    activeJobs?: string[];
    lastFailedTime?: string;
    rolledOutRevision?: string;
    conditions?: Cond[];
  };
};
export type CronJob = KubeObject & { spec?: { schedule: string; suspend?: boolean; concurrencyPolicy?: string } };
export type NixJob = KubeObject & {
  spec?: { nix: { args: string[] }; jobTemplate?: { ttlSecondsAfterFinished?: number } };
};

export const cond = (o: Conditioned | undefined, type: string) => findCondition(o?.status?.conditions, type);
export const jobDone = (j: Job, type: "Complete" | "Failed") => cond(j, type)?.status === "True";
export const owners = (o: KubeObject) => (o.metadata.ownerReferences ?? []).map((r) => `${r.kind}/${r.name}`);
export const attemptOf = (p: Pod) => Number(p.metadata.annotations?.["sim.nio.homystack.com/attempt"]);
export const minuteOf = (job: Job) => Number(job.metadata.name.split("-").pop());

/** A namespace on the shared control plane with a simulator watching it, and ways to look at it. */
export async function simWorld(prefix: string, opts: Omit<SimNioOptions, "namespace"> = {}, client?: KubeClient) {
  const cp = client ? undefined : await env.get();
  const kube = client ?? cp!.client;
  const ns = cp ? await cp.namespace(prefix) : prefix;
  const log = DEBUG ? (l: string) => console.log(`[${ns}] ${l}`) : undefined;
  // A control plane just started answers 429 while its watch cache fills: the simulator retries, as NIO would.
  const errors: string[] = [];
  const onError = (err: unknown, what: string) => {
    const line = `${what}: ${(err as Error).message ?? err}`;
    if (!/ 429 /.test(line)) errors.push(line);
  };
  const sim = startSimNio(kube, { namespace: ns, ...(log ? { log } : {}), onError, ...opts });
  const get = <T extends KubeObject>(r: Resource, name: string) => kube.get<T>(r, name, ns);
  const list = async <T extends KubeObject>(r: Resource, labelSelector?: string) =>
    (await kube.list<T>(r, { namespace: ns, ...(labelSelector ? { labelSelector } : {}) })).items;
  const w = {
    ns,
    kube,
    sim,
    get,
    list,
    cfg: (name: string) => get<NixosConfiguration>(NIXOS_CONFIGURATIONS, name),
    machine: (name: string) => get<Machine>(MACHINES, name),
    /** Reads until `check` holds of a defined reading, and answers it. */
    async until<T>(
      what: string,
      read: () => T | undefined | Promise<T | undefined>,
      check: (v: T) => boolean,
      timeoutMs = 20_000,
    ) {
      return (await waitFor(read, (v) => v !== undefined && check(v), { what, timeoutMs }))!;
    },
    /** Waits until the simulator did something (`find` answers it from the history). */
    happens: <T>(what: string, find: () => T | undefined) => w.until(what, find, () => true),
    waitCfg: (name: string, what: string, check: (c: NixosConfiguration) => boolean, timeoutMs?: number) =>
      w.until(`${name}: ${what}`, () => w.cfg(name), check, timeoutMs),
    waitMachine: (name: string, what: string, check: (m: Machine) => boolean) =>
      w.until(`${name}: ${what}`, () => w.machine(name), check),
    addMachine: (name: string, annotations?: Record<string, string>) =>
      kube.create(MACHINES, simMachine(name, ns, opts.generation ?? "v1", annotations)),
    addCfg: (
      name: string,
      machine: string,
      spec: Partial<NixosConfigurationSpec> = {},
      meta: Parameters<typeof simConfiguration>[4] = {},
    ) => kube.create<NixosConfiguration>(NIXOS_CONFIGURATIONS, simConfiguration(name, ns, machine, spec, meta)),
    patchCfg: (name: string, patch: unknown) => kube.mergePatch(NIXOS_CONFIGURATIONS, name, ns, patch),
    patchMachine: (name: string, patch: unknown) => kube.mergePatch(MACHINES, name, ns, patch),
    deleteCfg: (name: string) => kube.delete(NIXOS_CONFIGURATIONS, name, ns),
    /** The run Jobs of a configuration's day-two NixCronJob (its own and its CronJob's), oldest first. */
    runs: async (cfg: string) =>
      (await list<Job>(JOBS)).filter((j) => j.metadata.ownerReferences?.some((o) => o.name === `${cfg}-day2`))
        .sort((a, b) => (a.metadata.creationTimestamp ?? "").localeCompare(b.metadata.creationTimestamp ?? "")),
    /** A Job's Pods, by attempt. */
    pods: async (job: string) => (await list<Pod>(PODS, `job-name=${job}`)).sort((a, b) => attemptOf(a) - attemptOf(b)),
    events: (kind: string, name: string, since = 0) =>
      sim.history.slice(since).filter((e) => e.kind === kind && e.name === name),
    /** The runs the simulator created for a configuration's day two (named after their Jobs). */
    runEvents: (cfg: string, since = 0) =>
      sim.history.slice(since).filter((e) => e.kind === "run-created" && e.name.startsWith(`${cfg}-day2-`)),
    async [Symbol.asyncDispose]() {
      await sim.stop();
      assert.deepEqual(errors, [], "the simulator met no unexpected error");
    },
  };
  return w;
}
export type SimWorld = Awaited<ReturnType<typeof simWorld>>;

/** A Machine the simulator found reachable, and a configuration for it that NIO v1 reports Ready. */
export async function readyNode(w: SimWorld, cfg: string, machine: string, spec: Partial<NixosConfigurationSpec> = {}) {
  await w.addMachine(machine);
  await w.waitMachine(machine, "discoverable", (m) => m.status?.discoverable === true);
  await w.addCfg(cfg, machine, spec);
  return await w.waitCfg(cfg, "Ready", (c) => c.status?.phase === "Ready");
}
