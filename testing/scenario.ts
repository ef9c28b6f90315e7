/**
 * A whole NICO scenario on real API servers: a namespace of the management
 * control plane, the simulated NIO, workload clusters (real kube-apiservers
 * on loopback, optionally with kube-controller-manager) and NICO watching
 * them. Used by the workload-cluster scenario tests and usable by the demo.
 *
 * @module
 */
import type { KubernetesCluster } from "../crds/kubernetescluster.ts";
import type { KubeClient } from "../lib/kube/client.ts";
import { KUBERNETES_CLUSTERS } from "../crds/kubernetescluster.ts";
import { MACHINES } from "../core/contract/nio.ts";
import type { Machine, NioGeneration, NixosConfiguration } from "../core/contract/nio.ts";
import { CLUSTER_LABEL, ROLE_LABEL } from "../core/contract/labels.ts";
import type { ControlPlane } from "./envtest/controlplane.ts";
import { eventually } from "./helpers.ts";
import { type RunningNico, settled, startNico } from "./nico.ts";
import { type SimNio, startSimNio } from "./sim-nio.ts";
import { type WorkloadClusters, workloadClusters } from "./workload.ts";
import type { CarriedVersion } from "./workload_versions.ts";
import type { SimEtcdMode } from "./sim-etcd.ts";

export interface ScenarioOptions {
  /** Machines get hosts 127.0.<block>.<n>: a block per scenario keeps workload API servers apart. */
  hostBlock: number;
  /** kube-controller-manager controllers in the workload cluster (for example `["disruption"]`). */
  controllers?: string[];
  applyDelayMs?: number;
  removeDelayMs?: number;
  /** The operator's node timeout (default 60 s). */
  nodeTimeoutMs?: number;
  /**
   * A control-plane configuration for which this answers true keeps the workload API down once applied (a broken
   * API server); one that answers false brings it back.
   */
  apiBrokenBy?: (cfg: NixosConfiguration) => boolean;
  /** Nodes name the configuration they run on their Node (default true; see testing/workload.ts). */
  reportConfiguration?: boolean;
  /** Which NIO the simulator plays, and NICO is told (default `v1`). */
  generation?: NioGeneration;
  /** The Kubernetes version each flake commit carries (see testing/workload_versions.ts; default 1.31.0). */
  carriedVersion?: CarriedVersion;
  /** Whether control-plane hosts run etcd NICO can reach (default `contract`; see ./sim-etcd.ts). */
  etcd?: SimEtcdMode;
}

/** A cluster spec as a test writes it: explicit Machine lists, anything else as the CRD takes it. */
export type ClusterSpecInput = Record<string, unknown> & {
  controlPlane: { machines: string[] };
  dataPlane: { machines: string[] };
};

export interface Scenario {
  ns: string;
  client: KubeClient;
  nio: SimNio;
  nico: RunningNico;
  workloads: WorkloadClusters;
  /** Creates Machines on loopback hosts, with annotations and labels if given. */
  machines(
    names: string[],
    annotations?: Record<string, Record<string, string>>,
    labels?: Record<string, string>,
  ): Promise<void>;
  /** Creates the Machines `spec` names (explicit lists) and cluster `c` with `spec`. */
  createCluster(spec: ClusterSpecInput): Promise<void>;
  /** The cluster as stored now. */
  cluster(name?: string): Promise<KubernetesCluster | undefined>;
  /** Waits until `pred` holds for the cluster; answers it. */
  until(what: string, pred: (c: KubernetesCluster) => boolean, timeoutMs?: number): Promise<KubernetesCluster>;
  /** The running workload API server of cluster `name`. */
  workload(name?: string): ControlPlane;
  /** Makes NICO look at cluster `name` once more and waits for that pass to end (see {@link settled}). */
  settled(name?: string): Promise<unknown>;
  stop(): Promise<void>;
}

/** A condition of a cluster by type. */
export const condition = (c: KubernetesCluster | undefined, type: string) =>
  c?.status?.conditions?.find((x) => x.type === type);

/** Creates Machines on loopback hosts 127.0.<hostBlock>.2, .3, … */
function machineMaker(client: KubeClient, ns: string, hostBlock: number): Scenario["machines"] {
  let n = 1;
  return async (names, annotations = {}, labels) => {
    for (const name of names) {
      await client.create<Machine>(MACHINES, {
        metadata: {
          name,
          namespace: ns,
          ...(annotations[name] ? { annotations: annotations[name] } : {}),
          ...(labels ? { labels } : {}),
        },
        spec: { host: `127.0.${hostBlock}.${++n}`, sshUser: "root", sshKeySecretRef: { name: `${name}-ssh` } },
      });
    }
  };
}

/** The scenario's simulated NIO, telling the workload clusters what the hosts did (and breaking the API if asked). */
function scenarioNio(client: KubeClient, ns: string, o: ScenarioOptions, workloads: WorkloadClusters): SimNio {
  return startSimNio(client, {
    namespace: ns,
    generation: o.generation ?? "v1",
    applyDelayMs: o.applyDelayMs ?? 300,
    removeDelayMs: o.removeDelayMs ?? 300,
    onBootstrapApplied: workloads.onBootstrapApplied,
    async onApplied(cfg, machine) {
      await workloads.onApplied(cfg, machine);
      if (!o.apiBrokenBy || cfg.metadata.labels?.[ROLE_LABEL] !== "control-plane") return;
      const cluster = cfg.metadata.labels?.[CLUSTER_LABEL] ?? "";
      if (o.apiBrokenBy(cfg)) await workloads.stopApi(ns, cluster);
      else await workloads.startApi(ns, cluster);
    },
    onApplyStarted: workloads.onApplyStarted,
    onRemoved: workloads.onRemoved,
  });
}

/** Starts the scenario's NIO, workload clusters and NICO in a fresh namespace of `cp`. */
export async function startScenario(cp: ControlPlane, prefix: string, o: ScenarioOptions): Promise<Scenario> {
  const client = cp.client;
  const ns = await cp.namespace(prefix);
  const workloads = workloadClusters(client, {
    ...(o.controllers ? { controllers: o.controllers } : {}),
    ...(o.reportConfiguration === false ? { reportConfiguration: false } : {}),
    ...(o.carriedVersion ? { carriedVersion: o.carriedVersion } : {}),
    ...(o.etcd ? { etcd: o.etcd } : {}),
  });
  const nio = scenarioNio(client, ns, o, workloads);
  const nico = startNico(client, {
    namespace: ns,
    workloadProbeMs: 300,
    nodeTimeoutMs: o.nodeTimeoutMs ?? 60_000,
    nio: o.generation ?? "v1",
  });
  const get = (name = "c") => client.get<KubernetesCluster>(KUBERNETES_CLUSTERS, name, ns);
  const machines = machineMaker(client, ns, o.hostBlock);
  return {
    ns,
    client,
    nio,
    nico,
    workloads,
    machines,
    async createCluster(spec) {
      await machines([...spec.controlPlane.machines, ...spec.dataPlane.machines]);
      await client.create(KUBERNETES_CLUSTERS, { metadata: { name: "c", namespace: ns }, spec });
    },
    cluster: get,
    async until(what, pred, timeoutMs = 60_000) {
      let last: KubernetesCluster | undefined;
      try {
        return await eventually(
          what,
          async () => {
            const c = last = await get();
            return c && pred(c) ? c : undefined;
          },
          timeoutMs,
          150,
        );
      } catch (err) {
        const conds = (last?.status?.conditions ?? []).map((c) => `  ${c.type}=${c.status} ${c.reason}: ${c.message}`);
        throw new Error(`${(err as Error).message}\nphase ${last?.status?.phase}\n${conds.join("\n")}`);
      }
    },
    settled(name = "c") {
      return settled(client, nico, ns, name);
    },
    workload(name = "c") {
      const w = workloads.get(ns, name);
      if (!w) throw new Error(`no workload cluster for ${ns}/${name}`);
      return w;
    },
    async stop() {
      await nico.stop();
      await nio.stop();
      await workloads.stop();
    },
  };
}
