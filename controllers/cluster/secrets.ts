/**
 * The Secrets NICO owns for a cluster: the server and agent tokens (created
 * once, never changed), the cluster CA's certificate and, in a Secret of its own, its key, and the admin
 * kubeconfig. Their contents are never logged, nor put in status or events.
 *
 * @module
 */
import type { KubernetesCluster } from "../../crds/kubernetescluster.ts";
import type { KubeClient, KubeObject } from "../../lib/kube/client.ts";
import { decodeBase64, encodeBase64 } from "../../lib/encoding.ts";
import type { Secret } from "../../lib/kube/meta.ts";
import { clusterOwnerReference, isOwnedBy } from "../../core/contract/owner.ts";
import { isAlreadyExists } from "../../lib/kube/errors.ts";
import { SECRETS } from "../../lib/kube/resources.ts";
import { CLUSTER_LABEL, REGENERATE_IDENTITY_ANNOTATION } from "../../core/contract/labels.ts";
import { childShardLabels } from "../../core/contract/shards.ts";
import { identityLostMessage } from "../../core/render/identity.ts";
import { createCa, keyMatches, type KeyPair } from "../../lib/pki.ts";
import { JOIN_TOKEN_KEY } from "../../core/render/desired.ts";
import { issueKubeconfig, reissueReason } from "../../core/render/kubeconfig.ts";
import { followShard } from "./follow.ts";
import { ClusterProblem } from "./problem.ts";
import {
  agentTokenSecret,
  caKeySecret,
  caSecret,
  joinTokenSecret,
  kubeconfigSecret,
} from "../../core/contract/names.ts";

export type { Secret } from "../../lib/kube/meta.ts";

const unb64 = (s: string | undefined) => (s === undefined ? undefined : decodeBase64(s));

/** The text under `key` of a Secret's data, if any. */
export function secretValue(secret: Secret | undefined, key: string): string | undefined {
  return unb64(secret?.data?.[key]);
}

function hex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Whether this cluster (this very object, by uid) controls the Secret: the one ownership rule, {@link isOwnedBy}. */
export function ownsSecret(secret: KubeObject, cluster: KubernetesCluster): boolean {
  const { name, namespace, uid } = cluster.metadata;
  return uid !== undefined && isOwnedBy(secret, { name, namespace: namespace!, uid });
}

/** A Secret of `cluster` (labelled, owned by it) with `data` as text. */
export function owned(cluster: KubernetesCluster, name: string, type: string, data: Record<string, string>): Secret {
  return {
    metadata: {
      name,
      namespace: cluster.metadata.namespace!,
      // The shard label too: each shard caches only its own clusters' Secrets (core/contract/shards.ts).
      labels: { [CLUSTER_LABEL]: cluster.metadata.name, ...childShardLabels(cluster.metadata.labels) },
      ownerReferences: [clusterOwnerReference({ name: cluster.metadata.name, uid: cluster.metadata.uid! })],
    },
    type,
    data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, encodeBase64(v)])),
  };
}

/** Creates a Secret unless it exists; answers the one that exists. */
export async function createOnce(
  client: KubeClient,
  secret: Secret,
  cached: Secret | undefined,
): Promise<{ secret: Secret; created: boolean }> {
  if (cached) return { secret: cached, created: false };
  try {
    return { secret: await client.create(SECRETS, secret), created: true };
  } catch (err) {
    if (!isAlreadyExists(err)) throw err;
    const existing = await client.get<Secret>(SECRETS, secret.metadata.name, secret.metadata.namespace);
    if (!existing) throw err;
    // Not in the cache, yet there: it may carry the label of a shard its cluster left (adopt.ts). Only NICO's own
    // Secret (controlled by the same cluster) is relabelled; the desired labels name the shard.
    const owner = secret.metadata.ownerReferences?.[0]?.uid;
    const ours = existing.metadata.ownerReferences?.some((o) => o.controller && o.uid === owner);
    return {
      secret: ours ? await followShard(client, SECRETS, existing, secret.metadata.labels) : existing,
      created: false,
    };
  }
}

/** NICO's cached Secret of that name in the cluster's namespace (not lib/git's async `SecretLookup`). */
export type CachedSecret = (name: string) => Secret | undefined;

/** Reason of the problem a Secret named like NICO's but controlled by something else causes. */
export const FOREIGN_SECRET = "ForeignSecret";

/** NICO never touches a Secret it does not control: that is a {@link ClusterProblem} for the user. */
export function checkOwner(secret: Secret, cluster: KubernetesCluster): Secret {
  if (!ownsSecret(secret, cluster)) {
    throw new ClusterProblem(
      FOREIGN_SECRET,
      `Secret ${secret.metadata.name} exists but does not belong to cluster ${cluster.metadata.name}; ` +
        `delete or rename it so NICO can create its own`,
    );
  }
  return secret;
}

/**
 * An identity Secret (CA or join token) is missing from a cluster that has
 * been brought up: NICO stops instead of replacing it.
 */
export class IdentityLostError extends ClusterProblem {
  constructor(readonly missing: string[]) {
    super("IdentityLost", identityLostMessage(missing, REGENERATE_IDENTITY_ANNOTATION));
  }
}

/** Whether NICO may make identity Secrets that are missing. */
export interface IdentityPolicy {
  /** False once the cluster has been brought up, unless the user asked to re-key. */
  mayCreate: boolean;
}

/** The server token Secret (`<cluster>-join-token`, for control-plane nodes): 32 random bytes, hex, made once. */
export function ensureJoinToken(
  client: KubeClient,
  cluster: KubernetesCluster,
  lookup: CachedSecret,
  policy: IdentityPolicy = { mayCreate: true },
) {
  return ensureToken(client, cluster, lookup, joinTokenSecret(cluster.metadata.name), policy);
}

/** The agent token Secret (`<cluster>-agent-token`, for every node): 32 random bytes, hex, made once. */
export function ensureAgentToken(
  client: KubeClient,
  cluster: KubernetesCluster,
  lookup: CachedSecret,
  policy: IdentityPolicy = { mayCreate: true },
) {
  return ensureToken(client, cluster, lookup, agentTokenSecret(cluster.metadata.name), policy);
}

async function ensureToken(
  client: KubeClient,
  cluster: KubernetesCluster,
  lookup: CachedSecret,
  name: string,
  policy: IdentityPolicy,
) {
  const cached = lookup(name);
  if (!cached && !policy.mayCreate) throw new IdentityLostError([name]);
  // Random bytes only when the Secret is really missing: this runs on every reconcile.
  const r = cached ? { secret: cached, created: false } : await createOnce(
    client,
    owned(cluster, name, "Opaque", { [JOIN_TOKEN_KEY]: hex(crypto.getRandomValues(new Uint8Array(32))) }),
    undefined,
  );
  checkOwner(r.secret, cluster);
  return r;
}

/** Reason of the problem a CA key Secret that does not hold the CA's key causes. */
export const CA_KEY_MISMATCH = "CertificateAuthorityKeyMismatch";

/** Writes `keyPem` into the key Secret: created, or replaced (version-checked) when it holds another. */
async function putCaKey(client: KubeClient, cluster: KubernetesCluster, existing: Secret | undefined, keyPem: string) {
  const desired = owned(cluster, caKeySecret(cluster.metadata.name), "Opaque", { "tls.key": keyPem });
  if (!existing) return void await createOnce(client, desired, undefined);
  if (unb64(existing.data?.["tls.key"]) === keyPem) return;
  const resourceVersion = existing.metadata.resourceVersion!;
  await client.replace(SECRETS, { ...desired, metadata: { ...desired.metadata, resourceVersion } });
}

/** A new CA: its key is stored first, so a certificate is never published without its key. */
async function newCa(
  client: KubeClient,
  cluster: KubernetesCluster,
  caS: Secret | undefined,
  keyS: Secret | undefined,
): Promise<{ ca: KeyPair; secret: Secret; created: boolean }> {
  const ca = await createCa({ commonName: `${cluster.metadata.name}-ca`, days: 3650 });
  await putCaKey(client, cluster, keyS, ca.keyPem);
  const desired = owned(cluster, caSecret(cluster.metadata.name), "Opaque", { "tls.crt": ca.certPem });
  if (caS) {
    // A CA Secret without a usable key: replaced in place (its type stays), version-checked.
    const data = {
      ...caS.data,
      "tls.crt": desired.data!["tls.crt"]!,
      ...(caS.data?.["tls.key"] ? { "tls.key": "" } : {}),
    };
    const secret = await client.replace(SECRETS, { ...caS, data });
    return { ca, secret, created: true };
  }
  const r = await createOnce(client, desired, undefined);
  return { ca, secret: r.secret, created: r.created };
}

/**
 * The cluster CA (ten years). `<cluster>-ca` holds the certificate,
 * `<cluster>-ca-key` the private key, and no other Secret holds it. CA
 * Secrets of older NICO held the key too: it is written to the key Secret
 * first (that copy wins: it was the source), and only then removed from the
 * CA Secret (its `tls.key` left empty: a `kubernetes.io/tls` Secret keeps
 * the entry), so no crash can lose it. On a cluster that was brought up a
 * missing CA or key is {@link IdentityLostError}, and a key that does not
 * match the certificate a problem: NICO never makes a new one unasked.
 */
export async function ensureCa(
  client: KubeClient,
  cluster: KubernetesCluster,
  lookup: CachedSecret,
  policy: IdentityPolicy = { mayCreate: true },
): Promise<{ ca: KeyPair; created: boolean; keyMoved: boolean }> {
  const [caName, keyName] = [caSecret(cluster.metadata.name), caKeySecret(cluster.metadata.name)];
  const caS = lookup(caName);
  const keyS = lookup(keyName);
  if (caS) checkOwner(caS, cluster);
  if (keyS) checkOwner(keyS, cluster);
  if (!caS && !policy.mayCreate) throw new IdentityLostError([caName]);
  if (!caS) {
    const made = await newCa(client, cluster, undefined, keyS);
    if (made.created) return { ca: made.ca, created: true, keyMoved: false };
    // Another pass made it first: read what it stored, as it is now.
    const ns = cluster.metadata.namespace!;
    const fresh = new Map([caName, keyName].map((n) => [n, client.get<Secret>(SECRETS, n, ns)]));
    const [c, k] = [await fresh.get(caName), await fresh.get(keyName)];
    return await ensureCa(client, cluster, (n) => (n === caName ? c : n === keyName ? k : lookup(n)), policy);
  }
  const certPem = unb64(caS.data?.["tls.crt"]);
  if (!certPem) throw new Error(`Secret ${caName} lacks tls.crt`);
  const legacy = unb64(caS.data?.["tls.key"]) || undefined;
  const keyPem = legacy ?? unb64(keyS?.data?.["tls.key"]);
  let keyMoved = false;
  if (legacy) {
    await putCaKey(client, cluster, keyS, legacy);
    await client.replace(SECRETS, { ...caS, data: { ...caS.data, "tls.key": "" } });
    keyMoved = true;
  }
  if (!keyPem || !(await keyMatches(certPem, keyPem))) {
    if (policy.mayCreate) {
      const made = await newCa(client, cluster, caS, keyS);
      return { ca: made.ca, created: true, keyMoved };
    }
    if (!keyPem) throw new IdentityLostError([keyName]);
    throw new ClusterProblem(
      CA_KEY_MISMATCH,
      `Secret ${keyName} does not hold the key of the CA in Secret ${caName}; restore it from a backup ` +
        `(or set ${REGENERATE_IDENTITY_ANNOTATION}=true to make a new CA and reconfigure every node)`,
    );
  }
  return { ca: { certPem, keyPem }, created: false, keyMoved };
}

/**
 * The admin kubeconfig for `server`: written when missing, for another
 * endpoint, signed by another CA, or within six months of expiry.
 * Answers why it was (re)issued, or `undefined` when it was fine.
 */
export async function ensureKubeconfig(
  client: KubeClient,
  cluster: KubernetesCluster,
  server: string,
  ca: KeyPair,
  lookup: CachedSecret,
  now: Date,
  force?: string,
): Promise<string | undefined> {
  const name = kubeconfigSecret(cluster.metadata.name);
  const existing = lookup(name);
  if (existing) checkOwner(existing, cluster);
  const why = await reissueReason(unb64(existing?.data?.value), server, ca.certPem, now) ?? force;
  if (!why) return undefined;
  const value = await issueKubeconfig(cluster.metadata.name, server, ca, now);
  const desired = owned(cluster, name, "Opaque", { value });
  if (existing) {
    await client.replace(SECRETS, {
      ...desired,
      metadata: { ...desired.metadata, resourceVersion: existing.metadata.resourceVersion! },
    });
  } else {
    await createOnce(client, desired, undefined);
  }
  return why;
}
