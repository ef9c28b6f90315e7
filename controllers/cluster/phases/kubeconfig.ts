/**
 * Phase: the admin kubeconfig Secret, once the bootstrap node is up;
 * re-signed when the endpoint or CA changed or it nears expiry.
 *
 * @module
 */
import type { NodeReport } from "../../../core/readiness.ts";
import { kubeconfigSecret } from "../../../core/names.ts";
import type { ClusterScope } from "../scope.ts";
import type { KeyPair } from "../../../lib/pki.ts";
import { ensureKubeconfig, secretValue } from "../secrets.ts";
import { publishedServer, readKubeconfig } from "../../../core/kubeconfig.ts";

/** Writes the kubeconfig when due; puts its Secret's name in `s.out.kubeconfig` once it exists. */
export async function reconcileKubeconfig(s: ClusterScope, nodes: NodeReport[], ca: KeyPair): Promise<void> {
  const secret = kubeconfigSecret(s.name);
  // Applied is enough here: the kubeconfig is what NICO needs to look inside the cluster at all.
  const bootstrapReady = nodes.some((n) => n.machine === s.bootstrap && (n.applied ?? n.state === "Ready"));
  if (bootstrapReady && s.out.endpoint) {
    const lookup = (n: string) => s.cache.secret(n);
    const target = publishedTarget(s, nodes, s.out.endpoint);
    const why = await ensureKubeconfig(s.deps.client, s.cluster, target, ca, lookup, s.now);
    if (why) {
      s.log.info("issued kubeconfig", { reason: why, secret });
      // The first one is part of bring-up (the Ready Event says so); a re-issue is worth an Event of its own.
      if (why !== "missing") {
        await s.deps.recorder.event(s.cluster, "Normal", "KubeconfigIssued", `wrote Secret ${secret} (${why})`);
      }
    }
    s.out.kubeconfig = secret;
  } else if (s.cache.secret(secret)) {
    s.out.kubeconfig = secret;
  }
}

/**
 * The server to publish: a new endpoint only once every control-plane node
 * runs the configuration that carries it; meanwhile the one the kubeconfig
 * names, with `KubeconfigCurrent=False` saying so.
 */
function publishedTarget(s: ClusterScope, nodes: NodeReport[], endpoint: string): string {
  const published = secretValue(s.cache.secret(kubeconfigSecret(s.name)), "value");
  const current = published ? readKubeconfig(published)?.server : undefined;
  const cp = nodes.filter((n) => n.plane === "controlPlane");
  const onIt = cp.filter((n) => n.state === "Ready" && n.upToDate).length;
  const target = publishedServer(current, endpoint, cp.length > 0 && onIt === cp.length);
  s.out.extra.push(
    target.moving
      ? {
        type: "KubeconfigCurrent",
        status: "False",
        reason: "WaitingForControlPlane",
        message: `the kubeconfig keeps ${target.server} until every control-plane node runs the configuration ` +
          `with ${endpoint} (${onIt}/${cp.length})`,
      }
      : {
        type: "KubeconfigCurrent",
        status: "True",
        reason: "EndpointServed",
        message: `the kubeconfig names ${endpoint}`,
      },
  );
  return target.server;
}
