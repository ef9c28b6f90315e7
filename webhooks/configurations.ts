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
