// deno-lint-ignore-file no-explicit-any
/**
 * The reconciler against a real API server with the simulated NIO:
 * provisioning, selection, status, kubeconfig, failure and deletion.
 */
import assert from "node:assert/strict";
import { parse } from "yaml";
import type { KubernetesCluster } from "../../crds/kubernetescluster.ts";
import { SECRETS } from "../../lib/kube/resources.ts";
import { KUBERNETES_CLUSTERS } from "../../crds/kubernetescluster.ts";
import { MACHINES, NIXOS_CONFIGURATIONS } from "../../core/contract/nio.ts";
import { CLUSTER_LABEL, FINALIZER } from "../../core/contract/labels.ts";
import type { Machine, NioGeneration, NixosConfiguration } from "../../core/contract/nio.ts";
import { certInfo, signedBy } from "../../lib/pki.ts";
import { eventually } from "../../testing/helpers.ts";
import { createMachines, machinesDiscovered } from "../../testing/nico.ts";
import { world } from "../../testing/world.ts";

const setup = (prefix: string, generation: NioGeneration = "v1") =>
  world(prefix, { generation, nio: { applyDelayMs: 150, removeDelayMs: 100 } });

function kcluster(ns: string, name: string, spec: unknown): any {
  return { metadata: { name, namespace: ns }, spec };
}

const getCluster = (e: { client: any; ns: string }, name: string) =>
  e.client.get(KUBERNETES_CLUSTERS, name, e.ns) as Promise<KubernetesCluster | undefined>;

async function readyCluster(
  e: { client: any; ns: string },
  name: string,
  timeoutMs = 30_000,
): Promise<KubernetesCluster> {
  return await eventually(`cluster ${name} Ready`, async () => {
    const c = await getCluster(e, name);
    return c?.status?.phase === "Ready" ? c : undefined;
  }, timeoutMs);
}

const cond = (c: KubernetesCluster, type: string) => c.status?.conditions?.find((x) => x.type === type);

Deno.test("a cluster is provisioned: claims, configurations with the right files, Ready, a kubeconfig", async () => {
  await using e = await setup("prov");
  await createMachines(e.client, e.ns, ["cp-1", "cp-2", "cp-3"], { role: "cp" });
  await createMachines(e.client, e.ns, ["w-1", "w-2"], { role: "worker" });
  await machinesDiscovered(e.client, e.ns, ["cp-1", "cp-2", "cp-3", "w-1", "w-2"]);
  await e.client.create(
    KUBERNETES_CLUSTERS,
    kcluster(e.ns, "prod", {
      gitRepo: "https://git.example.test/prod.git",
      configurationSubdir: "clusters/prod",
      credentialsRef: { name: "git-creds" },
      controlPlane: { machineSelector: { matchLabels: { role: "cp" } }, count: 3 },
      dataPlane: { machineSelector: { matchLabels: { role: "worker" } }, count: 2 },
    }),
  );
  const c = await readyCluster(e, "prod");
  assert.deepEqual(c.status!.controlPlane!.readyMachines, ["cp-1", "cp-2", "cp-3"]);
  assert.deepEqual(c.status!.dataPlane!.readyMachines, ["w-1", "w-2"]);
  assert.equal(cond(c, "ControlPlaneReady")!.message, "3/3 control plane machines ready");
  assert.equal(c.status!.bootstrapNode, "cp-1");
  assert.ok(c.metadata.finalizers!.includes(FINALIZER));

  const cfgs = (await e.client.list<NixosConfiguration>(NIXOS_CONFIGURATIONS, { namespace: e.ns })).items;
  assert.deepEqual(cfgs.map((x) => x.metadata.name).sort(), [
    "prod.cp-1",
    "prod.cp-2",
    "prod.cp-3",
    "prod.w-1",
    "prod.w-2",
  ]);
  const cp1 = cfgs.find((x) => x.metadata.name === "prod.cp-1")!;
  assert.equal(cp1.spec.flake, "#cp-1");
  assert.equal(cp1.spec.onRemoveFlake, "#minimal");
  assert.equal(cp1.spec.gitRepo, "https://git.example.test/prod.git");
  assert.equal(cp1.spec.configurationSubdir, "clusters/prod");
  assert.deepEqual(cp1.spec.credentialsRef, { name: "git-creds" });
  assert.equal("fullInstall" in cp1.spec, false, "NIO v1 drops a false fullInstall: NICO writes none");
  // NIO v1 writes files at the root of its checkout: NICO names them inside the subdir, next to flake.nix.
  assert.deepEqual(cp1.spec.additionalFiles.map((f) => f.path), [
    "clusters/prod/cluster.nix",
    "clusters/prod/join-token",
    "clusters/prod/agent-token",
    "clusters/prod/cluster-ca.crt",
    "clusters/prod/cluster-ca.key",
    "clusters/prod/etcd-ca.crt",
    "clusters/prod/etcd-ca.key",
  ]);
  const w1 = cfgs.find((x) => x.metadata.name === "prod.w-1")!;
  // A worker gets the agent token only: no server token, no CA key, no SSH key unless spec.machineSshKey.
  assert.deepEqual(w1.spec.additionalFiles.map((f) => f.path), [
    "clusters/prod/cluster.nix",
    "clusters/prod/agent-token",
  ]);
  assert.equal(w1.metadata.ownerReferences![0]!.uid, c.metadata.uid);

  const machines = (await e.client.list<Machine>(MACHINES, { namespace: e.ns })).items;
  assert.ok(machines.every((m) => m.metadata.labels?.[CLUSTER_LABEL] === "prod"));

  const token = await e.client.get<any>(SECRETS, "prod-join-token", e.ns);
  assert.equal(atob(token.data.token).length, 64, "32 random bytes, hex");
  const agentToken = await e.client.get<any>(SECRETS, "prod-agent-token", e.ns);
  assert.equal(atob(agentToken.data.token).length, 64, "32 random bytes, hex");
  assert.notEqual(agentToken.data.token, token.data.token, "the agent token is not the server token");
  const kc = await e.client.get<any>(SECRETS, "prod-kubeconfig", e.ns);
  assert.equal(c.status!.kubeconfigSecret, "prod-kubeconfig");
  const kubeconfig = parse(atob(kc.data.value));
  assert.equal(kubeconfig.clusters[0].cluster.server, `https://127.0.10.2:6443`);
  const ca = await e.client.get<any>(SECRETS, "prod-ca", e.ns);
  const clientCert = atob(kubeconfig.users[0].user["client-certificate-data"]);
  assert.ok(await signedBy(clientCert, atob(ca.data["tls.crt"])));
  assert.match(certInfo(clientCert).subject, /CN=nico-admin/);
  assert.match(certInfo(clientCert).subject, /O=system:masters/);
  const keyOnly = await e.client.get<any>(SECRETS, "prod-ca-key", e.ns);
  assert.deepEqual(Object.keys(keyOnly.data), ["tls.key"]);
  assert.deepEqual(Object.keys(ca.data), ["tls.crt"], "the CA's key lives in prod-ca-key alone");
});

Deno.test("explicit lists take precedence; underprovisioned selectors say so", async () => {
  await using e = await setup("sel");
  await createMachines(e.client, e.ns, ["a", "b", "c"], { pool: "x" });
  await e.client.create(
    KUBERNETES_CLUSTERS,
    kcluster(e.ns, "explicit", {
      controlPlane: { machines: ["c"], machineSelector: { matchLabels: { pool: "x" } }, count: 2 },
    }),
  );
  const c = await readyCluster(e, "explicit");
  assert.deepEqual(c.status!.controlPlane!.machines, ["c"]);
  await e.client.create(
    KUBERNETES_CLUSTERS,
    kcluster(e.ns, "short", {
      controlPlane: { machineSelector: { matchLabels: { pool: "x" } }, count: 3 },
    }),
  );
  const s = await eventually("short cluster reports the shortfall", async () => {
    const x = await getCluster(e, "short");
    const m = x && cond(x, "MachinesAvailable");
    return m?.reason === "Underprovisioned" && x!.status?.controlPlane?.ready === 2 ? x : undefined;
  });
  assert.deepEqual(s.status!.controlPlane!.machines, ["a", "b"]);
  assert.match(cond(s, "MachinesAvailable")!.message, /2 of 3 machines available \(1 short/);
  // Two healthy nodes of three requested: not Ready, and the columns say 2/3 (not 2/2).
  assert.equal(s.status!.controlPlane!.summary, "2/3");
  assert.deepEqual([cond(s, "ControlPlaneReady")!.status, cond(s, "ControlPlaneReady")!.reason], [
    "False",
    "Underprovisioned",
  ]);
  assert.equal(cond(s, "Ready")!.status, "False");
  assert.equal(s.status!.phase, "Provisioning");
});

Deno.test("many clusters created at once over one pool never share a Machine", async () => {
  await using e = await setup("race");
  const pool = Array.from({ length: 12 }, (_, i) => `m-${String(i).padStart(2, "0")}`);
  await createMachines(e.client, e.ns, pool, { pool: "shared" });
  const names = Array.from({ length: 6 }, (_, i) => `c${i}`);
  await Promise.all(names.map((n) =>
    e.client.create(
      KUBERNETES_CLUSTERS,
      kcluster(e.ns, n, {
        controlPlane: { machineSelector: { matchLabels: { pool: "shared" } }, count: 1 },
        dataPlane: { machineSelector: { matchLabels: { pool: "shared" } }, count: 2 },
      }),
    )
  ));
  // 6 clusters x 3 machines = 18 wanted from 12: some must be short, none may overlap.
  await eventually("every machine claimed and configured", async () => {
    const cfgs = (await e.client.list<NixosConfiguration>(NIXOS_CONFIGURATIONS, { namespace: e.ns })).items;
    return cfgs.length >= 12;
  }, 60_000);
  const cfgs = (await e.client.list<NixosConfiguration>(NIXOS_CONFIGURATIONS, { namespace: e.ns })).items;
  const targets = cfgs.map((c) => c.spec.machineRef.name);
  assert.equal(
    new Set(targets).size,
    targets.length,
    `a Machine has two configurations: ${targets.sort().join(",")}`,
  );
  const machines = (await e.client.list<Machine>(MACHINES, { namespace: e.ns })).items;
  for (const cfg of cfgs) {
    const owner = cfg.metadata.labels![CLUSTER_LABEL];
    const m = machines.find((x) => x.metadata.name === cfg.spec.machineRef.name)!;
    assert.equal(
      m.metadata.labels?.[CLUSTER_LABEL],
      owner,
      `${m.metadata.name} claimed by another cluster than its configuration's`,
    );
  }
});

Deno.test("a membership change regenerates cluster.nix on every node", async () => {
  await using e = await setup("member");
  await createMachines(e.client, e.ns, ["cp-1", "w-1", "w-2"]);
  await machinesDiscovered(e.client, e.ns, ["cp-1", "w-1", "w-2"]);
  await e.client.create(
    KUBERNETES_CLUSTERS,
    kcluster(e.ns, "c", { controlPlane: { machines: ["cp-1"] }, dataPlane: { machines: ["w-1"] } }),
  );
  await readyCluster(e, "c");
  await e.client.mergePatch(KUBERNETES_CLUSTERS, "c", e.ns, { spec: { dataPlane: { machines: ["w-1", "w-2"] } } });
  const nix = await eventually("every node's cluster.nix lists w-2", async () => {
    const cfgs = (await e.client.list<NixosConfiguration>(NIXOS_CONFIGURATIONS, { namespace: e.ns })).items;
    const files = cfgs.map((c) => c.spec.additionalFiles.find((f) => f.path === "cluster.nix") as { inline: string });
    return cfgs.length === 3 && files.every((f) => f.inline.includes('name = "w-2"')) ? files[0]!.inline : undefined;
  });
  assert.match(nix, /workers = \[\n\s+\{ name = "w-1"; address = "127\.0\.10\.3"; \}\n\s+\{ name = "w-2";/);
  await eventually("2/2 workers ready", async () => {
    const c = await getCluster(e, "c");
    return c?.status?.phase === "Ready" && c.status.dataPlane?.summary === "2/2";
  });
});

Deno.test("an operator restart mid-provisioning continues without duplicates", async () => {
  await using w = await world("restart", { nio: { applyDelayMs: 1500 } });
  const { cp, ns } = w;
  await createMachines(cp.client, ns, ["cp-1", "w-1", "w-2"]);
  await cp.client.create(
    KUBERNETES_CLUSTERS,
    kcluster(ns, "c", { controlPlane: { machines: ["cp-1"] }, dataPlane: { machines: ["w-1", "w-2"] } }),
  );
  await eventually(
    "configurations exist",
    async () => (await cp.client.list(NIXOS_CONFIGURATIONS, { namespace: ns })).items.length === 3,
  );
  await w.stopNico();
  const before = (await cp.client.list<any>(NIXOS_CONFIGURATIONS, { namespace: ns })).items.map((c) => c.metadata.uid)
    .sort();
  await w.startNico();
  await readyCluster({ client: cp.client, ns }, "c");
  const after = (await cp.client.list<any>(NIXOS_CONFIGURATIONS, { namespace: ns })).items.map((c) => c.metadata.uid)
    .sort();
  assert.deepEqual(after, before, "the same three configurations, none recreated");
  const tokens = (await cp.client.list<any>(SECRETS, { namespace: ns })).items.filter((s) =>
    s.metadata.name === "c-join-token"
  );
  assert.equal(tokens.length, 1);
});

Deno.test("a node NIO never finishes fails after the operator's node timeout when the spec sets none", async () => {
  await using w = await world("timeout", { nio: { applyDelayMs: 2000 }, nico: { nodeTimeoutMs: 3000 } });
  const { cp, ns } = w;
  await createMachines(cp.client, ns, ["cp-1"]);
  await cp.client.create(KUBERNETES_CLUSTERS, kcluster(ns, "c", { controlPlane: { machines: ["cp-1"] } }));
  await eventually("configuration of cp-1", () => cp.client.get(NIXOS_CONFIGURATIONS, "c.cp-1", ns));
  await cp.client.mergePatch(NIXOS_CONFIGURATIONS, "c.cp-1", ns, {
    metadata: { annotations: { "sim.nio.homystack.com/never-finish": "true" } },
  });
  const failed = await eventually(
    "Failed by timeout",
    async () => {
      const c = await cp.client.get<KubernetesCluster>(KUBERNETES_CLUSTERS, "c", ns);
      return c?.status?.phase === "Failed" ? c : undefined;
    },
    90_000,
    250,
  );
  assert.equal(failed.spec.rollout.nodeTimeout, undefined);
  assert.match(cond(failed, "Ready")!.message, /cp-1 \(not applied within 3s/);
});

Deno.test("the older NIO status shape is understood", async () => {
  await using e = await setup("older", "older");
  await createMachines(e.client, e.ns, ["cp-1", "w-1"]);
  await machinesDiscovered(e.client, e.ns, ["cp-1", "w-1"]);
  await e.client.create(
    KUBERNETES_CLUSTERS,
    kcluster(e.ns, "c", { controlPlane: { machines: ["cp-1"] }, dataPlane: { machines: ["w-1"] } }),
  );
  const c = await readyCluster(e, "c");
  assert.equal(c.status!.dataPlane!.summary, "1/1");
});

Deno.test("deletion releases every Machine and removes every owned Secret", async () => {
  await using e = await setup("del");
  await createMachines(e.client, e.ns, ["cp-1", "w-1", "spare"]);
  await machinesDiscovered(e.client, e.ns, ["cp-1", "w-1", "spare"]);
  // A Secret NICO does not own must survive.
  await e.client.create(
    SECRETS,
    { metadata: { name: "c-unrelated", namespace: e.ns, labels: { [CLUSTER_LABEL]: "c" } }, data: {} } as any,
  );
  await e.client.create(
    KUBERNETES_CLUSTERS,
    kcluster(e.ns, "c", { controlPlane: { machines: ["cp-1"] }, dataPlane: { machines: ["w-1"] } }),
  );
  await readyCluster(e, "c");
  await e.client.delete(KUBERNETES_CLUSTERS, "c", e.ns);
  await eventually("cluster gone", async () => (await getCluster(e, "c")) === undefined);
  const cfgs = (await e.client.list(NIXOS_CONFIGURATIONS, { namespace: e.ns })).items;
  assert.equal(cfgs.length, 0);
  const machines = (await e.client.list<Machine>(MACHINES, { namespace: e.ns })).items;
  for (const m of machines) {
    assert.equal(m.metadata.labels?.[CLUSTER_LABEL], undefined, `${m.metadata.name} still claimed`);
    assert.notEqual(m.status?.hasConfiguration, true, `${m.metadata.name} still configured`);
  }
  const secrets = (await e.client.list<any>(SECRETS, { namespace: e.ns })).items.map((s) => s.metadata.name);
  assert.deepEqual(secrets, ["c-unrelated"]);
});
