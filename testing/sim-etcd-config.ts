/**
 * What a configuration tells a simulated host about its etcd member (./sim-etcd.ts): its cluster, its client port
 * (`cluster.nix`), NICO's hash of its spec, and the etcd CA it carries (read from the Secrets it names, as NIO would).
 *
 * @module
 */
import { decodeBase64 } from "../lib/encoding.ts";
import type { KubeClient } from "../lib/kube/client.ts";
import { SECRETS } from "../lib/kube/resources.ts";
import type { KeyPair } from "../lib/pki.ts";
import { CLUSTER_LABEL, SPEC_HASH_ANNOTATION } from "../core/contract/labels.ts";
import type { NixosConfiguration } from "../core/contract/nio.ts";
import { ETCD_CA_FILE, ETCD_CA_KEY_FILE } from "../core/render/desired.ts";

export const specHashOf = (cfg: NixosConfiguration) => cfg.metadata.annotations?.[SPEC_HASH_ANNOTATION];
export const keyOf = (cfg: NixosConfiguration) =>
  `${cfg.metadata.namespace}/${cfg.metadata.labels?.[CLUSTER_LABEL] ?? ""}`;
export const clientPortOf = (cfg: NixosConfiguration) => {
  const nix = cfg.spec.additionalFiles.find((f) => f.path.endsWith("cluster.nix"));
  const text = nix?.valueType === "Inline" ? nix.inline : "";
  return Number(/ etcd = \{ clientPort = (\d+); \};/.exec(text)?.[1] ?? 2379);
};

/** The etcd CA a configuration carries (read from the Secrets it names), if it carries one. */
export async function caOf(management: KubeClient, cfg: NixosConfiguration): Promise<KeyPair | undefined> {
  const ref = (file: string) => {
    const f = cfg.spec.additionalFiles.find((x) => x.path.split("/").pop() === file);
    return f?.valueType === "SecretRef" ? f.secretRef : undefined;
  };
  const [crt, key] = [ref(ETCD_CA_FILE), ref(ETCD_CA_KEY_FILE)];
  if (!crt || !key) return undefined;
  type Data = { metadata: { name: string }; data?: Record<string, string> };
  const ns = cfg.metadata.namespace;
  const [c, k] = await Promise.all([
    management.get<Data>(SECRETS, crt.name, ns),
    management.get<Data>(SECRETS, key.name, ns),
  ]);
  const certPem = c?.data?.[crt.key ?? "tls.crt"];
  const keyPem = k?.data?.[key.key ?? "tls.key"];
  return certPem && keyPem ? { certPem: decodeBase64(certPem), keyPem: decodeBase64(keyPem) } : undefined;
}
