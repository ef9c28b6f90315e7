/**
 * One cluster per API server endpoint: a `spec.controlPlaneEndpoint` another cluster already names is refused.
 * Two clusters with one endpoint would give Argo CD two cluster Secrets with one `server`, and Argo CD keeps one
 * Secret per server: one tenant's Applications could deploy with the other's credentials. Judged across every
 * namespace NICO watches; another namespace's cluster is not named (a tenant learns nothing of another's).
 * NICO checks again before it writes an Argo CD Secret (controllers/cluster/phases/argocd.ts), for what admission
 * cannot see: a race between two requests, or a cluster whose endpoint is its bootstrap node's address.
 *
 * @module
 */
import type { KubernetesCluster, KubernetesClusterSpec } from "../crds/kubernetescluster.ts";
import { canonicalHost } from "../lib/git/hosts.ts";
import { type Machine, machineAddress } from "../core/contract/nio.ts";
import { CLUSTER_LABEL } from "../core/contract/labels.ts";

/** The key two endpoints compare by: the canonical host and the port. */
export function endpointKey(e: { host: string; port?: number | undefined }): string {
  return `${canonicalHost(e.host)}:${e.port ?? 6443}`;
}

/** The endpoint keys a cluster's spec names (the index admission reads clusters by). */
export function clusterEndpointKeys(c: KubernetesCluster): string[] {
  const e = (c.spec as Partial<KubernetesClusterSpec> | undefined)?.controlPlaneEndpoint;
  return e?.host ? [endpointKey(e)] : [];
}

/**
 * Why the spec's endpoint may not be used: another cluster (`users`, the clusters naming the same endpoint)
 * already names it, or its host is the address of a Machine another cluster claims (`machines`, the Machines at
 * that host: a cluster without an endpoint is reached on its bootstrap node's address). An endpoint the update leaves as it was is not judged again, so a cluster is never locked
 * out of its own changes.
 */
export function endpointProblems(
  spec: KubernetesClusterSpec,
  oldSpec: KubernetesClusterSpec | undefined,
  self: { namespace: string; name: string },
  users: readonly KubernetesCluster[],
  machines: readonly Machine[] = [],
): string[] {
  const e = spec.controlPlaneEndpoint;
  if (!e) return [];
  const key = endpointKey(e);
  if (oldSpec?.controlPlaneEndpoint && endpointKey(oldSpec.controlPlaneEndpoint) === key) return [];
  const others = users.filter((c) =>
    !(c.metadata.namespace === self.namespace && c.metadata.name === self.name) && clusterEndpointKeys(c).includes(key)
  );
  const claimed = machines.filter((m) => {
    const owner = m.metadata.labels?.[CLUSTER_LABEL];
    return owner !== undefined && !(m.metadata.namespace === self.namespace && owner === self.name);
  });
  if (!others.length && !claimed.length) return [];
  const here = others.find((c) => c.metadata.namespace === self.namespace);
  const mine = claimed.find((m) => m.metadata.namespace === self.namespace);
  const who = here
    ? `cluster ${here.metadata.name} of this namespace`
    : mine
    ? `Machine ${mine.metadata.name} of cluster ${mine.metadata.labels![CLUSTER_LABEL]}`
    : "another cluster";
  return [
    `spec.controlPlaneEndpoint: ${key} is already the endpoint of ${who}; two clusters never share an API ` +
    "server endpoint (Argo CD would mix their credentials): name this cluster's own load balancer or address",
  ];
}

/** The canonical address a Machine is reached at (the index admission reads Machines by). */
export function machineHostKeys(m: Machine): string[] {
  const a = machineAddress(m);
  return a ? [canonicalHost(a)] : [];
}
