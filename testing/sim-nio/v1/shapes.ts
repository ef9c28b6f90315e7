/**
 * The objects NIO v1 makes for a NixosConfiguration, as the simulator builds
 * them: the day-two NixCronJob, its batch CronJob, run Jobs and their Pods,
 * and the decommission NixJob. Shapes follow NIO v1's source (names, labels,
 * owners); pure.
 *
 * @module
 */
import { createHash } from "node:crypto";
import type { Machine, NixosConfiguration } from "../../../core/contract/nio.ts";
import { dayTwoName } from "../../../core/contract/nio.ts";
import type { KubeObject } from "../../../lib/kube/client.ts";

export const NIO = "nio.homystack.com";
export const WORKLOAD_KIND_LABEL = `${NIO}/workload-kind`;
export const WORKLOAD_NAME_LABEL = `${NIO}/workload-name`;
export const REVISION_LABEL = `${NIO}/revision`;
export const MANAGED_BY_LABEL = "app.kubernetes.io/managed-by";
/** Sim only: what a run needs to know about its configuration, on the Job. */
export const RUN_ANNOTATION = "sim.nio.homystack.com/run";
const REBUILD = "nixpkgs#nixos-rebuild";
const IMAGE = "nixos/nix:latest";
/** How long a finished immediate run Job stays (NIO v1: a day). */
export const IMMEDIATE_TTL_S = 24 * 60 * 60;
/** How long a finished decommission run Job stays (NIO v1: ten minutes). */
export const DECOMMISSION_TTL_S = 600;

export type Obj = KubeObject & { spec?: Record<string, unknown>; status?: Record<string, unknown> };

/** What a run of a configuration does, carried on its Job. */
export interface RunInfo {
  config: string;
  machine: string;
  flake: string;
  operation: "switch" | "decommission";
  /** The folder the build runs in and the paths of the files written, as the Job's Pod template fixes them. */
  dir?: string;
  files?: string[];
}

/** NIO v1's pod-template revision: a hash of the commit, the program and its arguments. */
export function compositeRevision(revision: string, run: string, args: string[]): string {
  const h = createHash("sha256");
  for (const f of [revision, run, ...args]) h.update(`${f.length}:${f}`);
  return `r-${h.digest("hex").slice(0, 12)}`;
}

function owner(o: KubeObject, controller = true) {
  return {
    apiVersion: o.apiVersion!,
    kind: o.kind!,
    name: o.metadata.name,
    uid: o.metadata.uid!,
    controller,
    blockOwnerDeletion: true,
  };
}

const managed = (kind: string, name: string) => ({
  [WORKLOAD_KIND_LABEL]: kind,
  [WORKLOAD_NAME_LABEL]: name,
  [MANAGED_BY_LABEL]: "nio",
});

function target(machine: Machine): string {
  return `${machine.spec?.sshUser || "root"}@${machine.spec?.host ?? machine.metadata.name}`;
}

/** The arguments of a switch to `flake` (NIO v1: `switch --flake .#attr --target-host user@host`). */
export function switchArgs(flake: string, machine: Machine): string[] {
  return ["switch", "--flake", `.${flake}`, "--target-host", target(machine)];
}

/** NIO v1's source for a configuration: a 40-hex `ref` is pinned as `rev`, anything else stays a `ref`. */
export function sourceOf(cfg: NixosConfiguration): Record<string, unknown> {
  const ref = cfg.spec.ref;
  const pinned = ref !== undefined && /^[0-9a-fA-F]{40}$/.test(ref);
  return {
    gitRepo: cfg.spec.gitRepo,
    ...(cfg.spec.credentialsRef ? { credentialsRef: cfg.spec.credentialsRef } : {}),
    ...(cfg.spec.configurationSubdir ? { dir: cfg.spec.configurationSubdir } : {}),
    ...(pinned ? { rev: ref } : ref ? { ref } : {}),
  };
}

function files(cfg: NixosConfiguration) {
  return (cfg.spec.additionalFiles ?? []).map((f) =>
    f.valueType === "Inline" ? { path: f.path, inline: f.inline } : { path: f.path, secretRef: f.secretRef }
  );
}

/** The day-two NixCronJob `<config>-day2`, owned by the configuration. */
export function dayTwoCronJob(cfg: NixosConfiguration, machine: Machine, suspend: boolean): Obj {
  const name = dayTwoName(cfg.metadata.name);
  return {
    apiVersion: `${NIO}/v1alpha1`,
    kind: "NixCronJob",
    metadata: {
      name,
      namespace: cfg.metadata.namespace!,
      labels: { [`${NIO}/config`]: cfg.metadata.name, [`${NIO}/machine`]: machine.metadata.name },
      ownerReferences: [owner({ ...cfg, apiVersion: `${NIO}/v1alpha1`, kind: "NixosConfiguration" })],
    },
    spec: {
      nix: {
        source: sourceOf(cfg),
        run: REBUILD,
        args: switchArgs(cfg.spec.flake, machine),
        additionalFiles: files(cfg),
        triggerOnChange: true,
        suspend,
        ...(cfg.spec.storeRef ? { storeRef: cfg.spec.storeRef } : {}),
        ...(cfg.spec.builderRef ? { builderRef: cfg.spec.builderRef } : {}),
      },
      cronJobTemplate: {
        schedule: cfg.spec.dayTwoSchedule || "*/30 * * * *",
        concurrencyPolicy: "Forbid",
        jobTemplate: { spec: { template: { spec: { containers: [{ name: "app" }] } } } },
      },
      // Sim only: who the runs are for, and what their Pod template fixes (NIO v1 renders the files' paths
      // and the build folder into it: `additionalFilesInjection`, `renderPodTemplate`).
      simRun: {
        config: cfg.metadata.name,
        machine: machine.metadata.name,
        flake: cfg.spec.flake,
        ...(cfg.spec.configurationSubdir ? { dir: cfg.spec.configurationSubdir } : {}),
        files: (cfg.spec.additionalFiles ?? []).map((f) => f.path),
      },
    },
  };
}

/**
 * The batch CronJob a NixCronJob projects (same name, owned by it). NIO v1 never sets its `suspend`: a
 * suspended NixCronJob is simply not projected. The run's description rides on the Job template (sim only).
 */
export function batchCronJob(ncj: Obj, revision: string): Obj {
  const tmpl = ncj.spec!["cronJobTemplate"] as { schedule: string };
  const run: RunInfo = { ...(ncj.spec!["simRun"] as Omit<RunInfo, "operation">), operation: "switch" };
  return {
    apiVersion: "batch/v1",
    kind: "CronJob",
    metadata: {
      name: ncj.metadata.name,
      namespace: ncj.metadata.namespace!,
      labels: managed("NixCronJob", ncj.metadata.name),
      ownerReferences: [owner(ncj)],
    },
    spec: {
      schedule: tmpl.schedule,
      concurrencyPolicy: "Forbid",
      jobTemplate: {
        metadata: { annotations: { [RUN_ANNOTATION]: JSON.stringify(run) } },
        spec: runJobSpec(ncj, revision, undefined),
      },
    },
  };
}

function runJobSpec(ncj: Obj, revision: string, ttl: number | undefined): Record<string, unknown> {
  const nix = ncj.spec!["nix"] as { run: string; args: string[] };
  const rev = compositeRevision(revision, nix.run, nix.args);
  return {
    ...(ttl !== undefined ? { ttlSecondsAfterFinished: ttl } : {}),
    template: {
      metadata: {
        labels: { ...managed(ncj.kind!, ncj.metadata.name), [REVISION_LABEL]: rev },
        annotations: { [REVISION_LABEL]: rev },
      },
      spec: {
        restartPolicy: "Never",
        containers: [{ name: "app", image: IMAGE, command: ["nix", "run", nix.run, "--", ...nix.args] }],
      },
    },
  };
}

/** The one-off run a NixCronJob fires on a new commit: `<ncj>-<rev>-manual`, owned by it, a day's TTL. */
export function runJob(ncj: Obj, revision: string): Obj {
  const nix = ncj.spec!["nix"] as { run: string; args: string[] };
  const run: RunInfo = { ...(ncj.spec!["simRun"] as Omit<RunInfo, "operation">), operation: "switch" };
  return {
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: {
      name: `${ncj.metadata.name}-${compositeRevision(revision, nix.run, nix.args)}-manual`,
      namespace: ncj.metadata.namespace!,
      labels: managed("NixCronJob", ncj.metadata.name),
      annotations: { [RUN_ANNOTATION]: JSON.stringify(run) },
      ownerReferences: [owner(ncj)],
    },
    spec: runJobSpec(ncj, revision, IMMEDIATE_TTL_S),
  };
}

/**
 * The run a CronJob starts at a tick, from its Job template as it is then: `<cronjob>-<scheduled minute>`,
 * owned by the CronJob, no TTL, none of NIO's labels of its own (Kubernetes' `getJobFromTemplate2`): the API server
 * gives a Job created without labels those of its Pod template, NIO's `managedLabels` among them.
 */
export function scheduledRun(cron: Obj, minute: number): Obj {
  const tmpl = cron.spec!["jobTemplate"] as { metadata?: KubeObject["metadata"]; spec: Record<string, unknown> };
  return {
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: {
      name: `${cron.metadata.name}-${minute}`,
      namespace: cron.metadata.namespace!,
      ...(tmpl.metadata?.labels ? { labels: tmpl.metadata.labels } : {}),
      ...(tmpl.metadata?.annotations ? { annotations: tmpl.metadata.annotations } : {}),
      ownerReferences: [owner(cron)],
    },
    spec: tmpl.spec,
  };
}

/** The decommission NixJob `<config>-onremove`: no owner, so it outlives the configuration. */
export function decommissionNixJob(cfg: NixosConfiguration, machine: Machine): Obj {
  return {
    apiVersion: `${NIO}/v1alpha1`,
    kind: "NixJob",
    metadata: {
      name: `${cfg.metadata.name}-onremove`,
      namespace: cfg.metadata.namespace!,
      labels: {
        [`${NIO}/config`]: cfg.metadata.name,
        [`${NIO}/machine`]: machine.metadata.name,
        [`${NIO}/operation`]: "decommission",
      },
    },
    spec: {
      nix: { source: sourceOf(cfg), run: REBUILD, args: switchArgs(cfg.spec.onRemoveFlake, machine) },
      jobTemplate: { ttlSecondsAfterFinished: DECOMMISSION_TTL_S },
      simRun: { config: cfg.metadata.name, machine: machine.metadata.name, flake: cfg.spec.onRemoveFlake },
    },
  };
}

/** The run Job of a NixJob (`<nixjob>-<rev>`, owned by it, labelled with it). */
export function nixJobRun(nj: Obj, revision: string): Obj {
  const nix = nj.spec!["nix"] as { run: string; args: string[] };
  const info = nj.spec!["simRun"] as Omit<RunInfo, "operation">;
  const rev = compositeRevision(revision, nix.run, nix.args);
  return {
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: {
      name: `${nj.metadata.name}-${rev}`,
      namespace: nj.metadata.namespace!,
      labels: managed("NixJob", nj.metadata.name),
      annotations: { [RUN_ANNOTATION]: JSON.stringify({ ...info, operation: "decommission" } satisfies RunInfo) },
      ownerReferences: [owner(nj)],
    },
    spec: {
      ttlSecondsAfterFinished: DECOMMISSION_TTL_S,
      template: {
        metadata: { labels: { ...managed("NixJob", nj.metadata.name), [REVISION_LABEL]: rev } },
        spec: { restartPolicy: "Never", containers: [{ name: "app", image: IMAGE }] },
      },
    },
  };
}

/** Sim only: which attempt of its Job a Pod is (1 to 7). */
export const ATTEMPT_ANNOTATION = "sim.nio.homystack.com/attempt";
const SUFFIX = "bcdfghjklmnpqrstvwxz2456789";

/**
 * One attempt of a run: a Pod owned by its Job, named as the Job controller names it (`<job>-<5 random>`), with
 * the labels of the Job's Pod template (which the API server gave the batch labels).
 */
export function attemptPod(job: Obj, attempt: number): Obj {
  const tmpl = (job.spec!["template"] ?? {}) as { metadata?: { labels?: Record<string, string> }; spec?: unknown };
  const random = Array.from(crypto.getRandomValues(new Uint8Array(5)), (b) => SUFFIX[b % SUFFIX.length]).join("");
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: `${job.metadata.name}-${random}`,
      namespace: job.metadata.namespace!,
      annotations: { [ATTEMPT_ANNOTATION]: String(attempt) },
      labels: {
        ...tmpl.metadata?.labels,
        "batch.kubernetes.io/job-name": job.metadata.name,
        "job-name": job.metadata.name,
        "batch.kubernetes.io/controller-uid": job.metadata.uid!,
      },
      ownerReferences: [owner(job)],
    },
    spec: { restartPolicy: "Never", containers: [{ name: "app", image: IMAGE }] },
  };
}

/** The RunInfo a Job carries, if the simulator made it. */
export function runInfoOf(job: Obj): RunInfo | undefined {
  const raw = job.metadata.annotations?.[RUN_ANNOTATION];
  return raw ? JSON.parse(raw) as RunInfo : undefined;
}
