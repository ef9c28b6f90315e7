/**
 * Argo CD registration (`--argocd-namespace`): NICO keeps an Argo CD cluster Secret per cluster in Argo CD's
 * namespace, with the fields Argo CD documents (testing/argocd.ts), whose credentials reach the workload API as
 * Argo CD would use them; it follows a re-issued kubeconfig and an endpoint move, is deleted with the cluster,
 * and a foreign Secret in its place is a Warning, never overwritten.
 */
import assert from "node:assert/strict";
import { KUBERNETES_CLUSTERS, type KubernetesCluster } from "../../crds/kubernetescluster.ts";
import { configName, kubeconfigSecret } from "../../core/contract/names.ts";
import { NIXOS_CONFIGURATIONS } from "../../core/contract/nio.ts";
import { argoCdSecretName } from "../../core/render/argocd.ts";
import type { Secret } from "../../controllers/cluster/secrets.ts";
import { EVENTS, SECRETS } from "../../lib/kube/resources.ts";
import type { KubeObject } from "../../lib/kube/client.ts";
import { argoCdSecretProblems, kubeconfigOfArgoCdSecret } from "../../testing/argocd.ts";
import { eventually, sharedControlPlane } from "../../testing/helpers.ts";
import { createMachines, startNico } from "../../testing/nico.ts";
import { startSimNio } from "../../testing/sim-nio.ts";
import { workloadClusters } from "../../testing/workload.ts";

const env = sharedControlPlane();

interface Ev extends KubeObject {
  reason: string;
  type: string;
  note: string;
  regarding?: { name: string };
}

const tlsOf = (s: Secret) => JSON.parse(atob(s.data!.config!)).tlsClientConfig as Record<string, string>;

Deno.test("a cluster is registered with Argo CD, in step with its kubeconfig, and gone with it", async () => {
  const cp = await env.get();
  const ns = await cp.namespace("argo-src");
  const argo = await cp.namespace("argocd");
  const workloads = workloadClusters(cp.client);
  const nio = startSimNio(cp.client, {
    namespace: ns,
    applyDelayMs: 100,
    onBootstrapApplied: workloads.onBootstrapApplied,
    onApplied: workloads.onApplied,
  });
  const nico = startNico(cp.client, { namespace: ns, argoCdNamespace: argo, settings: { argocdLabelKeys: "env" } });
  const argoSecret = () => cp.client.get<Secret>(SECRETS, argoCdSecretName(ns, "edge"), argo);
  try {
    await createMachines(cp.client, ns, ["cp-1", "w-1"], {}, 92);
    await cp.client.create(KUBERNETES_CLUSTERS, {
      metadata: { name: "edge", namespace: ns, labels: { env: "test" } },
      spec: { controlPlane: { machines: ["cp-1"] }, dataPlane: { machines: ["w-1"] } },
    });
    await eventually("Ready", async () => {
      const c = await cp.client.get<KubernetesCluster>(KUBERNETES_CLUSTERS, "edge", ns);
      return c?.status?.phase === "Ready";
    }, 60_000);
    const first = await eventually("the Argo CD cluster Secret", argoSecret, 30_000);
    assert.deepEqual(argoCdSecretProblems(first), []);
    assert.equal(atob(first.data!.name!), `${ns}/edge`);
    assert.equal(atob(first.data!.server!), "https://127.0.92.2:6443");
    assert.equal(first.metadata.labels?.env, "test", "the labels the operator lists, for ApplicationSet selectors");

    // Argo CD connects with the server, the CA and the client certificate: so does kubectl here.
    const path = await Deno.makeTempFile({ suffix: ".kubeconfig" });
    try {
      await Deno.writeTextFile(path, kubeconfigOfArgoCdSecret(first.data!));
      const nodes = await eventually("kubectl get nodes with the Argo CD Secret's credentials", async () => {
        const r = await cp.kubectl(["get", "nodes", "-o", "name"], { kubeconfig: path });
        // Both Nodes: a simulated kubelet posts its Node a moment after its host's apply, as a real one does.
        return r.code === 0 && r.stdout.includes("node/w-1") && r.stdout.includes("node/cp-1") ? r.stdout : undefined;
      });
      assert.match(nodes, /node\/cp-1/);
    } finally {
      await Deno.remove(path);
    }

    // A new kubeconfig (here: its Secret deleted, so NICO issues another) reaches Argo CD too.
    await cp.client.delete(SECRETS, kubeconfigSecret("edge"), ns);
    const renewed = await eventually("the Argo CD Secret carries the new client certificate", async () => {
      const s = await argoSecret();
      return s && tlsOf(s).certData !== tlsOf(first).certData ? s : undefined;
    }, 30_000);
    const kubeconfig = await cp.client.get<Secret>(SECRETS, kubeconfigSecret("edge"), ns);
    assert.ok(
      atob(kubeconfig!.data!.value!).includes(tlsOf(renewed).certData!),
      "the same certificate as the kubeconfig",
    );

    await cp.client.delete(KUBERNETES_CLUSTERS, "edge", ns);
    await eventually("the Argo CD Secret is deleted with the cluster", async () => (await argoSecret()) === undefined);
  } finally {
    await nico.stop();
    await nio.stop();
    await workloads.stop();
  }
});

Deno.test("the Argo CD Secret follows an endpoint move; a foreign Secret in its place is a Warning, not replaced", async () => {
  const cp = await env.get();
  const ns = await cp.namespace("argo-move");
  const argo = await cp.namespace("argocd");
  const nio = startSimNio(cp.client, { namespace: ns, applyDelayMs: 100 });
  const nico = startNico(cp.client, { namespace: ns, argoCdNamespace: argo });
  try {
    await cp.client.create(SECRETS, {
      metadata: { name: argoCdSecretName(ns, "taken"), namespace: argo },
      data: { server: btoa("https://someone.else.example:6443") },
    });
    await createMachines(cp.client, ns, ["cp-1", "cp-2"]);
    for (const [name, machine] of [["c", "cp-1"], ["taken", "cp-2"]] as const) {
      await cp.client.create(KUBERNETES_CLUSTERS, {
        metadata: { name, namespace: ns },
        spec: { controlPlane: { machines: [machine] } },
      });
    }
    const server = async () => {
      const s = await cp.client.get<Secret>(SECRETS, argoCdSecretName(ns, "c"), argo);
      return s?.data?.server ? atob(s.data.server) : undefined;
    };
    const old = await eventually("registered", server, 30_000);
    await cp.client.mergePatch(KUBERNETES_CLUSTERS, "c", ns, {
      spec: { controlPlaneEndpoint: { host: "127.0.0.2", port: 6443 } },
    });
    await eventually(
      "the Argo CD Secret names the new endpoint",
      async () => (await server()) === "https://127.0.0.2:6443",
    );
    assert.notEqual(old, "https://127.0.0.2:6443");
    assert.ok(await cp.client.get(NIXOS_CONFIGURATIONS, configName("c", "cp-1"), ns));

    const warning = await eventually("a Warning on the cluster whose Secret name is taken", async () => {
      const { items } = await cp.client.list<Ev>(EVENTS, { namespace: ns });
      return items.find((e) => e.reason === "ArgoCDRegistrationFailed" && e.regarding?.name === "taken");
    }, 30_000);
    assert.equal(warning.type, "Warning");
    assert.match(warning.note, /exists and is not NICO's for .*\/taken/);
    const foreign = await cp.client.get<Secret>(SECRETS, argoCdSecretName(ns, "taken"), argo);
    assert.equal(atob(foreign!.data!.server!), "https://someone.else.example:6443", "the foreign Secret is untouched");
  } finally {
    await nico.stop();
    await nio.stop();
  }
});
