/**
 * The admission webhook of `nico run`: served by every replica, whatever its shard, reading the caches.
 *
 * @module
 */
import type { KubernetesCluster } from "../crds/kubernetescluster.ts";
import type { KubeClient } from "../lib/kube/client.ts";
import type { Metrics } from "../lib/metrics.ts";
import type { Logger } from "../lib/runtime/log.ts";
import type { Informer } from "../lib/runtime/informer.ts";
import { parseHostPolicy } from "../lib/git/hosts.ts";
import type { ClusterInformers } from "../controllers/cluster/reconciler.ts";
import { serviceDnsNames } from "../webhooks/certificates.ts";
import { webhookApp } from "../webhooks/app.ts";
import { type AdmissionLookup, informerLookup, unionCache } from "../webhooks/lookup.ts";
import { parseNamespaceShards } from "../core/contract/shards.ts";
import { subjectAccessReviews } from "../webhooks/authorize.ts";
import { startWebhookServer, type WebhookServer } from "../webhooks/server.ts";
import { fileTls, secretTls } from "../webhooks/tls.ts";
import { listenOn, type RunOptions } from "./options.ts";

/** Names the webhook's serving certificate covers: the Service's, or the host of --webhook-url. */
export function webhookNames(
  o: Pick<RunOptions, "webhookUrl" | "webhookService" | "leaseNamespace">,
): { dnsNames: string[]; ipAddresses: string[] } {
  if (!o.webhookUrl) return { dnsNames: serviceDnsNames(o.webhookService, o.leaseNamespace), ipAddresses: [] };
  const host = new URL(o.webhookUrl).hostname.replace(/^\[|\]$/g, "");
  const isIp = /^[\d.]+$/.test(host) || host.includes(":");
  return isIp ? { dnsNames: [], ipAddresses: [host] } : { dnsNames: [host], ipAddresses: [] };
}

/** The admission webhook on this replica, counted in the metrics; resolves once it serves. */
/** Admission's reads from the caches; a NIO resource the API server does not serve has no objects to read. */
function servedLookup(
  informers: ClusterInformers,
  allClusters: Informer<KubernetesCluster>,
  served: readonly Informer[],
): AdmissionLookup {
  // Every cluster, whatever its shard: a Machine one shard's cluster names is not free for another's.
  // And every configuration: the shard's own in full, the others' trimmed to their owner and target.
  const configs = informers.others ? unionCache(informers.configs, informers.others) : informers.configs;
  const lookup = informerLookup({ machines: informers.machines, configs, clusters: allClusters });
  const has = (i: { resource: unknown }) => served.some((s) => s.resource === i.resource);
  const none = () => [];
  return {
    ...lookup,
    ...(has(informers.machines)
      ? {}
      : { machine: () => undefined, claimedMachines: none, unclaimedMachines: none, machinesAt: none }),
    ...(has(informers.configs) ? {} : { configurationsOf: none, ownedConfigurations: none }),
  };
}

export async function startWebhook(
  o: RunOptions,
  client: KubeClient,
  informers: ClusterInformers,
  allClusters: Informer<KubernetesCluster>,
  served: readonly Informer[],
  metrics: Metrics,
  log: Logger,
  signal: AbortSignal,
): Promise<WebhookServer> {
  const app = webhookApp({
    lookup: servedLookup(informers, allClusters, served),
    access: subjectAccessReviews(client),
    gitAllowedHosts: parseHostPolicy(o.gitAllowedHosts),
    namespaceShards: parseNamespaceShards(o.namespaceShards),
    ...(o.defaultGitRepo ? { defaultGitRepo: o.defaultGitRepo } : {}),
    metrics,
    log,
  });
  const tls = o.webhookCertMode === "cert-manager"
    ? fileTls(`${o.webhookCertDir}/tls.crt`, `${o.webhookCertDir}/tls.key`)
    : secretTls(client, o.leaseNamespace);
  const clientCaPem = o.webhookClientCa ? await Deno.readTextFile(o.webhookClientCa) : undefined;
  const server = await startWebhookServer({
    app,
    ...listenOn(o.webhookAddr),
    tls,
    ...(clientCaPem ? { clientCaPem } : {}),
    log,
    signal,
  });
  log.info("webhook serving", {
    address: `${server.hostname}:${server.port}`,
    certificates: o.webhookCertMode,
    clientCertificates: clientCaPem ? "required" : "not asked",
  });
  return server;
}
