/**
 * Phase: the cluster's own Secrets (join token, CA) exist and are NICO's.
 *
 * @module
 */
import type { ClusterScope } from "../scope.ts";
import { ensureCa, ensureJoinToken } from "../secrets.ts";

/** Creates the join token and the CA when missing; puts the CA in `s.out.ca`. */
export async function reconcileSecrets(s: ClusterScope): Promise<void> {
  const { client, recorder } = s.deps;
  const lookup = (n: string) => s.cache.secret(n);
  const token = await ensureJoinToken(client, s.cluster, lookup);
  if (token.created) {
    await recorder.event(s.cluster, "Normal", "JoinTokenCreated", `created Secret ${token.secret.metadata.name}`);
  }
  const { ca, created } = await ensureCa(client, s.cluster, lookup);
  if (created) await recorder.event(s.cluster, "Normal", "CertificateAuthorityCreated", "created the cluster CA");
  s.out.ca = ca;
}
