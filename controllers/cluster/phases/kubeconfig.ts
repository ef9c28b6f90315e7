/**
 * Phase: the admin kubeconfig Secret, once the bootstrap node is up;
 * re-signed when the endpoint or CA changed or it nears expiry.
 *
 * @module
 */
import type { NodeReport } from "../../../core/nodes/readiness.ts";
import { kubeconfigSecret } from "../../../core/contract/names.ts";
import type { ClusterScope } from "../scope.ts";
import { certInfo, type KeyPair } from "../../../lib/pki.ts";
import { condition as setCondition, type ConditionInput } from "../../../core/status/conditions.ts";
import { ensureKubeconfig, secretValue } from "../secrets.ts";
import { publishedServer, readKubeconfig } from "../../../core/render/kubeconfig.ts";
import { postEvent } from "../../events.ts";

/** The server the kubeconfig is to name, and the `KubeconfigCurrent` condition that says so. */
export interface KubeconfigTarget {
  server: string;
  endpoint: string;
  condition: ConditionInput;
}

/**
 * What the kubeconfig is to name: none until the bootstrap node has applied its configuration (applied is enough
 * here: the kubeconfig is what NICO needs to look inside the cluster at all) and the endpoint is known. Once a
 * kubeconfig is published there always is one, also while the bootstrap node applies a new configuration (a
 * rollout that moves the endpoint, say): it keeps the server it names, and `KubeconfigCurrent` keeps saying so.
 */
export function kubeconfigTarget(
  s: ClusterScope,
  nodes: NodeReport[],
  endpoint: string | undefined,
): KubeconfigTarget | undefined {
  const bootstrapReady = nodes.some((n) => n.machine === s.bootstrap && (n.applied ?? n.state === "Ready"));
  const published = s.cache.secret(kubeconfigSecret(s.name)) !== undefined;
  return (bootstrapReady || published) && endpoint ? publishedTarget(s, nodes, endpoint) : undefined;
}

/**
 * Writes the kubeconfig for `target` when due, or in any case when `force` names why; answers the Secret's name
 * once it exists, and when it wrote one, when the client certificate it replaced expires (`reissued.previousExpiry`;
 * null: unreadable; absent: there was none).
 */
export async function reconcileKubeconfig(
  s: ClusterScope,
  target: KubeconfigTarget | undefined,
  ca: KeyPair,
  force?: string,
): Promise<{ secret?: string | undefined; reissued?: { previousExpiry?: Date | null } }> {
  const secret = kubeconfigSecret(s.name);
  if (target) {
    const lookup = (n: string) => s.cache.secret(n);
    const before = secretValue(lookup(secret), "value");
    const why = await ensureKubeconfig(s.deps.client, s.cluster, target.server, ca, lookup, s.now, force);
    if (why) {
      s.log.info("issued kubeconfig", { reason: why, secret });
      // The first one is part of bring-up (the Ready Event says so); a re-issue is worth an Event of its own.
      if (why !== "missing") {
        postEvent(s.deps.recorder, s.cluster, "KubeconfigIssued", `wrote Secret ${secret} (${why})`);
      }
    }
    if (!why) return { secret };
    return { secret, reissued: before ? { previousExpiry: expiryOf(before) } : {} };
  }
  return s.cache.secret(secret) ? { secret } : {};
}

/**
 * The server to publish: a new endpoint only once every control-plane node
 * runs the configuration that carries it; meanwhile the one the kubeconfig
 * names, with `KubeconfigCurrent=False` saying so.
 */
function publishedTarget(s: ClusterScope, nodes: NodeReport[], endpoint: string): KubeconfigTarget {
  const published = secretValue(s.cache.secret(kubeconfigSecret(s.name)), "value");
  const current = published ? readKubeconfig(published)?.server : undefined;
  const cp = nodes.filter((n) => n.plane === "controlPlane");
  const onIt = cp.filter((n) => n.state === "Ready" && n.upToDate).length;
  const target = publishedServer(current, endpoint, cp.length > 0 && onIt === cp.length);
  const condition: ConditionInput = target.moving
    ? setCondition(
      "KubeconfigCurrent",
      "False",
      "WaitingForControlPlane",
      `the kubeconfig keeps ${target.server} until every control-plane node runs the configuration ` +
        `with ${endpoint} (${onIt}/${cp.length})`,
    )
    : setCondition("KubeconfigCurrent", "True", "EndpointServed", `the kubeconfig names ${endpoint}`);
  return { server: target.server, endpoint, condition };
}

/** When the client certificate of a kubeconfig NICO wrote expires; null when it cannot be read. */
function expiryOf(kubeconfig: string): Date | null {
  const kc = readKubeconfig(kubeconfig);
  try {
    return kc ? certInfo(kc.certPem).notAfter : null;
  } catch {
    return null;
  }
}
