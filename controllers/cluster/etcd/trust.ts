/**
 * The etcd trust NICO issues for a cluster: a CA of its own (ten years,
 * ECDSA P-256), its certificate in `<cluster>-etcd-ca` (`tls.crt`) and its
 * key alone in `<cluster>-etcd-ca-key` (`tls.key`), handed to control-plane
 * nodes as files (core/render/desired.ts). The members' serving and peer
 * certificates are the flake's to make from it; NICO signs its own etcd
 * client certificate from it in memory when it opens a cluster's etcd
 * observer (controllers/cluster/etcd/observer.ts), so nothing more is stored.
 *
 * Made once, by the same evidence rule as the cluster CA: a missing etcd CA
 * is made while the cluster has not been brought up (or a re-key was
 * asked); once a node carries its files it is identity, and a missing one is
 * {@link IdentityLostError}. A cluster brought up before NICO issued etcd
 * credentials (no node carries them) gets none: the running etcd would not
 * use a new CA, and the new files would roll every control-plane node. Its
 * etcd is not observed, and its `EtcdHealthy` condition says why.
 *
 * @module
 */
import type { KubernetesCluster } from "../../../crds/kubernetescluster.ts";
import type { KubeClient } from "../../../lib/kube/client.ts";
import { createCa, issueCert, keyMatches, type KeyPair } from "../../../lib/pki.ts";
import { etcdCaKeySecret, etcdCaSecret } from "../../../core/contract/names.ts";
import { ETCD_CA_FILE } from "../../../core/render/desired.ts";
import type { NixosConfiguration } from "../../../core/contract/nio.ts";
import { REGENERATE_IDENTITY_ANNOTATION } from "../../../core/contract/labels.ts";
import { SECRETS } from "../../../lib/kube/resources.ts";
import { ApiError } from "../../../lib/kube/errors.ts";
import { ClusterProblem } from "../problem.ts";
import {
  CA_KEY_MISMATCH,
  type CachedSecret,
  checkOwner,
  createOnce,
  IdentityLostError,
  owned,
  type Secret,
  secretValue,
} from "../secrets.ts";

/** What {@link ensureEtcdCa} found or made. */
export interface EtcdTrust {
  /** The etcd CA; absent for a cluster brought up before NICO issued etcd credentials. */
  ca?: KeyPair | undefined;
  created: boolean;
  /** Why there is none, for the `EtcdHealthy` condition. */
  none?: string | undefined;
}

/** Whether any of the cluster's configurations hands a node the etcd CA (the running cluster trusts it then). */
export function etcdCaInUse(configs: readonly NixosConfiguration[]): boolean {
  return configs.some((c) => c.spec.additionalFiles.some((f) => f.path.split("/").pop() === ETCD_CA_FILE));
}

/**
 * The cluster's etcd CA: made when missing while `mayCreate` (the cluster has not been brought up, or a re-key
 * was asked), {@link IdentityLostError} when missing while a node carries it (`inUse`), and none for a cluster
 * brought up before NICO issued etcd credentials.
 */
export async function ensureEtcdCa(
  client: KubeClient,
  cluster: KubernetesCluster,
  lookup: CachedSecret,
  policy: { mayCreate: boolean; inUse: boolean },
): Promise<EtcdTrust> {
  const name = cluster.metadata.name;
  const [caName, keyName] = [etcdCaSecret(name), etcdCaKeySecret(name)];
  const caS = lookup(caName);
  const keyS = lookup(keyName);
  if (caS) checkOwner(caS, cluster);
  if (keyS) checkOwner(keyS, cluster);
  const certPem = secretValue(caS, "tls.crt");
  const keyPem = secretValue(keyS, "tls.key");
  if (certPem && keyPem) {
    if (await keyMatches(certPem, keyPem)) return { ca: { certPem, keyPem }, created: false };
    throw new ClusterProblem(
      CA_KEY_MISMATCH,
      `Secret ${keyName} does not hold the key of the etcd CA in Secret ${caName}; restore it from a backup`,
    );
  }
  if (policy.mayCreate && !certPem) return { ca: await newEtcdCa(client, cluster, caS, keyS), created: true };
  const missing = [certPem ? undefined : caName, keyPem ? undefined : keyName].filter((n) => n !== undefined);
  if (policy.inUse || caS || keyS) throw new IdentityLostError(missing);
  return {
    created: false,
    none: `the cluster was brought up before NICO issued etcd credentials (no node carries ${ETCD_CA_FILE}); ` +
      `to have NICO watch its etcd, store the CA its etcd uses in Secrets ${caName} (tls.crt) and ${keyName} ` +
      `(tls.key), or re-key it (${REGENERATE_IDENTITY_ANNOTATION})`,
  };
}

/** A new etcd CA: its key is stored first (a Secret already there is replaced, version-checked), then its certificate. */
async function newEtcdCa(
  client: KubeClient,
  cluster: KubernetesCluster,
  caS: Secret | undefined,
  keyS: Secret | undefined,
): Promise<KeyPair> {
  const name = cluster.metadata.name;
  const ca = await createCa({ commonName: `${name}-etcd-ca`, days: 3650 });
  const put = async (existing: Secret | undefined, desired: Secret) => {
    if (!existing) {
      const r = await createOnce(client, desired, undefined);
      // Another pass stored one first: its write wins, this pass looks again (a conflict is a lost race).
      if (!r.created) {
        throw new ApiError(409, "AlreadyExists", "created meanwhile", "POST", `secrets/${desired.metadata.name}`);
      }
      return;
    }
    const resourceVersion = existing.metadata.resourceVersion!;
    await client.replace(SECRETS, { ...desired, metadata: { ...desired.metadata, resourceVersion } });
  };
  await put(keyS, owned(cluster, etcdCaKeySecret(name), "Opaque", { "tls.key": ca.keyPem }));
  await put(caS, owned(cluster, etcdCaSecret(name), "Opaque", { "tls.crt": ca.certPem }));
  return ca;
}

/** NICO's own etcd client certificate, signed from the etcd CA in memory (one year; a new one per observer). */
export function etcdClientCertificate(ca: KeyPair): Promise<KeyPair> {
  return issueCert(ca, { commonName: "nico", organizations: ["nico.homystack.com"], usage: "client", days: 365 });
}
