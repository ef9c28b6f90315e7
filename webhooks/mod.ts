/**
 * NICO's admission webhook for KubernetesClusters.
 *
 * Every replica serves it (not only the leader): run NICO's informers for
 * Machines, NixosConfigurations and clusters, build the app with
 * {@link webhookApp} over {@link informerLookup}, and serve it with
 * {@link startWebhookServer}. The leader alone keeps the certificates with
 * {@link runWebhookCertificates} (NICO's own CA) — or cert-manager does, with
 * {@link fileTls} and `injectCaFrom`.
 *
 * @example
 * ```ts
 * const app = webhookApp({ lookup: informerLookup(informers), access: subjectAccessReviews(client), defaultGitRepo });
 * const server = await startWebhookServer({ app, port: 9443, tls: secretTls(client, "nico-system") });
 * ```
 * @module
 */
export * from "./admission.ts";
export * from "./app.ts";
export * from "./authorize.ts";
export * from "./certificates.ts";
export * from "./configurations.ts";
export * from "./defaults.ts";
export * from "./lookup.ts";
export * from "./machine_rules.ts";
export * from "./paths.ts";
export * from "./server.ts";
export * from "./spec_rules.ts";
export * from "./tls.ts";
export * from "./update_rules.ts";
export * from "./validate.ts";
