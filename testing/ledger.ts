/**
 * An independent witness of who books what, for the sharding scenario: it
 * watches Machines, NixosConfigurations and KubernetesClusters with its own
 * watches (no NICO code: no informer, no selection), and records every
 * version the API server sends. From that it answers whether a Machine ever
 * moved from one cluster's claim to another's without being free in between,
 * whether two clusters' configurations ever targeted one Machine at once,
 * and which values of `status.shard` each cluster carried.
 *
 * @module
 */
import { KUBERNETES_CLUSTERS, type KubernetesCluster } from "../crds/kubernetescluster.ts";
import { CLUSTER_LABEL } from "../core/contract/labels.ts";
import { type Machine, MACHINES, NIXOS_CONFIGURATIONS, type NixosConfiguration } from "../core/contract/nio.ts";
import type { KubeClient, KubeObject } from "../lib/kube/client.ts";
import type { Resource } from "../lib/kube/resources.ts";

export interface Ledger extends AsyncDisposable {
  /** Every double booking seen: a claim handed over directly, or two clusters' configurations on one Machine. */
  readonly violations: string[];
  /** The claims each Machine carried, in order (`-` for free), consecutive repeats folded. */
  readonly claims: Map<string, string[]>;
  /** The values of `status.shard` each cluster's versions carried (`default` for none), repeats folded. */
  readonly shards: Map<string, string[]>;
  /** How many versions of each kind it saw. */
  readonly seen: Record<string, number>;
}

/** A re-list after a broken watch: what happened in between is not known. */
const GAP = "?";

const push = (m: Map<string, string[]>, k: string, v: string) => {
  const list = m.get(k) ?? [];
  if (list.at(-1) !== v) list.push(v);
  m.set(k, list);
};

/** Starts watching namespace `ns`; stop it with `await using`. */
export async function startLedger(client: KubeClient, ns: string): Promise<Ledger> {
  const abort = new AbortController();
  const violations: string[] = [];
  const claims = new Map<string, string[]>();
  const shards = new Map<string, string[]>();
  const seen: Record<string, number> = { machines: 0, configurations: 0, clusters: 0 };
  /** Live configurations: name → [cluster, machine]. */
  const configs = new Map<string, [string, string]>();

  const onMachine = (m: Machine | undefined, name: string) => {
    const now = m?.metadata.labels?.[CLUSTER_LABEL] ?? "-";
    const before = claims.get(name)?.at(-1);
    if (before && before !== "-" && before !== GAP && now !== "-" && before !== now) {
      violations.push(`Machine ${name} went from cluster ${before} to ${now} without being free in between`);
    }
    push(claims, name, now);
  };
  const onConfig = (c: NixosConfiguration | undefined, name: string) => {
    if (!c) return void configs.delete(name);
    const cluster = c.metadata.labels?.[CLUSTER_LABEL] ?? "?";
    const machine = c.spec.machineRef.name;
    configs.set(name, [cluster, machine]);
    for (const [other, [oc, om]] of configs) {
      if (other !== name && om === machine && oc !== cluster) {
        violations.push(`Machine ${machine} targeted by ${name} (cluster ${cluster}) and ${other} (cluster ${oc})`);
      }
    }
  };
  const onCluster = (c: KubernetesCluster | undefined, name: string) => {
    if (c?.status?.observedGeneration) push(shards, name, c.status.shard ?? "default");
  };

  const relisted = () => {
    for (const name of claims.keys()) push(claims, name, GAP);
  };
  const runs = [
    follow<Machine>(client, MACHINES, ns, abort.signal, (o, n) => (seen.machines!++, onMachine(o, n)), relisted),
    follow<NixosConfiguration>(client, NIXOS_CONFIGURATIONS, ns, abort.signal, (o, n) => (
      seen.configurations!++, onConfig(o, n)
    )),
    follow<KubernetesCluster>(client, KUBERNETES_CLUSTERS, ns, abort.signal, (o, n) => (
      seen.clusters!++, onCluster(o, n)
    )),
  ];
  await Promise.all(runs.map((r) => r.listed));
  return {
    violations,
    claims,
    shards,
    seen,
    async [Symbol.asyncDispose]() {
      abort.abort();
      await Promise.allSettled(runs.map((r) => r.done));
    },
  };
}

/** A list, then a watch from its resourceVersion, resumed (or listed again) until `signal` aborts. */
function follow<T extends KubeObject>(
  client: KubeClient,
  r: Resource,
  namespace: string,
  signal: AbortSignal,
  on: (o: T | undefined, name: string) => void,
  relisted?: () => void,
): { listed: Promise<void>; done: Promise<void> } {
  const { promise: listed, resolve: listedOnce } = Promise.withResolvers<void>();
  const done = (async () => {
    let rv: string | undefined;
    let lists = 0;
    while (!signal.aborted) {
      try {
        if (!rv) {
          const list = await client.list<T>(r, { namespace, signal });
          if (lists++ > 0) relisted?.();
          for (const o of list.items) on(o, o.metadata.name);
          rv = list.resourceVersion;
          listedOnce();
        }
        for await (const ev of client.watch<T>(r, { namespace, resourceVersion: rv, signal })) {
          rv = ev.object.metadata.resourceVersion ?? rv;
          if (ev.type === "BOOKMARK") continue;
          on(ev.type === "DELETED" ? undefined : ev.object, ev.object.metadata.name);
        }
      } catch {
        if (signal.aborted) break;
        rv = undefined; // too old to resume, or the connection broke: list again (a gap is then re-read whole)
        await new Promise((res) => setTimeout(res, 100));
      }
    }
  })();
  return { listed, done };
}
