/**
 * Installing NICO's own CRD at start (`nico run --install-crds`, for
 * development; production installs it with the manifests).
 *
 * @module
 */
import type { KubeClient, KubeObject } from "../lib/kube/client.ts";
import { applyCrds } from "../lib/kube/crd.ts";
import { kubernetesClusterCrd } from "./generate.ts";

/** Applies the KubernetesCluster CRD and waits until it is served. */
export async function installCrd(client: KubeClient, signal?: AbortSignal): Promise<void> {
  await applyCrds(client, [kubernetesClusterCrd() as unknown as KubeObject], {
    timeoutMs: 10_000,
    ...(signal ? { signal } : {}),
  });
}
