// deno-lint-ignore-file no-explicit-any
/**
 * What the admission webhook's API tests share (tests/integration/webhook_*api_test.ts): a control plane of the
 * file's own with the webhook server on loopback TLS behind it, reading NICO's informers as in production, and
 * ways to apply clusters and Machines through it.
 */
import type { KubernetesCluster } from "../crds/kubernetescluster.ts";
import type { KubeClient } from "../lib/kube/client.ts";
import { MUTATING_WEBHOOKS, VALIDATING_WEBHOOKS } from "../lib/kube/resources.ts";
import { KUBERNETES_CLUSTERS } from "../crds/kubernetescluster.ts";
import { MACHINES, NIXOS_CONFIGURATIONS } from "../core/contract/nio.ts";
import type { Machine, NixosConfiguration } from "../core/contract/nio.ts";
import { createCa, issueCert } from "../lib/pki.ts";
import { Informer } from "../lib/runtime/informer.ts";
import { silentLogger } from "../lib/runtime/log.ts";
import { webhookApp } from "../webhooks/app.ts";
import { subjectAccessReviews } from "../webhooks/authorize.ts";
import { webhookConfigurations } from "../webhooks/configurations.ts";
import { informerLookup, type LookupInformers } from "../webhooks/lookup.ts";
import { startWebhookServer, type WebhookServer } from "../webhooks/server.ts";
import type { ControlPlane } from "../testing/envtest/controlplane.ts";
import { eventually, ownControlPlane } from "../testing/helpers.ts";
import { createMachines } from "../testing/nico.ts";

/** Its webhook configurations are cluster-wide (every KubernetesCluster write goes through them): a control plane of each file's own. */
const env = ownControlPlane({});
export const DEFAULT_REPO = "https://git.example.test/default-flake.git";
const CONFIG_NAME = "nico-test";

export interface Fixture {
  cp: ControlPlane;
  client: KubeClient;
  informers: LookupInformers;
  server: WebhookServer;
}

let fixture: Promise<Fixture> | undefined;

/** Informers, the webhook server on loopback TLS, and both configurations pointing at it by URL. */
export function setup(): Promise<Fixture> {
  fixture ??= (async () => {
    const cp = await env.get();
    const client = cp.client;
    const opts = { logger: silentLogger, resyncMs: 0 };
    const informers: LookupInformers = {
      machines: new Informer<Machine>(client, MACHINES, opts),
      configs: new Informer<NixosConfiguration>(client, NIXOS_CONFIGURATIONS, opts),
      clusters: new Informer<KubernetesCluster>(client, KUBERNETES_CLUSTERS, opts),
    };
    for (const i of Object.values(informers)) i.start();
    await Promise.all(Object.values(informers).map((i) => i.synced()));

    const ca = await createCa({ commonName: "webhook-test-ca" });
    const serving = await issueCert(ca, {
      commonName: "127.0.0.1",
      ipAddresses: ["127.0.0.1"],
      usage: "server",
      days: 1,
    });
    const app = webhookApp({
      lookup: informerLookup(informers),
      access: subjectAccessReviews(client),
      defaultGitRepo: DEFAULT_REPO,
    });
    const server = await startWebhookServer({ app, hostname: "127.0.0.1", port: 0, tls: serving });
    const { validating, mutating } = webhookConfigurations({
      name: CONFIG_NAME,
      url: `https://127.0.0.1:${server.port}`,
      caBundlePem: ca.certPem,
    });
    await client.apply(VALIDATING_WEBHOOKS, validating);
    await client.apply(MUTATING_WEBHOOKS, mutating);

    // The API server picks webhook configurations up asynchronously: wait until ours answers.
    const probeNs = await cp.namespace("probe");
    await eventually(
      "the webhook to be called",
      async () => {
        const r = await apply(cp, clusterJson(probeNs, "probe", { controlPlane: { machines: ["nowhere"] } }), [
          "--dry-run=server",
        ]);
        return r.code !== 0 && r.stderr.includes("Machine nowhere does not exist");
      },
      30_000,
      250,
    );
    return { cp, client, informers, server };
  })();
  return fixture;
}

export function clusterJson(ns: string, name: string, spec: unknown): string {
  return JSON.stringify({
    apiVersion: "nico.homystack.com/v1alpha1",
    kind: "KubernetesCluster",
    metadata: { name, namespace: ns },
    spec,
  });
}

export function apply(cp: ControlPlane, json: string, extra: string[] = []) {
  return cp.kubectl(["apply", "-f", "-", ...extra], { stdin: json });
}

/** Creates Machines and marks the given ones discoverable; waits until the informer has seen it all. */
export async function machines(
  f: Fixture,
  ns: string,
  names: string[],
  discoverable: string[] = names,
  status: Record<string, unknown> = {},
) {
  await createMachines(f.client, ns, names, { role: "cp" });
  for (const n of names) {
    const s = { discoverable: discoverable.includes(n), ...(status[n] as object ?? {}) };
    await f.client.mergePatch(MACHINES, n, ns, { status: s }, "status");
  }
  await eventually("the informer to see the Machines", () =>
    names.every((n) => {
      const m = f.informers.machines.get(ns, n);
      return m?.status?.discoverable === discoverable.includes(n) &&
        Object.entries((status[n] ?? {}) as Record<string, unknown>).every(([k, v]) => (m.status as any)?.[k] === v);
    }));
}

export async function getCluster(f: Fixture, ns: string, name: string): Promise<any> {
  return await f.client.get<any>(KUBERNETES_CLUSTERS, name, ns);
}
