/**
 * The benchmark's view of progress: informers on KubernetesClusters,
 * NixosConfigurations and Machines (all namespaces, the benchmark's own
 * client), recording when each milestone was first seen. Waiting polls this
 * in-memory record, never the API server.
 *
 * @module
 */
import type { KubernetesCluster } from "../../crds/kubernetescluster.ts";
import type { KubeClient } from "../../lib/kube/client.ts";
import { KUBERNETES_CLUSTERS } from "../../crds/kubernetescluster.ts";
import { MACHINES, NIXOS_CONFIGURATIONS } from "../../core/contract/nio.ts";
import { BOOTSTRAP_LABEL, CLUSTER_LABEL } from "../../core/contract/labels.ts";
import type { Machine, NixosConfiguration } from "../../core/contract/nio.ts";
import { Informer } from "../../lib/runtime/informer.ts";
import { appliedForSpec } from "../../core/nodes/readiness.ts";
import { silentLogger } from "../../lib/runtime/log.ts";

export interface ConfigTimes {
  cluster: string;
  bootstrap: boolean;
  /** First seen. */
  seen: number;
  /** First seen at each generation. */
  genSeen: Map<number, number>;
  /** First seen applied (newer NIO: phase Ready, observedGeneration = generation; the older NIO: Applied) at each generation. */
  applied: Map<number, number>;
  generation: number;
  gitRepo: string;
}

export interface ClusterTimes {
  /** First seen with phase Ready at each generation (observedGeneration = generation). */
  ready: Map<number, number>;
  generation: number;
  phase: string | undefined;
}

const id = (ns: string | undefined, name: string) => `${ns ?? ""}/${name}`;

export class Observer {
  readonly configs = new Map<string, ConfigTimes>();
  readonly clusters = new Map<string, ClusterTimes>();
  /** Discoverable Machines per namespace. */
  readonly discoverable = new Map<string, Set<string>>();
  readonly #informers: { start(signal: AbortSignal): void; synced(): Promise<void>; stop(): Promise<void> }[] = [];
  readonly #abort = new AbortController();

  constructor(client: KubeClient) {
    const opts = { logger: silentLogger, resyncMs: 0 };
    const clusters = new Informer<KubernetesCluster>(client, KUBERNETES_CLUSTERS, opts);
    const configs = new Informer<NixosConfiguration>(client, NIXOS_CONFIGURATIONS, opts);
    const machines = new Informer<Machine>(client, MACHINES, opts);
    clusters.onEvent((type, c) => {
      if (type === "delete") return;
      const k = id(c.metadata.namespace, c.metadata.name);
      const gen = c.metadata.generation ?? 0;
      let t = this.clusters.get(k);
      if (!t) this.clusters.set(k, t = { ready: new Map(), generation: gen, phase: undefined });
      t.generation = gen;
      t.phase = c.status?.phase;
      if (c.status?.phase === "Ready" && c.status.observedGeneration === gen && !t.ready.has(gen)) {
        t.ready.set(gen, Date.now());
      }
    });
    configs.onEvent((type, c) => {
      if (type === "delete") return;
      const now = Date.now();
      const k = id(c.metadata.namespace, c.metadata.name);
      const gen = c.metadata.generation ?? 0;
      let t = this.configs.get(k);
      if (!t) {
        t = {
          cluster: id(c.metadata.namespace, c.metadata.labels?.[CLUSTER_LABEL] ?? ""),
          bootstrap: c.metadata.labels?.[BOOTSTRAP_LABEL] === "true",
          seen: now,
          genSeen: new Map(),
          applied: new Map(),
          generation: gen,
          gitRepo: c.spec.gitRepo,
        };
        this.configs.set(k, t);
      }
      t.generation = gen;
      t.gitRepo = c.spec.gitRepo;
      if (!t.genSeen.has(gen)) t.genSeen.set(gen, now);
      const s = c.status;
      // The older NIO says so by `Applied=True` no older than NICO's last change of the spec (core/nodes/readiness.ts).
      const applied = (s?.phase === "Ready" && s.observedGeneration === gen) || appliedForSpec(c);
      if (applied && !t.applied.has(gen)) t.applied.set(gen, now);
    });
    machines.onEvent((type, m) => {
      const ns = m.metadata.namespace ?? "";
      let set = this.discoverable.get(ns);
      if (!set) this.discoverable.set(ns, set = new Set());
      if (type !== "delete" && m.status?.discoverable === true) set.add(m.metadata.name);
      else set.delete(m.metadata.name);
    });
    this.#informers.push(clusters, configs, machines);
  }

  async start(): Promise<void> {
    for (const i of this.#informers) i.start(this.#abort.signal);
    await Promise.all(this.#informers.map((i) => i.synced()));
  }

  async stop(): Promise<void> {
    this.#abort.abort();
    await Promise.all(this.#informers.map((i) => i.stop()));
  }

  /** Configurations of the clusters in `namespaces`. */
  configsIn(namespaces: Set<string>): ConfigTimes[] {
    return [...this.configs.entries()].filter(([k]) => namespaces.has(k.slice(0, k.indexOf("/")))).map(([, v]) => v);
  }

  clustersIn(namespaces: Set<string>): [string, ClusterTimes][] {
    return [...this.clusters.entries()].filter(([k]) => namespaces.has(k.slice(0, k.indexOf("/"))));
  }
}

/** Polls `done` every 100 ms until it answers true or `timeoutMs` passes; answers whether it did. */
export async function until(done: () => boolean, timeoutMs: number, tick?: () => void): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  let lastTick = Date.now();
  while (Date.now() < deadline) {
    if (done()) return true;
    if (tick && Date.now() - lastTick > 5000) {
      lastTick = Date.now();
      tick();
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return done();
}
