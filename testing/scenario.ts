/**
 * A whole NICO scenario on real API servers: a namespace of the management
 * control plane, the simulated NIO, workload clusters (real kube-apiservers
 * on loopback, optionally with kube-controller-manager) and NICO watching
 * them: a {@link World} (./world.ts) with workload clusters. Used by the
 * workload-cluster scenario tests and usable by the demo.
 *
 * @module
 */
import { KUBERNETES_CLUSTERS } from "../crds/kubernetescluster.ts";
import type { KubeClient } from "../lib/kube/client.ts";
import { MACHINES } from "../core/contract/nio.ts";
import type { Machine, NioGeneration, NixosConfiguration } from "../core/contract/nio.ts";
import { CLUSTER_LABEL, ROLE_LABEL } from "../core/contract/labels.ts";
import type { KubernetesCluster } from "../crds/kubernetescluster.ts";
import type { ControlPlane } from "./envtest/controlplane.ts";
import { machinesDiscovered } from "./nico.ts";
import { extend, type World, world } from "./world.ts";
import type { SimEtcdMode } from "./sim-etcd.ts";
import type { ClusterSettings } from "../controllers/cluster/settings.ts";
import type { CarriedVersion } from "./workload_versions.ts";

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
  /** Whether control-plane hosts run etcd NICO can reach (default `contract`; see ./sim-etcd.ts). */
  etcd?: SimEtcdMode;
  /** Which NIO the simulator plays, and NICO is told (default `v1`). */
  generation?: NioGeneration;
  /** The Kubernetes version each flake commit carries (see testing/workload_versions.ts; default 1.31.0). */
  carriedVersion?: CarriedVersion;
  /** How long after an apply ends each kubelet posts its new status (default 2 s; see testing/workload.ts). */
  kubeletLagMs?: number;
  /** The workload API servers keep their data in the hosts' etcd members (default false; see testing/workload.ts). */
  stackedEtcd?: boolean;
  /** NICO's settings beyond the scenario's own (controllers/cluster/settings.ts). */
  settings?: Partial<ClusterSettings>;
}

/** A cluster spec as a test writes it: explicit Machine lists, anything else as the CRD takes it. */
export type ClusterSpecInput = Record<string, unknown> & {
  controlPlane: { machines: string[] };
  dataPlane: { machines: string[] };
};

/** A {@link World} with workload clusters, Machines on loopback hosts and one cluster `c` by default. */
export interface Scenario extends World {
  /** Creates Machines on loopback hosts, with annotations and labels if given. */
  machines(
    names: string[],
    annotations?: Record<string, Record<string, string>>,
    labels?: Record<string, string>,
  ): Promise<void>;
  /**
   * Creates the Machines `spec` names (explicit lists) and, once NIO found them all, cluster `c` with `spec`: a
   * cluster created before that would select only the Machines found so far, and the late ones would change
   * `cluster.nix` under the first nodes (a rollout of its own, which NIO v1 runs node by node).
   */
  createCluster(spec: ClusterSpecInput): Promise<void>;
  /** Waits until NIO (the simulator) found every Machine of `names` (see {@link machinesDiscovered}). */
  discovered(names: string[]): Promise<void>;
  /** The running workload API server of cluster `name`. */
  workload(name?: string): ControlPlane;
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

/** A control-plane configuration applied: the workload API goes down or comes back, as `apiBrokenBy` says. */
async function breakApi(w: World, o: ScenarioOptions, cfg: NixosConfiguration): Promise<void> {
  if (!o.apiBrokenBy || cfg.metadata.labels?.[ROLE_LABEL] !== "control-plane") return;
  const cluster = cfg.metadata.labels?.[CLUSTER_LABEL] ?? "";
  if (o.apiBrokenBy(cfg)) await w.workloads.stopApi(w.ns, cluster);
  else await w.workloads.startApi(w.ns, cluster);
}

/**
 * Starts the scenario's NIO (telling the workload clusters what the hosts did, and breaking the API if asked),
 * workload clusters and NICO in a fresh namespace of `cp`; `await using` stops them.
 */
export async function startScenario(cp: ControlPlane, prefix: string, o: ScenarioOptions): Promise<Scenario> {
  let self: World | undefined;
  const w = self = await world(prefix, {
    cp,
    generation: o.generation ?? "v1",
    workloads: {
      ...(o.controllers ? { controllers: o.controllers } : {}),
      ...(o.reportConfiguration === false ? { reportConfiguration: false } : {}),
      ...(o.carriedVersion ? { carriedVersion: o.carriedVersion } : {}),
      ...(o.etcd ? { etcd: o.etcd } : {}),
      ...(o.kubeletLagMs !== undefined ? { kubeletLagMs: o.kubeletLagMs } : {}),
      ...(o.stackedEtcd ? { stackedEtcd: true } : {}),
    },
    nio: {
      applyDelayMs: o.applyDelayMs ?? 300,
      removeDelayMs: o.removeDelayMs ?? 300,
      onApplied: (cfg) => breakApi(self!, o, cfg),
    },
    nico: {
      workloadProbeMs: 300,
      nodeTimeoutMs: o.nodeTimeoutMs ?? 60_000,
      ...(o.settings ? { settings: o.settings } : {}),
    },
  });
  const machines = machineMaker(w.client, w.ns, o.hostBlock);
  return await extend(w, () => ({
    machines,
    discovered: (names: string[]) => machinesDiscovered(w.client, w.ns, names),
    async createCluster(spec: ClusterSpecInput) {
      const names = [...spec.controlPlane.machines, ...spec.dataPlane.machines];
      await machines(names);
      await machinesDiscovered(w.client, w.ns, names);
      await w.client.create(KUBERNETES_CLUSTERS, { metadata: { name: "c", namespace: w.ns }, spec });
    },
    workload(name = "c") {
      const running = w.workloads.get(w.ns, name);
      if (!running) throw new Error(`no workload cluster for ${w.ns}/${name}`);
      return running;
    },
  }));
}
