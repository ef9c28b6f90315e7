/**
 * The ValidatingWebhookConfiguration and MutatingWebhookConfiguration that
 * send KubernetesCluster CREATE and UPDATE requests to NICO. Pure: one
 * function renders both objects.
 *
 * @module
 */
import { GROUP, VERSION } from "../crds/kubernetescluster.ts";
import type { KubeObject } from "../lib/kube/client.ts";
import { base64 } from "./admission.ts";
import { MUTATE_PATH, VALIDATE_PATH } from "./paths.ts";

/** Options of {@link webhookConfigurations}. */
export interface WebhookConfigOptions {
  /** `metadata.name` of both objects (default `nico`). */
  name?: string;
  /** In a cluster: the Service in front of every NICO replica. */
  service?: { namespace: string; name: string; port?: number };
  /** Outside a cluster (local runs, tests): the base URL, such as `https://127.0.0.1:9443`. */
  url?: string;
  /** NICO's own CA (PEM, one or more certificates), written as `caBundle`. */
  caBundlePem?: string;
  /** cert-manager mode: `namespace/certificate` for the `cert-manager.io/inject-ca-from` annotation. */
  injectCaFrom?: string;
  /** Seconds the API server waits for an answer (default 5). */
  timeoutSeconds?: number;
}

/** `clientConfig` of a webhook. */
export interface ClientConfig {
  service?: { namespace: string; name: string; path: string; port: number };
  url?: string;
  caBundle?: string;
}

/** One webhook entry. */
export interface WebhookEntry {
  name: string;
  admissionReviewVersions: string[];
  sideEffects: "None";
  timeoutSeconds: number;
  failurePolicy: "Fail";
  matchPolicy: "Equivalent";
  rules: {
    apiGroups: string[];
    apiVersions: string[];
    operations: string[];
    resources: string[];
    scope: "Namespaced";
  }[];
  clientConfig: ClientConfig;
  reinvocationPolicy?: "Never";
}

/** A ValidatingWebhookConfiguration or MutatingWebhookConfiguration. */
export interface WebhookConfiguration extends KubeObject {
  apiVersion: "admissionregistration.k8s.io/v1";
  kind: "ValidatingWebhookConfiguration" | "MutatingWebhookConfiguration";
  webhooks: WebhookEntry[];
}

/** Name of the validating webhook entry. */
export const VALIDATING_WEBHOOK_NAME = `validate.kubernetescluster.${GROUP}`;
/** Name of the mutating webhook entry. */
export const MUTATING_WEBHOOK_NAME = `default.kubernetescluster.${GROUP}`;

function clientConfig(opts: WebhookConfigOptions, path: string): ClientConfig {
  if (!opts.service === !opts.url) throw new Error("webhook configuration: give exactly one of service and url");
  const bundle = opts.caBundlePem ? { caBundle: base64(opts.caBundlePem) } : {};
  if (opts.service) {
    const { namespace, name, port } = opts.service;
    return { service: { namespace, name, path, port: port ?? 443 }, ...bundle };
  }
  return { url: `${opts.url!.replace(/\/+$/, "")}${path}`, ...bundle };
}

function entry(opts: WebhookConfigOptions, name: string, path: string): WebhookEntry {
  return {
    name,
    admissionReviewVersions: ["v1"],
    sideEffects: "None",
    timeoutSeconds: opts.timeoutSeconds ?? 5,
    failurePolicy: "Fail",
    matchPolicy: "Equivalent",
    rules: [{
      apiGroups: [GROUP],
      apiVersions: [VERSION],
      operations: ["CREATE", "UPDATE"],
      resources: ["kubernetesclusters"],
      scope: "Namespaced",
    }],
    clientConfig: clientConfig(opts, path),
  };
}

/** Both webhook configurations. */
export function webhookConfigurations(opts: WebhookConfigOptions): {
  validating: WebhookConfiguration;
  mutating: WebhookConfiguration;
} {
  const metadata = {
    name: opts.name ?? "nico",
    labels: { "app.kubernetes.io/name": "nico", "app.kubernetes.io/component": "webhook" },
    ...(opts.injectCaFrom ? { annotations: { "cert-manager.io/inject-ca-from": opts.injectCaFrom } } : {}),
  };
  return {
    validating: {
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: "ValidatingWebhookConfiguration",
      metadata: structuredClone(metadata),
      webhooks: [entry(opts, VALIDATING_WEBHOOK_NAME, VALIDATE_PATH)],
    },
    mutating: {
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: "MutatingWebhookConfiguration",
      metadata: structuredClone(metadata),
      webhooks: [{ ...entry(opts, MUTATING_WEBHOOK_NAME, MUTATE_PATH), reinvocationPolicy: "Never" }],
    },
  };
}

/** Where a webhook entry sends its reviews, without the CA bundle. */
const target = (c: ClientConfig | undefined) => JSON.stringify({ url: c?.url, service: c?.service });

/**
 * How NICO brings `existing` in line with `desired`: a JSON patch that sets
 * only the `caBundle` of its webhooks (the one change its ServiceAccount may
 * make: deploy/ ships a ValidatingAdmissionPolicy that refuses any other),
 * or `"apply"` when `existing` sends reviews elsewhere or lacks one of the
 * webhooks (a local run that moved its port; NICO then applies the whole
 * object with the credentials it has).
 *
 * @example
 * ```ts
 * import { caBundlePatch, webhookConfigurations } from "./configurations.ts";
 * const old = webhookConfigurations({ url: "https://127.0.0.1:9443" }).validating;
 * const next = webhookConfigurations({ url: "https://127.0.0.1:9443", caBundlePem: "CA" }).validating;
 * caBundlePatch(old, next).length; // 2: a test of the entry's name, then its caBundle
 * ```
 */
export function caBundlePatch(existing: WebhookConfiguration, desired: WebhookConfiguration): unknown[] | "apply" {
  const ops: unknown[] = [];
  for (const want of desired.webhooks) {
    const i = (existing.webhooks ?? []).findIndex((w) => w.name === want.name);
    const have = existing.webhooks?.[i];
    if (!have || target(have.clientConfig) !== target(want.clientConfig)) return "apply";
    const bundle = want.clientConfig.caBundle;
    if (bundle === undefined || have.clientConfig.caBundle === bundle) continue;
    ops.push({ op: "test", path: `/webhooks/${i}/name`, value: want.name });
    ops.push({ op: "add", path: `/webhooks/${i}/clientConfig/caBundle`, value: bundle });
  }
  return ops;
}
