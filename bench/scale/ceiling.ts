/**
 * The ceiling: the writes that bring N clusters to the state NICO and NIO
 * reach, made directly by one client with bounded concurrency and no
 * operator. Objects are copies of what NICO and the simulated NIO wrote in
 * the same run (same sizes), renamed.
 *
 * Per cluster, in dependency order (each step's objects in parallel):
 *   1. create the KubernetesCluster (as the benchmark does for NICO)
 *   2. claim M Machines (label merge patch)
 *   3. create 4 Secrets (join token, CA, CA key, kubeconfig)
 *   4. per node, in sequence: create its NixosConfiguration, patch its
 *      status "Converging" then "Ready" (NIO's writes), patch its Machine's
 *      status (NIO's write-back)
 *   5. one KubernetesCluster status patch (Ready)
 * That is 2 + 4 + 5M requests per cluster (31 for M = 5).
 *
 * `extras` adds more requests of given kinds (`"POST events"`, `"GET machines"`,
 * …, counted over all clusters, spread evenly), after step 5: the same
 * request volume as another run, at full concurrency. Kinds it cannot
 * replay are answered in `skipped`.
 *
 * @module
 */
import type { KubernetesCluster } from "../../crds/kubernetescluster.ts";
import type { KubeClient, KubeObject } from "../../lib/kube/client.ts";
import { EVENTS, SECRETS } from "../../lib/kube/resources.ts";
import { KUBERNETES_CLUSTERS } from "../../crds/kubernetescluster.ts";
import { MACHINES, NIXOS_CONFIGURATIONS } from "../../core/contract/nio.ts";
import { CLUSTER_LABEL } from "../../core/contract/labels.ts";
import { configName } from "../../core/contract/names.ts";
import { clusterOwnerReference } from "../../core/contract/owner.ts";
import { microTime } from "../../lib/kube/meta.ts";
import type { Machine, NixosConfiguration } from "../../core/contract/nio.ts";
import { limiter } from "./pool.ts";

export interface Templates {
  cluster: KubernetesCluster;
  secrets: (KubeObject & { type?: string; data?: Record<string, string> })[];
  /** One per node, in plane order (control plane first). */
  configs: NixosConfiguration[];
  machineStatus: NonNullable<Machine["status"]>;
}

export interface CeilingResult {
  seconds: number;
  requests: number;
  concurrency: number;
  /** Extra request kinds that were asked for but have no replay here. */
  skipped: Record<string, number>;
}

/** What one extra request of each kind does; `i` is the cluster, `m`/`c` one of its Machines/configurations. */
type Replay = (
  x: { client: KubeClient; ns: string; cluster: KubernetesCluster; m: string; c: string; n: number },
) => Promise<unknown>;

const REPLAYS: Record<string, Replay> = {
  "POST events": ({ client, ns, cluster, n }) =>
    client.create(EVENTS, {
      metadata: { name: `${cluster.metadata.name}.${n}.${crypto.randomUUID().slice(0, 8)}`, namespace: ns },
      eventTime: microTime(new Date()),
      reportingController: "nico.homystack.com/nico",
      reportingInstance: "ceiling",
      action: "ConfigurationCreated",
      reason: "ConfigurationCreated",
      note: `created NixosConfiguration ${cluster.metadata.name}-${n}`,
      type: "Normal",
      regarding: {
        apiVersion: cluster.apiVersion,
        kind: cluster.kind,
        name: cluster.metadata.name,
        namespace: ns,
        uid: cluster.metadata.uid,
      },
    } as KubeObject),
  "PATCH kubernetesclusters/status": ({ client, ns, cluster, n }) =>
    client.mergePatch(KUBERNETES_CLUSTERS, cluster.metadata.name, ns, {
      status: { ...cluster.status, observedGeneration: n },
    }, "status"),
  "PATCH kubernetesclusters": ({ client, ns, cluster, n }) =>
    client.mergePatch(KUBERNETES_CLUSTERS, cluster.metadata.name, ns, {
      metadata: { annotations: { "bench.nico/extra": String(n) } },
    }),
  "GET machines": ({ client, ns, m }) => client.get(MACHINES, m, ns),
  "GET nixosconfigurations": ({ client, ns, c }) => client.get(NIXOS_CONFIGURATIONS, c, ns),
  // The simulated NIO's finalizer PUT; a metadata patch costs the API server about the same.
  "PUT nixosconfigurations": ({ client, ns, c, n }) =>
    client.mergePatch(NIXOS_CONFIGURATIONS, c, ns, { metadata: { annotations: { "bench.nico/extra": String(n) } } }),
  "PATCH nixosconfigurations/status": ({ client, ns, c, n }) =>
    client.mergePatch(NIXOS_CONFIGURATIONS, c, ns, { status: { message: `extra ${n}` } }, "status"),
  "PATCH machines/status": ({ client, ns, m, n }) =>
    client.mergePatch(MACHINES, m, ns, { status: { lastAppliedTime: new Date(n * 1000).toISOString() } }, "status"),
  "PATCH machines": ({ client, ns, m, n }) =>
    client.mergePatch(MACHINES, m, ns, { metadata: { annotations: { "bench.nico/extra": String(n) } } }),
};

type ClusterSpec = (names: string[]) => KubernetesCluster["spec"];

function clean<T extends KubeObject>(o: T): T {
  const { uid: _u, resourceVersion: _r, creationTimestamp: _c, generation: _g, ...meta } = o.metadata as
    & KubeObject["metadata"]
    & Record<string, unknown>;
  delete (meta as Record<string, unknown>).managedFields;
  return { ...o, metadata: meta as T["metadata"] };
}

/** What the clusters of one ceiling run share: where, the templates, the request pool and the extra requests. */
interface CeilingRun {
  client: KubeClient;
  namespace: string;
  clusters: number;
  spec: ClusterSpec;
  t: Templates;
  /** Runs a request in the pool, counting it. */
  req: <T>(fn: () => Promise<T>) => Promise<T>;
  /** Each kind of extra request, and how many over all clusters. */
  replays: [Replay, number][];
}

/**
 * Runs the ceiling in `namespace`, whose Machines `<cluster>-n<j>` exist already.
 * `machineNames(i)` names cluster i's machines; `spec` builds its cluster spec.
 */
export async function runCeiling(
  client: KubeClient,
  namespace: string,
  clusters: number,
  machineNames: (i: number) => string[],
  clusterName: (i: number) => string,
  spec: ClusterSpec,
  t: Templates,
  concurrency: number,
  extras: Record<string, number> = {},
): Promise<CeilingResult> {
  const skipped: Record<string, number> = {};
  const replays: [Replay, number][] = [];
  for (const [k, total] of Object.entries(extras)) {
    const n = Math.round(total);
    if (n <= 0) continue;
    const r = REPLAYS[k];
    if (r) replays.push([r, n]);
    else skipped[k] = n;
  }
  const run = limiter(concurrency);
  let requests = 0;
  const req = <T>(fn: () => Promise<T>) =>
    run(() => {
      requests++;
      return fn();
    });
  const r: CeilingRun = { client, namespace, clusters, spec, t, req, replays };
  const started = performance.now();
  await Promise.all(Array.from({ length: clusters }, (_, i) => ceilingCluster(r, i, clusterName(i), machineNames(i))));
  return { seconds: (performance.now() - started) / 1000, requests, concurrency, skipped };
}

/** Cluster `i` of a ceiling run: its objects in dependency order, then its share of the extra requests. */
async function ceilingCluster(r: CeilingRun, i: number, name: string, names: string[]): Promise<void> {
  const { client, namespace, t, req } = r;
  const created = await req(() =>
    client.create<KubernetesCluster>(KUBERNETES_CLUSTERS, {
      apiVersion: t.cluster.apiVersion,
      kind: t.cluster.kind,
      metadata: { name, namespace },
      spec: r.spec(names),
    })
  );
  const owner = [clusterOwnerReference({ name, uid: created.metadata.uid! })];
  const labels = { [CLUSTER_LABEL]: name };
  await Promise.all(names.map((m) => req(() => client.mergePatch(MACHINES, m, namespace, { metadata: { labels } }))));
  await Promise.all(t.secrets.map((s) =>
    req(() =>
      client.create(SECRETS, {
        ...clean(s),
        metadata: {
          name: name + s.metadata.name.slice(t.cluster.metadata.name.length),
          namespace,
          labels,
          ownerReferences: owner,
        },
      })
    )
  ));
  await Promise.all(names.map((m, j) => ceilingNode(r, { name, labels, owner }, m, j)));
  const status = { ...t.cluster.status!, observedGeneration: created.metadata.generation ?? 1 };
  await req(() => client.mergePatch(KUBERNETES_CLUSTERS, name, namespace, { status }, "status"));
  const withStatus = { ...created, status };
  const jobs: Promise<unknown>[] = [];
  for (const [replay, total] of r.replays) {
    const mine = Math.floor(total / r.clusters) + (i < total % r.clusters ? 1 : 0);
    for (let n = 0; n < mine; n++) {
      const m = names[n % names.length]!;
      jobs.push(req(() => replay({ client, ns: namespace, cluster: withStatus, m, c: configName(name, m), n })));
    }
  }
  await Promise.all(jobs);
}

/** Node `j` (Machine `m`): its NixosConfiguration, NIO's two status writes, and its Machine's status. */
async function ceilingNode(
  r: CeilingRun,
  cluster: { name: string; labels: Record<string, string>; owner: ReturnType<typeof clusterOwnerReference>[] },
  m: string,
  j: number,
): Promise<void> {
  const { client, namespace, t, req } = r;
  const converging = (cfg: NixosConfiguration) => ({
    ...cfg.status,
    phase: "Converging",
    message: "nixos-rebuild switch",
    observedGeneration: 1,
  });
  const tpl = t.configs[j % t.configs.length]!;
  const cfgName = configName(cluster.name, m);
  const { status: _s, ...body } = clean(tpl);
  await req(() =>
    client.create<NixosConfiguration>(NIXOS_CONFIGURATIONS, {
      ...body,
      metadata: {
        ...body.metadata,
        name: cfgName,
        namespace,
        labels: { ...body.metadata.labels, ...cluster.labels },
        ownerReferences: cluster.owner,
      },
      spec: { ...tpl.spec, machineRef: { name: m }, flake: `#${m}` },
    })
  );
  await req(() => client.mergePatch(NIXOS_CONFIGURATIONS, cfgName, namespace, { status: converging(tpl) }, "status"));
  await req(() =>
    client.mergePatch(NIXOS_CONFIGURATIONS, cfgName, namespace, {
      status: { ...tpl.status, observedGeneration: 1 },
    }, "status")
  );
  await req(() =>
    client.mergePatch(MACHINES, m, namespace, {
      status: { ...t.machineStatus, appliedConfiguration: cfgName },
    }, "status")
  );
}
