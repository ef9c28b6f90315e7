/**
 * NICO's own webhook PKI, for clusters without cert-manager: a long-lived
 * CA and a serving certificate in one Secret (`tls.crt`, `tls.key`,
 * `ca.crt`, plus `ca.key` to renew), and the CA bundle written into both
 * webhook configurations. Only the leader calls this; every replica reads
 * the Secret through `secretTls`.
 *
 * Renewal keeps the API server's trust unbroken: the serving certificate is
 * reissued by the same CA, and a CA near its end is replaced while the old
 * one stays in `ca.crt` (and so in the bundle) until it expires.
 *
 * @module
 */
import type { KubeClient } from "../lib/kube/client.ts";
import { MUTATING_WEBHOOKS, type Resource, SECRETS, VALIDATING_WEBHOOKS } from "../lib/kube/resources.ts";
import { certInfo, createCa, issueCert, type KeyPair, signedBy } from "../lib/pki.ts";
import { errorMessage, type Logger, silentLogger } from "../lib/runtime/log.ts";
import { sleep } from "../lib/runtime/sleep.ts";
import { base64 } from "./admission.ts";
import {
  caBundlePatch,
  type WebhookConfigOptions,
  type WebhookConfiguration,
  webhookConfigurations,
} from "./configurations.ts";
import { secretText, type TlsSecret, WEBHOOK_SECRET } from "./tls.ts";

const DAY_MS = 24 * 60 * 60 * 1000;

/** Options of {@link reconcileWebhookCertificates}. */
export interface WebhookCertificateOptions {
  client: KubeClient;
  /** NICO's own namespace, where the Secret lives. */
  namespace: string;
  /** Name of the Secret (default `nico-webhook-tls`). */
  secretName?: string;
  /** DNS names the serving certificate covers: for a Service `svc`, `svc.<ns>.svc` and friends. */
  dnsNames?: string[];
  /** IP addresses it covers (such as `127.0.0.1` for local runs). */
  ipAddresses?: string[];
  /** How to render the webhook configurations; the CA bundle is added here. */
  webhook: WebhookConfigOptions;
  /** Validity of the serving certificate in days (default 365). */
  validityDays?: number;
  /** Validity of the CA in days (default 3650). */
  caValidityDays?: number;
  /** Renew this many days before expiry (default 30). */
  renewBeforeDays?: number;
  now?: Date;
  log?: Logger;
  /**
   * Awaited after the Secret is written and before the configurations are
   * applied, so a fail-closed webhook is registered only once this replica
   * serves the certificate (`nico run` waits for its own listener).
   */
  beforeRegister?: () => Promise<void>;
}

/** What a reconcile did. */
export interface WebhookCertificateResult {
  /** A new serving certificate was issued. */
  issued: boolean;
  /** A new CA was created. */
  caCreated: boolean;
  /** When the serving certificate expires. */
  notAfter: Date;
  /** The CA bundle (PEM) now in both configurations. */
  caBundlePem: string;
}

/** The DNS names of a Service, as the API server may address it. */
export function serviceDnsNames(name: string, namespace: string): string[] {
  return [name, `${name}.${namespace}`, `${name}.${namespace}.svc`, `${name}.${namespace}.svc.cluster.local`];
}

/** The certificates of a PEM bundle, in order. */
function splitPem(bundle: string): string[] {
  return bundle.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----\n?/g)?.map((s) =>
    s.trimEnd() + "\n"
  ) ?? [];
}

function coversNames(certPem: string, dns: string[], ips: string[]): boolean {
  const info = certInfo(certPem);
  return dns.every((d) => info.dnsNames.includes(d)) && ips.every((ip) => info.ipAddresses.includes(ip));
}

/** The CA to sign with: the stored one while it has time left, else a new one (the old stays in the bundle). */
async function ensureCa(
  stored: { cert?: string | undefined; key?: string | undefined; bundle: string[] },
  renewBefore: number,
  opts: WebhookCertificateOptions,
  now: Date,
): Promise<{ ca: KeyPair; bundle: string[]; created: boolean }> {
  if (stored.cert && stored.key && certInfo(stored.cert).notAfter.getTime() - now.getTime() > renewBefore) {
    return { ca: { certPem: stored.cert, keyPem: stored.key }, bundle: stored.bundle, created: false };
  }
  const ca = await createCa({ commonName: "nico-webhook-ca", days: opts.caValidityDays ?? 3650, now });
  const stillValid = stored.bundle.filter((c) => certInfo(c).notAfter.getTime() > now.getTime());
  return { ca, bundle: [...splitPem(ca.certPem), ...stillValid], created: true };
}

/** Writes the CA bundle into a webhook configuration: only the bundle when it exists (see {@link caBundlePatch}). */
async function register(client: KubeClient, r: Resource, desired: WebhookConfiguration): Promise<void> {
  const existing = await client.get<WebhookConfiguration>(r, desired.metadata.name);
  const patch = existing ? caBundlePatch(existing, desired) : "apply";
  if (patch === "apply") await client.apply(r, desired);
  else if (patch.length) await client.jsonPatch(r, desired.metadata.name, undefined, patch);
}

/** Makes sure the Secret holds a valid serving certificate and both configurations trust its CA. */
export async function reconcileWebhookCertificates(opts: WebhookCertificateOptions): Promise<WebhookCertificateResult> {
  const { client, namespace } = opts;
  const log = opts.log ?? silentLogger;
  const name = opts.secretName ?? WEBHOOK_SECRET;
  const now = opts.now ?? new Date();
  const renewBefore = (opts.renewBeforeDays ?? 30) * DAY_MS;
  const dnsNames = opts.dnsNames ?? [];
  const ipAddresses = opts.ipAddresses ?? [];

  const secret = await client.get<TlsSecret>(SECRETS, name, namespace);
  const storedBundle = splitPem(secretText(secret, "ca.crt") ?? "");
  const { ca, bundle, created: caCreated } = await ensureCa(
    { cert: storedBundle[0], key: secretText(secret, "ca.key"), bundle: storedBundle },
    renewBefore,
    opts,
    now,
  );

  let serving: KeyPair | undefined;
  const cert = secretText(secret, "tls.crt");
  const key = secretText(secret, "tls.key");
  if (
    !caCreated && cert && key && await signedBy(cert, ca.certPem) &&
    certInfo(cert).notAfter.getTime() - now.getTime() > renewBefore && coversNames(cert, dnsNames, ipAddresses)
  ) {
    serving = { certPem: cert, keyPem: key };
  }
  const issued = serving === undefined;
  if (!serving) {
    serving = await issueCert(ca, {
      commonName: dnsNames[0] ?? ipAddresses[0] ?? "nico-webhook",
      dnsNames,
      ipAddresses,
      usage: "server",
      days: opts.validityDays ?? 365,
      now,
    });
  }
  const caBundlePem = bundle.join("");

  if (issued) {
    const body: TlsSecret = {
      apiVersion: "v1",
      kind: "Secret",
      metadata: {
        name,
        namespace,
        labels: { "app.kubernetes.io/name": "nico", "app.kubernetes.io/component": "webhook" },
        ...(secret?.metadata.resourceVersion ? { resourceVersion: secret.metadata.resourceVersion } : {}),
      },
      type: "kubernetes.io/tls",
      data: {
        "tls.crt": base64(serving.certPem),
        "tls.key": base64(serving.keyPem),
        "ca.crt": base64(caBundlePem),
        "ca.key": base64(ca.keyPem),
      },
    };
    // Version-checked: two leaders in a handover cannot both win.
    if (secret) await client.replace(SECRETS, body);
    else await client.create(SECRETS, body);
    log.info("webhook certificate issued", {
      secret: `${namespace}/${name}`,
      caCreated,
      notAfter: certInfo(serving.certPem).notAfter.toISOString(),
    });
  }

  await opts.beforeRegister?.();
  const { validating, mutating } = webhookConfigurations({ ...opts.webhook, caBundlePem });
  await register(client, VALIDATING_WEBHOOKS, validating);
  await register(client, MUTATING_WEBHOOKS, mutating);
  return { issued, caCreated, notAfter: certInfo(serving.certPem).notAfter, caBundlePem };
}

/** Options of {@link runWebhookCertificates}. */
export interface RunWebhookCertificateOptions extends WebhookCertificateOptions {
  /** Whether this replica leads; only the leader writes. */
  leader: () => boolean;
  /** Time between checks (default 1 h). */
  intervalMs?: number;
  /** How often `leader()` is asked while not leading (default 1 s: a new leader issues at once). */
  leaderPollMs?: number;
  signal: AbortSignal;
}

/**
 * Keeps the webhook certificates current while `leader()` is true, until
 * `signal` aborts. A replica that becomes leader reconciles within
 * `leaderPollMs`; a failure is retried after 1 s, doubling up to 30 s.
 */
export async function runWebhookCertificates(opts: RunWebhookCertificateOptions): Promise<void> {
  const log = opts.log ?? silentLogger;
  const every = opts.intervalMs ?? 60 * 60_000;
  const poll = opts.leaderPollMs ?? 1_000;
  let failures = 0;
  let due = 0;
  let wasLeader = false;
  while (!opts.signal.aborted) {
    const leading = opts.leader();
    if (leading && (!wasLeader || Date.now() >= due)) {
      try {
        await reconcileWebhookCertificates({ ...opts, now: new Date() });
        failures = 0;
        due = Date.now() + every;
      } catch (err) {
        failures++;
        due = Date.now() + Math.min(1_000 * 2 ** (failures - 1), 30_000);
        log.error("webhook certificate reconcile failed", { error: errorMessage(err) });
      }
    }
    wasLeader = leading;
    await sleep(Math.max(0, Math.min(poll, due - Date.now())) || poll, opts.signal);
  }
}
