/**
 * The RBAC in deploy/ on a real API server, for both install variants:
 * NICO runs as its ServiceAccount through a whole cluster life (leader
 * election, its self-signed webhook, Secrets, Events) and hits no refusal;
 * and, as that ServiceAccount, the test shows what it can no longer do.
 */
import { startNicoProcess } from "../../testing/nico_process.ts";
import assert from "node:assert/strict";
import { KUBERNETES_CLUSTERS, type KubernetesCluster } from "../../crds/kubernetescluster.ts";
import { KubeClient, type KubeObject } from "../../lib/kube/client.ts";
import { ApiError } from "../../lib/kube/errors.ts";
import { LEASES, MUTATING_WEBHOOKS, SECRETS, VALIDATING_WEBHOOKS } from "../../lib/kube/resources.ts";
import { freePort } from "../../testing/envtest/process.ts";
import { eventually, ownControlPlane } from "../../testing/helpers.ts";
import { createMachines, machinesDiscovered } from "../../testing/nico.ts";
import { world } from "../../testing/world.ts";
import { applyRbac, serviceAccountKubeconfig, type Variant, VARIANTS } from "../../testing/deploy.ts";
import type { Lease } from "../../lib/leader.ts";
import { type WebhookConfiguration, webhookConfigurations } from "../../webhooks/configurations.ts";

/** deploy/'s cluster-wide RBAC, webhooks and the nico-system namespace, and NICO watching every namespace: a control plane of its own. */
const env = ownControlPlane({});

/** What NICO runs through as its ServiceAccount: create, Ready, metrics, delete, SIGTERM. */
async function clusterLife(variant: Variant): Promise<void> {
  const cp = await env.get();
  await applyRbac(cp, variant);
  const kubeconfig = await serviceAccountKubeconfig(cp);
  const namespace = VARIANTS[variant].namespace;
  await using w = await world("rbac", { cp, namespace, nio: { applyDelayMs: 100 }, nico: false });
  const { ns } = w;
  const webhookPort = freePort();
  const metricsPort = freePort();
  // NICO may not create webhook configurations: deploy/ ships them, here in their local (URL) form.
  const { validating, mutating } = webhookConfigurations({ url: `https://127.0.0.1:${webhookPort}` });
  await cp.client.apply(VALIDATING_WEBHOOKS, validating);
  await cp.client.apply(MUTATING_WEBHOOKS, mutating);
  const log = `${cp.dir}/nico-rbac-${variant}.log`;
  const nico = startNicoProcess(
    "nico",
    [
      `--kubeconfig=${kubeconfig}`,
      "--identity=nico-rbac-test",
      "--resolve-refs=false",
      // No workload API servers here: NICO would wait for Nodes that never register.
      "--workload-connections=false",
      "--lease-namespace=nico-system",
      ...(VARIANTS[variant].namespace ? [`--namespace=${VARIANTS[variant].namespace}`] : []),
      `--webhook-addr=127.0.0.1:${webhookPort}`,
      `--webhook-url=https://127.0.0.1:${webhookPort}`,
      `--metrics-addr=127.0.0.1:${metricsPort}`,
      `--health-addr=127.0.0.1:${freePort()}`,
      "--default-git-repo=https://git.example.test/flake.git",
      "--log-level=debug",
    ],
    log,
  );
  w.defer(async () => {
    await nico.stop();
    await cp.client.delete(VALIDATING_WEBHOOKS, "nico");
    await cp.client.delete(MUTATING_WEBHOOKS, "nico");
  });
  await eventually("webhook configurations carry NICO's CA bundle", async () => {
    const v = await cp.client.get<WebhookConfiguration>(VALIDATING_WEBHOOKS, "nico");
    const m = await cp.client.get<WebhookConfiguration>(MUTATING_WEBHOOKS, "nico");
    return v?.webhooks[0]?.clientConfig.caBundle && m?.webhooks[0]?.clientConfig.caBundle;
  }, 60_000);
  await createMachines(cp.client, ns, ["cp-1", "w-1"]);
  await machinesDiscovered(cp.client, ns, ["cp-1", "w-1"]);
  const created = await eventually(
    "cluster accepted by the webhook",
    () =>
      cp.client.create<KubernetesCluster>(KUBERNETES_CLUSTERS, {
        metadata: { name: "c", namespace: ns },
        spec: { controlPlane: { machines: ["cp-1"] }, dataPlane: { machines: ["w-1"] } },
      } as KubernetesCluster),
    30_000,
  );
  assert.equal(created.spec.gitRepo, "https://git.example.test/flake.git", "defaulted by the webhook");
  await eventually("Ready", async () => {
    const c = await cp.client.get<KubernetesCluster>(KUBERNETES_CLUSTERS, "c", ns);
    return c?.status?.phase === "Ready";
  }, 60_000);
  const lease = await cp.client.get<Lease>(LEASES, "nico-leader", "nico-system");
  assert.equal(lease?.spec?.holderIdentity, "nico-rbac-test");
  const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  assert.match(metrics, /nico_clusters\{phase="Ready"\} 1/);
  await cp.client.delete(KUBERNETES_CLUSTERS, "c", ns);
  await eventually("deleted", async () => (await cp.client.get(KUBERNETES_CLUSTERS, "c", ns)) === undefined, 30_000);

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
}

/** Answers "allowed" or "refused" (403); any other failure fails the test. */
async function outcome(call: () => Promise<unknown>): Promise<"allowed" | "refused"> {
  try {
    await call();
    return "allowed";
  } catch (err) {
    if (err instanceof ApiError && err.status === 403) return "refused";
    if (err instanceof ApiError && err.status === 404) return "allowed";
    throw err;
  }
}

/** A webhook configuration that would see every Pod and Secret write. */
function foreignWebhook(name: string): KubeObject {
  return {
    metadata: { name },
    webhooks: [{
      name: "all.evil.example.test",
      admissionReviewVersions: ["v1"],
      sideEffects: "None",
      failurePolicy: "Ignore",
      clientConfig: { url: "https://127.0.0.1:1/steal" },
      rules: [{
        apiGroups: [""],
        apiVersions: ["v1"],
        operations: ["CREATE", "UPDATE"],
        resources: ["pods", "secrets"],
      }],
    }],
  } as KubeObject;
}

/** Each probe as the ServiceAccount, and what the variant must answer. */
async function probes(variant: Variant): Promise<void> {
  const cp = await env.get();
  await applyRbac(cp, variant);
  const sa = KubeClient.load(await serviceAccountKubeconfig(cp), { fieldManager: "nico" });
  const bank = "bank";
  await cp.kubectl(["create", "namespace", bank]).catch(() => {});
  await cp.client.apply(SECRETS, {
    metadata: { name: "db-password", namespace: bank },
    stringData: { password: "hunter2" },
  } as KubeObject);
  const other = (r: typeof VALIDATING_WEBHOOKS) => cp.client.apply(r, foreignWebhook("other"));
  await other(VALIDATING_WEBHOOKS);
  await other(MUTATING_WEBHOOKS);
  await cp.client.apply(LEASES, { metadata: { name: "other", namespace: "nico-system" } } as KubeObject);
  const namespaced = variant === "namespaced";
  const table: [string, () => Promise<unknown>, "allowed" | "refused"][] = [
    [
      "create a foreign ValidatingWebhookConfiguration",
      () => sa.create(VALIDATING_WEBHOOKS, foreignWebhook("evil")),
      "refused",
    ],
    [
      "create a foreign MutatingWebhookConfiguration",
      () => sa.create(MUTATING_WEBHOOKS, foreignWebhook("evil")),
      "refused",
    ],
    [
      "patch another webhook configuration",
      () => sa.mergePatch(VALIDATING_WEBHOOKS, "other", undefined, { metadata: { labels: { x: "y" } } }),
      "refused",
    ],
    ["read another webhook configuration", () => sa.get(MUTATING_WEBHOOKS, "other"), "refused"],
    ["delete its own webhook configuration", () => sa.delete(VALIDATING_WEBHOOKS, "nico"), "refused"],
    ["read its own webhook configuration", () => sa.get(VALIDATING_WEBHOOKS, "nico"), "allowed"],
    [
      "update another Lease in nico-system",
      async () => {
        const lease = (await cp.client.get<Lease>(LEASES, "other", "nico-system"))!;
        return await sa.replace(LEASES, { ...lease, spec: { holderIdentity: "x" } });
      },
      "refused",
    ],
    ["read its own Lease", () => sa.get(LEASES, "nico-leader", "nico-system"), "allowed"],
    ["read its webhook certificate Secret", () => sa.get(SECRETS, "nico-webhook-tls", "nico-system"), "allowed"],
    [
      "read an unrelated Secret (bank/db-password)",
      () => sa.get(SECRETS, "db-password", bank),
      namespaced ? "refused" : "allowed",
    ],
    ["list Secrets in every namespace", () => sa.list(SECRETS), namespaced ? "refused" : "allowed"],
    ["read Secrets in the clusters' namespace", () => sa.list(SECRETS, { namespace: "clusters" }), "allowed"],
    [
      "create a ClusterRoleBinding",
      () =>
        sa.request("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
          body: {
            metadata: { name: "x" },
            roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "cluster-admin" },
            subjects: [],
          },
        }),
      "refused",
    ],
  ];
  const lines: string[] = [];
  const wrong: string[] = [];
  for (const [what, call, want] of table) {
    const got = await outcome(call);
    lines.push(`  ${got.padEnd(8)} ${what}`);
    if (got !== want) wrong.push(`${what}: ${got}, expected ${want}`);
  }
  console.log(`as ${variant} NICO:\n${lines.join("\n")}`);
  await sa.close();
  assert.deepEqual(wrong, []);
}

Deno.test("cluster-wide install: NICO runs as its ServiceAccount, the RBAC covers every call", () =>
  clusterLife("cluster-wide"));
Deno.test("cluster-wide install: what the ServiceAccount cannot do", () => probes("cluster-wide"));
Deno.test("namespaced install: NICO runs as its ServiceAccount, the RBAC covers every call", () =>
  clusterLife("namespaced"));
Deno.test("namespaced install: what the ServiceAccount cannot do (other namespaces' Secrets included)", () =>
  probes("namespaced"));
