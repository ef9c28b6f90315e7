/**
 * Phase: the cluster's own Secrets (server and agent tokens, CA) exist and are NICO's.
 * They are made once: on a cluster that has been brought up a missing one is
 * {@link IdentityLostError} until restored, or until the user asks for a
 * re-key with the `nico.homystack.com/regenerate-identity` annotation.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { KUBERNETES_CLUSTERS } from "../../../crds/kubernetescluster.ts";
import { identityKeptMessage, wasBootstrapped } from "../../../core/render/identity.ts";
import { REGENERATE_IDENTITY_ANNOTATION } from "../../../core/contract/labels.ts";
import { removeAnnotation } from "../../../lib/kube/patch.ts";
import { agentTokenSecret, caKeySecret, caSecret, kubeconfigSecret } from "../../../core/contract/names.ts";
import { AGENT_TOKEN_FILE } from "../../../core/render/desired.ts";
import { allSettledOrThrow } from "../../../lib/runtime/bounded.ts";
import type { ClusterScope } from "../scope.ts";
import type { Identity } from "../view.ts";
import { ensureAgentToken, ensureCa, ensureJoinToken, ownsSecret, type Secret } from "../secrets.ts";
import { ensureEtcdCa, etcdCaInUse } from "../etcd/trust.ts";
import { postEvent } from "../../events.ts";

/** Creates the join token and the CA when they may be made; answers the CA and the identity's digest. */
export async function reconcileSecrets(s: ClusterScope): Promise<Identity> {
  const { client, recorder } = s.deps;
  const lookup = (n: string) => s.cache.secret(n);
  const rekey = s.cluster.metadata.annotations?.[REGENERATE_IDENTITY_ANNOTATION] === "true";
  const policy = {
    mayCreate: rekey ||
      !wasBootstrapped({
        owned: s.ours,
        machines: s.cache.machines,
        kubeconfigIssued: isOurs(lookup(kubeconfigSecret(s.name)), s),
      }),
  };
  // A running cluster made before the agent token existed gets one (that is the upgrade); once a
  // configuration carries it, the nodes trust it and it is identity like the others.
  const agentInUse = s.ours.some((c) => c.spec.additionalFiles.some((f) => f.path === AGENT_TOKEN_FILE));
  // The three are independent: sent side by side (each settles before an error is thrown).
  const [token, agent, { ca, created, keyMoved }, etcd] = await allSettledOrThrow([
    ensureJoinToken(client, s.cluster, lookup, policy),
    ensureAgentToken(client, s.cluster, lookup, { mayCreate: policy.mayCreate || !agentInUse }),
    ensureCa(client, s.cluster, lookup, policy),
    ensureEtcdCa(client, s.cluster, lookup, { ...policy, inUse: etcdCaInUse(s.ours) }),
  ]);
  if (token.created) s.log.info("created the join token", { secret: token.secret.metadata.name });
  if (agent.created) s.log.info("created the agent token", { secret: agentTokenSecret(s.name) });
  if (created) s.log.info("created the cluster CA", {});
  if (etcd.created) s.log.info("created the etcd CA", {});
  if (keyMoved) {
    s.log.info("moved the CA key out of the CA Secret", { kept: caKeySecret(s.name), cleared: caSecret(s.name) });
  }
  // The etcd CA is part of the identity only where NICO issued one: an older cluster's digest stays as it was.
  const parts = [token.secret.data?.token, agent.secret.data?.token, ca.certPem, ...(etcd.ca ? [etcd.ca.certPem] : [])];
  const identity: Identity = {
    ca,
    digest: identityDigest(parts),
    etcd: etcd.ca ? { ca: etcd.ca } : { none: etcd.none ?? "" },
  };
  if (!rekey) return identity;
  if (!(token.created || (agent.created && agentInUse) || created || etcd.created)) {
    return { ...identity, rekeyKept: true }; // nothing was lost: answered by answerKeptRekey, after the kubeconfig
  }
  const what = [
    token.created && "server token",
    agent.created && agentInUse && "agent token",
    created && "CA",
    etcd.created && "etcd CA",
  ].filter(Boolean).join(" and ");
  postEvent(
    recorder,
    s.cluster,
    "IdentityRegenerated",
    `made a new ${what} as ${REGENERATE_IDENTITY_ANNOTATION} asked; nodes are reconfigured with it`,
  );
  await removeRekeyRequest(s);
  return identity;
}

/**
 * The answer to a re-key request on a cluster whose identity is intact, once the kubeconfig phase re-issued the
 * admin kubeconfig (`reissued`: what it wrote, see core/render/identity.ts; undefined: it could not issue one yet):
 * a Warning Event saying what was kept and why, what was rotated, and how to rotate the rest by hand; then the
 * request is removed. Never a silent no-op.
 */
export async function answerKeptRekey(
  s: ClusterScope,
  reissued: { previousExpiry?: Date | null } | undefined,
): Promise<void> {
  const message = identityKeptMessage(REGENERATE_IDENTITY_ANNOTATION, s.name, reissued);
  s.log.info("re-key request answered: identity kept", { reissuedKubeconfig: reissued !== undefined });
  postEvent(s.deps.recorder, s.cluster, "IdentityKept", message);
  await removeRekeyRequest(s);
}

function removeRekeyRequest(s: ClusterScope): Promise<unknown> {
  return s.deps.client.jsonPatch(KUBERNETES_CLUSTERS, s.name, s.namespace, [
    removeAnnotation(REGENERATE_IDENTITY_ANNOTATION),
  ]);
}

/** A digest of the cluster's identity, for `cluster.nix` (never the secrets themselves). */
function identityDigest(parts: (string | undefined)[]): string {
  return createHash("sha256").update(`nico-identity\0${parts.map((p) => p ?? "").join("\0")}`).digest("hex")
    .slice(0, 16);
}

function isOurs(secret: Secret | undefined, s: ClusterScope): boolean {
  return secret !== undefined && ownsSecret(secret, s.cluster);
}
