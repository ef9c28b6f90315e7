// deno-lint-ignore-file no-explicit-any
/**
 * Upgrading a cluster made before the server/agent token split, on a real
 * API server: its `<cluster>-join-token` keeps its value and becomes the
 * server token (control-plane nodes only), NICO creates the agent token, and
 * workers get the agent token alone.
 */
import assert from "node:assert/strict";
import type { KubernetesCluster } from "../../crds/kubernetescluster.ts";
import { API_VERSION, KIND, KUBERNETES_CLUSTERS } from "../../crds/kubernetescluster.ts";
import { SECRETS } from "../../lib/kube/resources.ts";
import { CLUSTER_LABEL } from "../../core/contract/labels.ts";
import { NIXOS_CONFIGURATIONS, type NixosConfiguration } from "../../core/contract/nio.ts";
import { eventually } from "../../testing/helpers.ts";
import { createMachines, machinesDiscovered } from "../../testing/nico.ts";
import { world } from "../../testing/world.ts";

Deno.test("an existing join token becomes the server token; the agent token is created; workers get only it", async () => {
  await using w = await world("tokens", { nio: { applyDelayMs: 100 }, nico: false });
  const { cp, ns } = w;
  await createMachines(cp.client, ns, ["cp-1", "w-1"]);
  const cluster = await cp.client.create<KubernetesCluster>(KUBERNETES_CLUSTERS, {
    metadata: { name: "old", namespace: ns },
    spec: {
      gitRepo: "https://git.example.test/flake.git",
      controlPlane: { machines: ["cp-1"] },
      dataPlane: { machines: ["w-1"] },
    },
  } as KubernetesCluster);
  // What an older NICO left behind: one join token for every node.
  const oldToken = "ab".repeat(32);
  const madeByTest = await cp.client.create<any>(SECRETS, {
    metadata: {
      name: "old-join-token",
      namespace: ns,
      labels: { [CLUSTER_LABEL]: "old" },
      ownerReferences: [{
        apiVersion: API_VERSION,
        kind: KIND,
        name: "old",
        uid: cluster.metadata.uid!,
        controller: true,
        blockOwnerDeletion: true,
      }],
    },
    type: "Opaque",
    data: { token: btoa(oldToken) },
  } as any);

  await w.startNico();
  await w.until("Ready", (c) => c.status?.phase === "Ready", 30_000, "old");

  const server = await cp.client.get<any>(SECRETS, "old-join-token", ns);
  assert.equal(atob(server.data.token), oldToken, "the join token keeps its value (it is now the server token)");
  const agent = await cp.client.get<any>(SECRETS, "old-agent-token", ns);
  assert.match(atob(agent.data.token), /^[0-9a-f]{64}$/);
  assert.notEqual(atob(agent.data.token), oldToken);

  const cfgs = (await cp.client.list<NixosConfiguration>(NIXOS_CONFIGURATIONS, { namespace: ns })).items;
  const files = (name: string) =>
    cfgs.find((c) => c.metadata.name === name)!.spec.additionalFiles.map((f) =>
      "secretRef" in f ? `${f.path}<-${f.secretRef.name}` : f.path
    );
  assert.deepEqual(files("old.cp-1"), [
    "cluster.nix",
    "join-token<-old-join-token",
    "agent-token<-old-agent-token",
    "cluster-ca.crt<-old-ca",
    "cluster-ca.key<-old-ca-key",
    // A cluster not brought up yet gets an etcd CA too (control-plane nodes only).
    "etcd-ca.crt<-old-etcd-ca",
    "etcd-ca.key<-old-etcd-ca-key",
  ]);
  assert.deepEqual(files("old.w-1"), ["cluster.nix", "agent-token<-old-agent-token"]);

  assert.equal(
    server.metadata.uid,
    madeByTest.metadata.uid,
    "only the agent token is new: the join token is the same object",
  );
});

Deno.test("a running cluster from before the split gets an agent token; once nodes carry it, losing it is IdentityLost", async () => {
  await using w = await world("upgrade", { nio: { applyDelayMs: 100 } });
  const { cp, ns } = w;
  const get = () => cp.client.get<KubernetesCluster>(KUBERNETES_CLUSTERS, "c", ns);
  const ready = async () => (await get())?.status?.phase === "Ready";
  const reason = async () => (await get())?.status?.conditions?.find((x) => x.type === "Ready")?.reason;
  await createMachines(cp.client, ns, ["cp-1", "w-1"]);
  await machinesDiscovered(cp.client, ns, ["cp-1", "w-1"]);
  await cp.client.create(KUBERNETES_CLUSTERS, {
    metadata: { name: "c", namespace: ns },
    spec: { controlPlane: { machines: ["cp-1"] }, dataPlane: { machines: ["w-1"] } },
  });
  await eventually("Ready", ready, 30_000);
  // Turn it into what an older NICO left running: nodes applied configurations without the agent token.
  await w.stopNico();
  for (const cfg of (await cp.client.list<NixosConfiguration>(NIXOS_CONFIGURATIONS, { namespace: ns })).items) {
    const files = cfg.spec.additionalFiles.filter((f) => f.path !== "agent-token");
    if (!files.some((f) => f.path === "join-token")) {
      files.splice(1, 0, {
        path: "join-token",
        valueType: "SecretRef",
        secretRef: { name: "c-join-token", key: "token" },
      });
    }
    await cp.client.mergePatch(NIXOS_CONFIGURATIONS, cfg.metadata.name, ns, { spec: { additionalFiles: files } });
  }
  await cp.client.delete(SECRETS, "c-agent-token", ns);

  await w.startNico();
  const agent = await eventually(
    "the agent token is created",
    () => cp.client.get<any>(SECRETS, "c-agent-token", ns),
  );
  assert.match(atob(agent.data.token), /^[0-9a-f]{64}$/);
  await eventually("workers carry the agent token only", async () => {
    const w = await cp.client.get<NixosConfiguration>(NIXOS_CONFIGURATIONS, "c.w-1", ns);
    return w?.spec.additionalFiles.map((f) => f.path).join(",") === "cluster.nix,agent-token";
  }, 30_000);
  await eventually("Ready again", ready, 30_000);
  assert.notEqual(await reason(), "IdentityLost");

  // Now the nodes trust it: deleting it is a lost identity, not a silent new token.
  await cp.client.delete(SECRETS, "c-agent-token", ns);
  await eventually("IdentityLost", async () => (await reason()) === "IdentityLost", 30_000);
  assert.equal(await cp.client.get(SECRETS, "c-agent-token", ns), undefined, "no new agent token was made");
});
