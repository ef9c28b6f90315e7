/**
 * Phase: the admin kubeconfig Secret, once the bootstrap node is up;
 * re-signed when the endpoint or CA changed or it nears expiry.
 *
 * @module
 */
import type { NodeReport } from "../../../core/readiness.ts";
import { kubeconfigSecret } from "../../../core/names.ts";
import type { ClusterScope } from "../scope.ts";
import { ensureKubeconfig } from "../secrets.ts";

/** Writes the kubeconfig when due; puts its Secret's name in `s.out.kubeconfig` once it exists. */
export async function reconcileKubeconfig(s: ClusterScope, nodes: NodeReport[]): Promise<void> {
  const secret = kubeconfigSecret(s.name);
  const bootstrapReady = nodes.some((n) => n.machine === s.bootstrap && n.state === "Ready");
  if (bootstrapReady && s.out.endpoint && s.out.ca) {
    const lookup = (n: string) => s.cache.secret(n);
    const why = await ensureKubeconfig(s.deps.client, s.cluster, s.out.endpoint, s.out.ca, lookup, s.now);
    if (why) {
      s.log.info("issued kubeconfig", { reason: why, secret });
      await s.deps.recorder.event(s.cluster, "Normal", "KubeconfigIssued", `wrote Secret ${secret} (${why})`);
    }
    s.out.kubeconfig = secret;
  } else if (s.cache.secret(secret)) {
    s.out.kubeconfig = secret;
  }
}
