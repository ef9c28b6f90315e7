/**
 * Where the webhook's serving certificate comes from: NICO's own Secret
 * (written by the leader, read by every replica), or files mounted by
 * cert-manager or a Secret volume.
 *
 * @module
 */
import { decodeBase64 } from "../lib/encoding.ts";
import type { Secret } from "../lib/kube/meta.ts";
import type { KubeClient } from "../lib/kube/client.ts";
import { SECRETS } from "../lib/kube/resources.ts";
import type { KeyPair } from "../lib/pki.ts";

/** A source of the serving certificate, asked again on every reload. */
export interface TlsProvider {
  /** The current certificate chain and key, PEM. */
  load(): Promise<KeyPair>;
  /** Where it comes from, for logs. */
  describe(): string;
}

/** The Secret holding the webhook's certificates: `kubernetes.io/tls` plus `ca.crt` and `ca.key`. */
export type TlsSecret = Secret;

/** Default name of NICO's webhook Secret. */
export const WEBHOOK_SECRET = "nico-webhook-tls";

/** Decodes one base64 `data` entry of a Secret (PEM is ASCII). */
export function secretText(secret: TlsSecret | undefined, key: string): string | undefined {
  const b64 = secret?.data?.[key];
  if (!b64) return undefined;
  return decodeBase64(b64);
}

/** A fixed certificate. */
export function staticTls(pair: KeyPair): TlsProvider {
  return { load: () => Promise.resolve(pair), describe: () => "a fixed certificate" };
}

/** Certificate and key files, such as a cert-manager Secret mounted as a volume. */
export function fileTls(certFile: string, keyFile: string): TlsProvider {
  return {
    load: async () => ({ certPem: await Deno.readTextFile(certFile), keyPem: await Deno.readTextFile(keyFile) }),
    describe: () => `files ${certFile} and ${keyFile}`,
  };
}

/** `tls.crt` and `tls.key` of a Secret, read with a GET on every load (never logged). */
export function secretTls(client: KubeClient, namespace: string, name = WEBHOOK_SECRET): TlsProvider {
  const where = `Secret ${namespace}/${name}`;
  return {
    async load() {
      const secret = await client.get<TlsSecret>(SECRETS, name, namespace);
      if (!secret) throw new Error(`${where} does not exist yet; the leader creates it`);
      const certPem = secretText(secret, "tls.crt");
      const keyPem = secretText(secret, "tls.key");
      if (!certPem || !keyPem) throw new Error(`${where} has no tls.crt or tls.key yet; the leader writes them`);
      return { certPem, keyPem };
    },
    describe: () => where,
  };
}
