/**
 * deploy/ on a real API server: the manifests are valid (server-side dry
 * run), and the RBAC they grant covers every call NICO makes: NICO runs as
 * the ServiceAccount (a client certificate for its user name) through a
 * whole cluster life, with leader election and its self-signed webhook.
 */
import assert from "node:assert/strict";
import type { KubernetesCluster } from "../crds/kubernetescluster.ts";
import { LEASES, MUTATING_WEBHOOKS, VALIDATING_WEBHOOKS } from "../lib/kube/resources.ts";
import { KUBERNETES_CLUSTERS } from "../crds/kubernetescluster.ts";
import { freePort, startGuarded } from "../testing/envtest/process.ts";
import { startSimNio } from "../testing/sim-nio.ts";
import { eventually, sharedControlPlane } from "../testing/helpers.ts";
import { createMachines } from "../testing/nico.ts";
import { generatedDeployFiles } from "../scripts/deploy.ts";
import type { Lease } from "../lib/leader.ts";
import type { WebhookConfiguration } from "../webhooks/configurations.ts";

const env = sharedControlPlane();
const ROOT = new URL("../", import.meta.url).pathname;

Deno.test("generated deploy files equal what the code renders (run `deno task crds`)", async () => {
  for (const [name, text] of Object.entries(generatedDeployFiles())) {
    assert.equal(await Deno.readTextFile(`${ROOT}deploy/base/${name}`), text, `deploy/base/${name} is stale`);
  }
});

Deno.test("deploy/ applies cleanly with a server-side dry run", async () => {
  const cp = await env.get();
  const ns = await cp.kubectl(["apply", "--server-side", "-f", `${ROOT}deploy/base/namespace.yaml`]);
  assert.equal(ns.code, 0, ns.stderr);
  const out = await cp.kubectl([
    "apply",
    "--server-side",
    "--force-conflicts",
    "--dry-run=server",
    "-k",
    `${ROOT}deploy/`,
  ]);
  assert.equal(out.code, 0, out.stderr);
  for (
    const kind of [
      "deployment.apps/nico",
      "clusterrole.rbac.authorization.k8s.io/nico",
      "service/nico-webhook",
      "validatingwebhookconfiguration.admissionregistration.k8s.io/nico",
    ]
  ) {
    assert.match(out.stdout, new RegExp(`${kind.replaceAll(".", "\\.")} serverside-applied \\(server dry run\\)`));
  }
  const overlay = await cp.kubectl(["kustomize", `${ROOT}deploy/cert-manager/`]);
  assert.equal(overlay.code, 0, overlay.stderr);
  assert.match(overlay.stdout, /cert-manager\.io\/inject-ca-from: nico-system\/nico-webhook/);
  assert.match(overlay.stdout, /NICO_WEBHOOK_CERT_MODE/);
});

Deno.test("NICO runs as its ServiceAccount: the RBAC in deploy/ covers every call", async () => {
  const cp = await env.get();
  for (const f of ["namespace.yaml", "rbac.yaml"]) {
    const r = await cp.kubectl(["apply", "--server-side", "-f", `${ROOT}deploy/base/${f}`]);
    assert.equal(r.code, 0, r.stderr);
  }
  const kubeconfig = await cp.userKubeconfig("system:serviceaccount:nico-system:nico", [
    "system:serviceaccounts",
    "system:serviceaccounts:nico-system",
  ]);
  const ns = await cp.namespace("rbac");
  const nio = startSimNio(cp.client, { namespace: ns, applyDelayMs: 100 });
  const webhookPort = freePort();
  const metricsPort = freePort();
  const log = `${cp.dir}/nico-rbac.log`;
  const nico = startGuarded("nico", Deno.execPath(), [
    "run",
    "--allow-all",
    `${ROOT}main.ts`,
    "run",
    `--kubeconfig=${kubeconfig}`,
    "--identity=nico-rbac-test",
    "--resolve-refs=false",
    "--lease-namespace=nico-system",
    `--webhook-addr=127.0.0.1:${webhookPort}`,
    `--webhook-url=https://127.0.0.1:${webhookPort}`,
    `--metrics-addr=127.0.0.1:${metricsPort}`,
    `--health-addr=127.0.0.1:${freePort()}`,
    "--default-git-repo=https://git.example.test/flake.git",
    "--log-level=debug",
  ], log);
  try {
    await eventually("webhook registered with a CA bundle", async () => {
      const v = await cp.client.get<WebhookConfiguration>(VALIDATING_WEBHOOKS, "nico");
      const m = await cp.client.get<WebhookConfiguration>(MUTATING_WEBHOOKS, "nico");
      return v?.webhooks[0]?.clientConfig.caBundle && m?.webhooks[0]?.clientConfig.caBundle;
    }, 60_000);
    await createMachines(cp.client, ns, ["cp-1", "w-1"]);
    // Through the webhook: gitRepo is defaulted on the way in.
    const created = await eventually(
      "cluster accepted by the webhook",
      () =>
        cp.client.create<KubernetesCluster>(KUBERNETES_CLUSTERS, {
          metadata: { name: "c", namespace: ns },
          spec: { controlPlane: { machines: ["cp-1"] }, dataPlane: { machines: ["w-1"] } },
        } as KubernetesCluster),
      30_000,
    );
    assert.equal(created.spec.gitRepo, "https://git.example.test/flake.git");
    await eventually("Ready", async () => {
      const c = await cp.client.get<KubernetesCluster>(KUBERNETES_CLUSTERS, "c", ns);
      return c?.status?.phase === "Ready";
    }, 60_000);
    const lease = await cp.client.get<Lease>(LEASES, "nico-leader", "nico-system");
    assert.equal(lease?.spec?.holderIdentity, "nico-rbac-test");
    const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    for (
      const name of [
        "controller_runtime_reconcile_total",
        "workqueue_depth",
        "workqueue_adds_total",
        "nico_clusters",
        "nico_webhook_requests_total",
      ]
    ) {
      assert.match(metrics, new RegExp(`^${name}`, "m"), `metric ${name} missing`);
    }
    assert.match(metrics, /nico_clusters\{phase="Ready"\} 1/);
    await cp.client.delete(KUBERNETES_CLUSTERS, "c", ns);
    await eventually("deleted", async () => (await cp.client.get(KUBERNETES_CLUSTERS, "c", ns)) === undefined, 30_000);

    // SIGTERM: finish, release the lease, exit 0.
    await nico.kill("SIGTERM");
    const status = await nico.exited;
    assert.equal(status.code, 0, await nico.tail(20));
    const released = await cp.client.get<Lease>(LEASES, "nico-leader", "nico-system");
    assert.equal(released?.spec?.holderIdentity ?? "", "", "the lease is released on SIGTERM");
    const text = await Deno.readTextFile(log);
    assert.doesNotMatch(
      text,
      /forbidden|Forbidden/,
      `NICO hit an RBAC refusal:\n${text.split("\n").filter((l) => /orbidden/.test(l)).slice(0, 5).join("\n")}`,
    );
  } finally {
    await nico.stop();
    await nio.stop();
    await cp.client.delete(VALIDATING_WEBHOOKS, "nico");
    await cp.client.delete(MUTATING_WEBHOOKS, "nico");
  }
});

Deno.test("stop the shared control plane", async () => {
  await env.stop();
});
