// deno-lint-ignore-file no-explicit-any
/**
 * Reconcile phases, each alone on the real API server: a scope is built from
 * what the server holds (no informers, no controller), one phase runs, and
 * the test reads what it wrote and what the phase answered.
 */
import assert from "node:assert/strict";
import { KUBERNETES_CLUSTERS, type KubernetesCluster, KubernetesClusterSpec } from "../../crds/kubernetescluster.ts";
import { eventRecorder } from "../../lib/events.ts";
import type { KubeClient } from "../../lib/kube/client.ts";
import { SECRETS } from "../../lib/kube/resources.ts";
import { MACHINES, NIXOS_CONFIGURATIONS } from "../../core/contract/nio.ts";
import { silentLogger } from "../../lib/runtime/log.ts";
import { CLUSTER_LABEL } from "../../core/contract/labels.ts";
import type { Machine, NixosConfiguration } from "../../core/contract/nio.ts";
import { ClaimConflictError, claimMachine, releaseMachine } from "../../controllers/cluster/claims.ts";
import { reconcileClaims } from "../../controllers/cluster/phases/claims.ts";
import { planConfigurations, writeConfigurations } from "../../controllers/cluster/phases/configurations.ts";
import { reconcileSecrets } from "../../controllers/cluster/phases/secrets.ts";
import { observeWorkload } from "../../controllers/cluster/phases/workload.ts";
import { observeRuns } from "../../controllers/cluster/phases/runs.ts";
import { observeVersions } from "../../controllers/cluster/versions.ts";
import { ClusterProblem } from "../../controllers/cluster/problem.ts";
import { clusterSettings } from "../../controllers/cluster/settings.ts";
import { buildScope, clusterDeps, type ClusterScope } from "../../controllers/cluster/scope.ts";
import { IdentityLostError, type Secret } from "../../controllers/cluster/secrets.ts";
import { REGENERATE_IDENTITY_ANNOTATION } from "../../core/contract/labels.ts";
import { caSecret, kubeconfigSecret } from "../../core/contract/names.ts";
import { clusterOwnerReference } from "../../core/contract/owner.ts";
import { sharedControlPlane } from "../../testing/helpers.ts";
import { createMachines } from "../../testing/nico.ts";

const env = sharedControlPlane();

/** The scope one pass over `name` would see, read straight from the API server. */
async function scopeOf(client: KubeClient, ns: string, name: string): Promise<ClusterScope> {
  const cluster = (await client.get<KubernetesCluster>(KUBERNETES_CLUSTERS, name, ns))!;
  const machines = (await client.list<Machine>(MACHINES, { namespace: ns })).items;
  const configs = (await client.list<NixosConfiguration>(NIXOS_CONFIGURATIONS, { namespace: ns })).items;
  const secrets = (await client.list<Secret>(SECRETS, { namespace: ns })).items;
  const deps = clusterDeps({
    client,
    recorder: eventRecorder(client, "nico.homystack.com/nico", "phase-test"),
  }, clusterSettings({ defaultGitRepo: "https://git.example.test/flake.git", nodeTimeout: 60_000 }));
  const cache = {
    machines,
    configs,
    config: (n: string) => configs.find((c) => c.metadata.name === n),
    secret: (n: string) => secrets.find((s) => s.metadata.name === n),
    jobs: [],
    decommissions: [],
  };
  const spec = KubernetesClusterSpec.parse(cluster.spec);
  return buildScope(deps, cluster, spec, cache, new Date(), silentLogger);
}

/** Machines as NIO would have them: discoverable (no NIO runs in these tests). */
async function machines(client: KubeClient, ns: string, names: string[]): Promise<void> {
  await createMachines(client, ns, names);
  for (const n of names) {
    await client.mergePatch(MACHINES, n, ns, { status: { discoverable: true, hasConfiguration: false } }, "status");
  }
}

async function newCluster(client: KubeClient, ns: string, name: string, spec: unknown): Promise<void> {
  await client.create(KUBERNETES_CLUSTERS, { metadata: { name, namespace: ns }, spec } as any);
}

Deno.test("claims phase alone: labels every member; a pass from a stale read loses the race", async () => {
  const cp = await env.get();
  const ns = await cp.namespace("phase-claims");
  await machines(cp.client, ns, ["cp-1", "w-1", "spare"]);
  await newCluster(cp.client, ns, "c", { controlPlane: { machines: ["cp-1"] }, dataPlane: { machines: ["w-1"] } });
  const stale = await scopeOf(cp.client, ns, "c");
  const s = await scopeOf(cp.client, ns, "c");
  await reconcileClaims(s);
  const labels = (await cp.client.list<Machine>(MACHINES, { namespace: ns })).items
    .map((m) => [m.metadata.name, m.metadata.labels?.[CLUSTER_LABEL]]);
  assert.deepEqual(Object.fromEntries(labels), { "cp-1": "c", "w-1": "c", spare: undefined });
  assert.equal(s.machines.get("cp-1")!.metadata.labels?.[CLUSTER_LABEL], "c", "the scope holds what the server said");
  // Claimed again from the stale cache: the version check refuses it.
  await assert.rejects(reconcileClaims(stale), ClaimConflictError);
  // A fresh pass finds nothing left to claim: no Machine is written again.
  const versions = async () =>
    (await cp.client.list<Machine>(MACHINES, { namespace: ns })).items.map((m) => m.metadata.resourceVersion);
  const before = await versions();
  await reconcileClaims(await scopeOf(cp.client, ns, "c"));
  assert.deepEqual(await versions(), before);
});

Deno.test("secrets and configurations phases alone: one configuration per member, the plan it answers", async () => {
  const cp = await env.get();
  const ns = await cp.namespace("phase-configs");
  await machines(cp.client, ns, ["cp-1", "w-1"]);
  await newCluster(cp.client, ns, "c", { controlPlane: { machines: ["cp-1"] }, dataPlane: { machines: ["w-1"] } });
  const s = await scopeOf(cp.client, ns, "c");
  const identity = await reconcileSecrets(s);
  assert.ok(identity.ca.certPem.includes("BEGIN CERTIFICATE"));
  const secrets = (await cp.client.list<Secret>(SECRETS, { namespace: ns })).items.map((x) => x.metadata.name).sort();
  // The etcd CA is made with the identity of a new cluster (issue 30).
  assert.deepEqual(secrets, ["c-agent-token", "c-ca", "c-ca-key", "c-etcd-ca", "c-etcd-ca-key", "c-join-token"]);

  const workload = observeWorkload(s);
  const runs = await observeRuns(s);
  const versions = observeVersions(s, workload, runs);
  const planned = planConfigurations(s, { identity, workload, runs, versions, backup: undefined });
  const written = new Map<string, NixosConfiguration>();
  // No workload connection: no drain and no etcd hold, so the writes follow the planner's plan as it is.
  await writeConfigurations(s, planned, planned.plan, written, runs);
  assert.equal(planned.blocked, undefined);
  assert.equal(planned.endpoint, "https://127.0.10.2:6443");
  // A new cluster is provisioned in parallel (the default): every member's configuration at once.
  assert.deepEqual(planned.plan?.create, ["cp-1", "w-1"]);
  const cfgs = (await cp.client.list<NixosConfiguration>(NIXOS_CONFIGURATIONS, { namespace: ns })).items;
  assert.deepEqual(cfgs.map((c) => c.metadata.name).sort(), ["c.cp-1", "c.w-1"]);
  assert.deepEqual([...written.keys()].sort(), ["c.cp-1", "c.w-1"]);
  assert.deepEqual([...planned.wantedHash.keys()].sort(), ["c.cp-1", "c.w-1"]);
});

Deno.test('secrets phase alone: regenerate-identity is a strict boolean; only "true" re-keys a running cluster', async () => {
  const cp = await env.get();
  const ns = await cp.namespace("phase-rekey");
  await machines(cp.client, ns, ["cp-1"]);
  await newCluster(cp.client, ns, "c", { controlPlane: { machines: ["cp-1"] } });
  await reconcileSecrets(await scopeOf(cp.client, ns, "c"));
  // A published kubeconfig makes it a running cluster: its identity is never replaced by accident.
  const cluster = (await cp.client.get<KubernetesCluster>(KUBERNETES_CLUSTERS, "c", ns))!;
  const owner = clusterOwnerReference({ name: "c", uid: cluster.metadata.uid! });
  await cp.client.create(SECRETS, {
    metadata: { name: kubeconfigSecret("c"), namespace: ns, ownerReferences: [owner] },
  });
  await cp.client.delete(SECRETS, caSecret("c"), ns);
  const annotate = (value: string) =>
    cp.client.mergePatch(KUBERNETES_CLUSTERS, "c", ns, {
      metadata: { annotations: { [REGENERATE_IDENTITY_ANNOTATION]: value } },
    });
  for (const no of ["false", "False", "yes", "1", ""]) {
    await annotate(no);
    await assert.rejects(reconcileSecrets(await scopeOf(cp.client, ns, "c")), IdentityLostError, `"${no}" re-keyed`);
    assert.equal(await cp.client.get(SECRETS, caSecret("c"), ns), undefined, `"${no}" made a new CA`);
  }
  await annotate("true");
  await reconcileSecrets(await scopeOf(cp.client, ns, "c"));
  assert.ok(await cp.client.get(SECRETS, caSecret("c"), ns), '"true" makes a new CA');
  const after = (await cp.client.get<KubernetesCluster>(KUBERNETES_CLUSTERS, "c", ns))!;
  assert.equal(after.metadata.annotations?.[REGENERATE_IDENTITY_ANNOTATION], undefined, "the request is removed");
});

Deno.test("configurations phase alone: a foreign configuration of the same name is a ClusterProblem", async () => {
  const cp = await env.get();
  const ns = await cp.namespace("phase-foreign");
  await machines(cp.client, ns, ["cp-1", "elsewhere"]);
  await cp.client.create(NIXOS_CONFIGURATIONS, {
    metadata: { name: "c.cp-1", namespace: ns },
    spec: { machineRef: { name: "elsewhere" } },
  } as any);
  await newCluster(cp.client, ns, "c", { controlPlane: { machines: ["cp-1"] } });
  const s = await scopeOf(cp.client, ns, "c");
  const workload = observeWorkload(s);
  const runs = await observeRuns(s);
  const versions = observeVersions(s, workload, runs);
  const input = { identity: await reconcileSecrets(s), workload, runs, versions, backup: undefined };
  const write = async () => {
    const planned = planConfigurations(s, input);
    return await writeConfigurations(s, planned, planned.plan, new Map(), runs);
  };
  const err = await write().then(() => undefined, (e) => e);
  assert.ok(err instanceof ClusterProblem, `expected a ClusterProblem, got ${err}`);
  assert.equal(err.reason, "ForeignConfiguration");
  assert.match(err.message, /NixosConfiguration c\.cp-1 .* delete it, or remove Machine cp-1/);
});

Deno.test("claims are conditional on the labels they were selected by and a release never removes someone else's claim", async () => {
  const cp = await env.get();
  const ns = await cp.namespace("claim");
  await machines(cp.client, ns, ["m"]);
  const fresh = (await cp.client.get<Machine>(MACHINES, "m", ns))!;
  const mine = await claimMachine(cp.client, fresh, "a");
  assert.equal(mine.metadata.labels?.[CLUSTER_LABEL], "a");
  // A second claim from the same stale read loses.
  await assert.rejects(claimMachine(cp.client, fresh, "b"), ClaimConflictError);
  // Another cluster takes it over; releasing with our stale view of it leaves their claim alone.
  await cp.client.mergePatch(MACHINES, "m", ns, { metadata: { labels: { [CLUSTER_LABEL]: "b" } } });
  assert.equal(await releaseMachine(cp.client, mine, "a"), false);
  assert.equal((await cp.client.get<Machine>(MACHINES, "m", ns))!.metadata.labels?.[CLUSTER_LABEL], "b");
  const theirs = (await cp.client.get<Machine>(MACHINES, "m", ns))!;
  assert.equal(await releaseMachine(cp.client, theirs, "b"), true);
  assert.equal((await cp.client.get<Machine>(MACHINES, "m", ns))!.metadata.labels?.[CLUSTER_LABEL], undefined);

  // NIO v1 rewrites Machine status all the time: a status write after the read does not spoil the claim.
  await cp.client.mergePatch(MACHINES, "m", ns, { metadata: { labels: { pool: "a" } } });
  const read = (await cp.client.get<Machine>(MACHINES, "m", ns))!;
  await cp.client.mergePatch(MACHINES, "m", ns, { status: { observedGeneration: 7 } }, "status");
  assert.equal((await claimMachine(cp.client, read, "c")).metadata.labels?.[CLUSTER_LABEL], "c");
  // A Machine without labels is claimed on its resourceVersion: any write in between loses the race.
  await createMachines(cp.client, ns, ["bare"]);
  const bare = (await cp.client.get<Machine>(MACHINES, "bare", ns))!;
  assert.equal(bare.metadata.labels, undefined);
  await cp.client.mergePatch(MACHINES, "bare", ns, { metadata: { annotations: { touched: "yes" } } });
  await assert.rejects(claimMachine(cp.client, bare, "a"), ClaimConflictError);
  const again = (await cp.client.get<Machine>(MACHINES, "bare", ns))!;
  assert.equal((await claimMachine(cp.client, again, "a")).metadata.labels?.[CLUSTER_LABEL], "a");
});
