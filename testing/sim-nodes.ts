/**
 * The simulated nodes behind testing/workload.ts: what each node says of itself (its Node's labels, Ready
 * condition, version and the configuration it names), written to its cluster's API server as its kubelet posts it,
 * and the state the workload clusters keep between hooks.
 *
 * @module
 */
import type { KubeClient } from "../lib/kube/client.ts";
import { NODES } from "../lib/kube/resources.ts";
import type { Informer } from "../lib/runtime/informer.ts";
import { CONFIGURATION_ANNOTATION } from "../core/contract/labels.ts";
import type { KubePod } from "../core/nodes/workload.ts";
import type { KeyPair } from "../lib/pki.ts";
import type { ControlPlane, ExternalEtcd } from "./envtest/controlplane.ts";
import type { CarriedVersion, Fronts } from "./workload_versions.ts";
import type { SimEtcd, SimEtcdMode } from "./sim-etcd.ts";

/** How long after an apply ends a simulated kubelet posts its status by default: a restarted kubelet takes seconds. */
export const KUBELET_LAG_MS = 2_000;

export interface WorkloadClusterOptions {
  /** kube-controller-manager controllers to run in each workload cluster (for example `["disruption"]`). */
  controllers?: string[];
  /**
   * Each node names the configuration it runs on its Node after an apply, as the flake contract lets a
   * flake do (default true); false: Nodes say nothing of it, as a flake that does not.
   */
  reportConfiguration?: boolean;
  /** The Kubernetes version a configuration's flake commit carries, when its cluster.nix asks for none. */
  carriedVersion?: CarriedVersion;
  /** Whether control-plane hosts run etcd NICO can reach (default `contract`; see ./sim-etcd.ts). */
  etcd?: SimEtcdMode;
  /** How long after an apply ends each kubelet posts its new status (default {@link KUBELET_LAG_MS}; 0: at once). */
  kubeletLagMs?: number;
  /**
   * The cluster's API server keeps its data in the control-plane hosts' etcd members (./workload_etcd.ts) instead
   * of a private etcd, so a restore of them brings its objects back (default false).
   */
  stackedEtcd?: boolean;
}

export interface SimNode {
  role: string;
  ready: "True" | "False" | "Unknown";
  reason: string;
  /** What the node says it runs (its Node's annotation). */
  configuration?: string | undefined;
  /** The Kubernetes version it runs (`v1.31.0+sim`), once applied. */
  version?: string | undefined;
  /** Its address (a control-plane node's API server front listens there). */
  host?: string | undefined;
}

export interface Workload {
  ca: KeyPair;
  host: string;
  /** The control-plane nodes' API server fronts, and where the real kube-apiserver listens behind them. */
  fronts: Fronts;
  cp?: ControlPlane | undefined;
  /** The hosts' etcd its API server stores in (the option `stackedEtcd`); absent: a private etcd. */
  etcd?: ExternalEtcd | undefined;
  kubelet?: Informer<KubePod> | undefined;
  /** Stops the kubelets' Lease renewals (running where a kube-controller-manager does). */
  leases?: (() => void) | undefined;
  nodes: Map<string, SimNode>;
}

export const nowIso = () => new Date().toISOString().replace(/\.\d+Z$/, "Z");

/** The state behind {@link workloadClusters}: the management API, the options, and every cluster and node. */
export interface Sims {
  management: KubeClient;
  opts: WorkloadClusterOptions;
  /** By `ns/cluster`: the clusters whose API server started (or was stopped by hand). */
  clusters: Map<string, Workload>;
  /** By `ns/cluster`: API servers starting now. */
  starting: Map<string, Promise<void>>;
  /** Nodes that turn Ready later. */
  timers: Set<ReturnType<typeof setTimeout>>;
  /** By `ns/cluster`: the Nodes of a cluster whose API server has not started yet. */
  pending: Map<string, Map<string, SimNode>>;
  /** What each node (`ns/cluster/node`) last switched to, by NICO's spec hash. */
  ran: Map<string, string | undefined>;
  /** Each node's (`ns/cluster/node`) count of switches and removals: a post planned before the next one is dropped. */
  turns: Map<string, number>;
  etcd: SimEtcd;
}

/** A node's next switch or removal: posts planned before it are dropped. */
export function nextTurn(s: Sims, node: string): number {
  const turn = (s.turns.get(node) ?? 0) + 1;
  s.turns.set(node, turn);
  return turn;
}

/** Posts at once (`lag` 0), else `lag` milliseconds from now. */
export function postAfter(s: Sims, lag: number, fn: () => Promise<void>): Promise<void> {
  if (lag <= 0) return fn();
  later(s, lag, fn);
  return Promise.resolve();
}

/** Writes a Node as the simulated node says it is: labels, what it runs, and its Ready condition. */
export async function writeNode(w: Workload, name: string): Promise<void> {
  const n = w.nodes.get(name);
  if (!w.cp || !n) return;
  const client = w.cp.client;
  const labels: Record<string, string> = {
    "kubernetes.io/hostname": name,
    ...(n.role === "control-plane" ? { "node-role.kubernetes.io/control-plane": "" } : {}),
  };
  const annotations = n.configuration ? { [CONFIGURATION_ANNOTATION]: n.configuration } : undefined;
  await client.apply(NODES, { metadata: { name, labels, ...(annotations ? { annotations } : {}) } });
  const current = await client.get<
    {
      metadata: { name: string };
      status?: { conditions?: { type: string; status: string; lastTransitionTime?: string }[] };
    }
  >(NODES, name);
  const old = current?.status?.conditions?.find((c) => c.type === "Ready");
  const at = nowIso();
  await client.mergePatch(NODES, name, undefined, {
    status: {
      ...(n.version ? { nodeInfo: { kubeletVersion: n.version } } : {}),
      conditions: [{
        type: "Ready",
        status: n.ready,
        reason: n.reason,
        message: "simulated by NICO's tests",
        lastHeartbeatTime: at,
        lastTransitionTime: old?.status === n.ready && old.lastTransitionTime ? old.lastTransitionTime : at,
      }],
    },
  }, "status");
}

/** Changes what a node says (kept for later if its cluster's API server has not started). */
export async function setNode(
  s: Sims,
  key: string,
  name: string,
  patch: Partial<SimNode>,
  write = true,
): Promise<void> {
  await s.starting.get(key)?.catch(() => {}); // a cluster starting now takes its pending Nodes with it
  const w = s.clusters.get(key);
  const nodes = w?.nodes ?? s.pending.get(key) ?? new Map<string, SimNode>();
  if (!w) s.pending.set(key, nodes);
  const n = nodes.get(name) ?? { role: "worker", ready: "False", reason: "KubeletStarting" };
  nodes.set(name, { ...n, ...patch });
  if (w?.cp && write) await writeNode(w, name);
}

/** Runs `fn` in `ms` (unless the clusters stop first). */
export function later(s: Sims, ms: number, fn: () => Promise<void>): void {
  const t = setTimeout(() => {
    s.timers.delete(t);
    fn().catch((err) => console.warn(`simulated kubelet: ${(err as Error).message}`));
  }, ms);
  s.timers.add(t);
}
