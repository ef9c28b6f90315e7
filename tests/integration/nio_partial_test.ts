/**
 * A half-installed NIO says so. On an API server that serves NIO v1's NixosConfiguration (v1's schema) but no
 * NixJob, `nico run` logs at start what is missing and how to install it, starts no informer for it (no 404 every
 * 30 s), becomes ready (its webhook answers) and judges clusters: a cluster reaches Ready with `NIOIncomplete`
 * naming the NixJob CRD. Without Machines or NixosConfigurations NICO can judge no cluster: each says
 * `NIONotInstalled` (Stalled), and nothing is written for it.
 */
import assert from "node:assert/strict";
import { parseAllDocuments, stringify } from "yaml";
import { KUBERNETES_CLUSTERS, type KubernetesCluster } from "../../crds/kubernetescluster.ts";
import { NIXOS_CONFIGURATIONS } from "../../core/contract/nio.ts";
import { review, servingCertificate } from "../../testing/admission.ts";
import { DEFAULT_CRDS } from "../../testing/envtest/controlplane.ts";
import { freePort } from "../../testing/envtest/process.ts";
import { eventually, ownControlPlane, sharedControlPlane } from "../../testing/helpers.ts";
import { createMachines, settled, startNico } from "../../testing/nico.ts";
import { startNicoProcess } from "../../testing/nico_process.ts";
import { startSimNio } from "../../testing/sim-nio.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

/** NIO's development CRDs without the NixJob CRD: a NIO v1 whose install stopped half way. */
async function withoutNixJobs(): Promise<string> {
  const docs = parseAllDocuments(await Deno.readTextFile(`${ROOT}testing/nio-crds.yaml`)).map((d) => d.toJSON())
    .filter((d) => d && d.metadata?.name !== "nixjobs.nio.homystack.com");
  const path = await Deno.makeTempFile({ suffix: ".yaml" });
  await Deno.writeTextFile(path, docs.map((d) => stringify(d)).join("---\n"));
  return path;
}

const crds = await withoutNixJobs();
const partial = ownControlPlane({ crds: [DEFAULT_CRDS[0]!, crds] });
const shared = sharedControlPlane();

Deno.test("NIO v1 without its NixJob CRD: NICO says so at start and on the cluster, and serves what it can", async () => {
  const cp = await partial.get();
  const ns = await cp.namespace("half");
  const nio = startSimNio(cp.client, { namespace: ns, applyDelayMs: 100, onError: () => {} });
  const certs = await servingCertificate();
  const [webhookPort, healthPort] = [freePort(), freePort()];
  const log = `${cp.dir}/nico-half.log`;
  const nico = startNicoProcess("nico-half", [
    `--kubeconfig=${cp.kubeconfigPath}`,
    "--identity=nico-half",
    `--lease-namespace=${ns}`,
    "--resolve-refs=false",
    "--workload-connections=false",
    "--webhook-cert-mode=cert-manager",
    `--webhook-cert-dir=${certs.dir}`,
    `--webhook-addr=127.0.0.1:${webhookPort}`,
    `--metrics-addr=127.0.0.1:${freePort()}`,
    `--health-addr=127.0.0.1:${healthPort}`,
    "--default-git-repo=https://git.example.test/flake.git",
  ], log);
  try {
    await eventually("/readyz", async () => {
      const res = await fetch(`http://127.0.0.1:${healthPort}/readyz`).catch(() => undefined);
      await res?.body?.cancel();
      return res?.status === 200;
    }, 60_000);
    assert.equal(await review(webhookPort, certs.caPem, ns), false, "the webhook judges a cluster");
    const started = await Deno.readTextFile(log);
    assert.match(started, /NIO is not fully installed/);
    assert.match(started, /no nixjobs\.nio\.homystack\.com \(the decommission runs NICO watches when a node leaves\)/);
    assert.match(started, /install\.yaml with `kubectl apply --server-side -f`/);

    await createMachines(cp.client, ns, ["cp-1", "w-1"]);
    await cp.client.create(KUBERNETES_CLUSTERS, {
      metadata: { name: "c", namespace: ns },
      spec: { controlPlane: { machines: ["cp-1"] }, dataPlane: { machines: ["w-1"] } },
    });
    const ready = await eventually("Ready, NIO's gap named on the cluster", async () => {
      const c = await cp.client.get<KubernetesCluster>(KUBERNETES_CLUSTERS, "c", ns);
      const gap = c?.status?.conditions?.find((x) => x.type === "NIOIncomplete");
      return c?.status?.phase === "Ready" && gap ? gap : undefined;
    }, 60_000);
    assert.deepEqual([ready.status, ready.reason], ["True", "ResourcesMissing"]);
    assert.match(ready.message, /no nixjobs\.nio\.homystack\.com .*; NICO goes on with what is served\. To fix it/);
    const text = await Deno.readTextFile(log);
    assert.doesNotMatch(text, /"informer":"nixjobs"/, "no informer asks for what is not served");
    assert.doesNotMatch(text, /"msg":"(list|watch) failed"/, "no informer fails");
  } finally {
    await nico.stop();
    await nio.stop();
    await Deno.remove(certs.dir, { recursive: true });
  }
});

Deno.test("without NixosConfigurations or Machines served, every cluster says NIONotInstalled and nothing is written", async () => {
  const cp = await shared.get();
  const ns = await cp.namespace("no-nio");
  // As if the API server served neither: NICO was told so at start (discovery is the real test's, above).
  const nico = startNico(cp.client, { namespace: ns, nioMissing: ["machines", "nixosconfigurations", "nixjobs"] });
  try {
    await createMachines(cp.client, ns, ["cp-1"]);
    await cp.client.create(KUBERNETES_CLUSTERS, {
      metadata: { name: "c", namespace: ns },
      spec: { controlPlane: { machines: ["cp-1"] } },
    });
    const c = await eventually("Stalled, NIONotInstalled", async () => {
      const c = await cp.client.get<KubernetesCluster>(KUBERNETES_CLUSTERS, "c", ns);
      const stalled = c?.status?.conditions?.find((x) => x.type === "Stalled" && x.status === "True");
      return stalled?.reason === "NIONotInstalled" ? c : undefined;
    }, 30_000);
    const ready = c.status!.conditions!.find((x) => x.type === "Ready")!;
    assert.deepEqual([ready.status, ready.reason], ["False", "NIONotInstalled"]);
    assert.match(ready.message, /serves no machines\.nio\.homystack\.com .*NICO changes nothing on any cluster/);
    await settled(cp.client, nico, ns, "c"); // one more pass: still nothing written
    const { items } = await cp.client.list(NIXOS_CONFIGURATIONS, { namespace: ns });
    assert.deepEqual(items, [], "no configuration is written for a cluster NICO cannot judge");
  } finally {
    await nico.stop();
  }
});
