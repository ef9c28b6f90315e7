/**
 * Phase: the cluster's Argo CD cluster Secret (`--argocd-namespace`; off by default), rendered from the
 * kubeconfig NICO issued (core/render/argocd.ts) and written when it differs from what NICO last wrote or
 * found, so it follows endpoint moves and certificate renewals within a pass of the kubeconfig's. It lives in
 * Argo CD's namespace, where an owner reference cannot reach: deletion removes it (see {@link deleteArgoCdSecret}).
 * A write that fails (no such namespace, no rights there) never stops the cluster: it is a Warning Event.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { kubeconfigSecret } from "../../../core/contract/names.ts";
import {
  argoCdClusterSecret,
  type ArgoCdSecret,
  argoCdSecretName,
  isArgoCdSecretOf,
} from "../../../core/render/argocd.ts";
import { parseIssuedKubeconfig } from "../../../core/render/kubeconfig.ts";
import { isAlreadyExists } from "../../../lib/kube/errors.ts";
import { SECRETS } from "../../../lib/kube/resources.ts";
import { errorMessage } from "../../../lib/runtime/log.ts";
import type { ClusterContext, ClusterScope } from "../scope.ts";
import { type Secret, secretValue } from "../secrets.ts";

/** The memory's mark of a Secret NICO deleted (nothing to delete again). */
const DELETED = "deleted";

/** Writes the Argo CD cluster Secret when Argo CD registration is on, the kubeconfig exists and something changed. */
export async function reconcileArgoCd(s: ClusterScope): Promise<void> {
  const argoNs = s.deps.argocdNamespace;
  if (!argoNs) return;
  const text = secretValue(s.cache.secret(kubeconfigSecret(s.name)), "value");
  if (!text) return;
  let desired: ArgoCdSecret;
  try {
    const kubeconfig = parseIssuedKubeconfig(text);
    desired = argoCdClusterSecret({
      cluster: { namespace: s.namespace, name: s.name, labels: s.cluster.metadata.labels },
      argoCdNamespace: argoNs,
      kubeconfig,
    });
  } catch {
    return; // the kubeconfig phase re-issues an unreadable kubeconfig; the next pass registers it
  }
  const digest = createHash("sha256").update(JSON.stringify(desired)).digest("hex");
  if (s.memory.argoCd === digest) return;
  try {
    const why = await writeArgoCdSecret(s, desired);
    s.memory.argoCd = digest;
    s.memory.argoCdWarnings.clear(s.memory.key);
    if (why) s.log.info("wrote the Argo CD cluster Secret", { secret: `${argoNs}/${desired.metadata.name}`, why });
  } catch (err) {
    const message = `the Argo CD cluster Secret ${argoNs}/${desired.metadata.name} was not written: ${
      errorMessage(err)
    }; Argo CD does not see this cluster's current endpoint and credentials (docs/operations.md, GitOps)`;
    if (s.memory.argoCdWarnings.allow(s.memory.key, "ArgoCDRegistrationFailed", message, s.now.getTime())) {
      s.deps.recorder.post(s.cluster, "Warning", "ArgoCDRegistrationFailed", message);
    }
  }
}

/** Creates or replaces the Secret; answers why it wrote (undefined: it was already so). */
async function writeArgoCdSecret(s: ClusterScope, desired: ArgoCdSecret): Promise<string | undefined> {
  const { client } = s.deps;
  const { name, namespace } = desired.metadata;
  const existing = await client.get<Secret>(SECRETS, name, namespace);
  if (existing && !isArgoCdSecretOf(existing, s.namespace, s.name)) {
    throw new Error(`a Secret of that name exists and is not NICO's for ${s.namespace}/${s.name}`);
  }
  if (!existing) {
    try {
      await client.create(SECRETS, desired);
      s.deps.recorder.post(
        s.cluster,
        "Normal",
        "ArgoCDRegistered",
        `registered with Argo CD as ${atob(desired.data.name!)} (Secret ${namespace}/${name})`,
      );
      return "created";
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
      throw new Error("it was created meanwhile; NICO looks again", { cause: err });
    }
  }
  if (sameContent(existing, desired)) return undefined;
  await client.replace(SECRETS, {
    ...desired,
    metadata: { ...desired.metadata, resourceVersion: existing.metadata.resourceVersion! },
  });
  return "endpoint or credentials changed";
}

function sameContent(existing: Secret, desired: ArgoCdSecret): boolean {
  const json = (v: unknown) => JSON.stringify(v ?? {});
  return json(existing.data) === json(desired.data) &&
    json(existing.metadata.labels) === json(desired.metadata.labels) &&
    json(existing.metadata.annotations) === json(desired.metadata.annotations);
}

/**
 * Deletes the cluster's Argo CD cluster Secret (once per memory), when registration is on: Argo CD stops
 * deploying into a cluster that is being deleted. Only NICO's own Secret of that name is deleted.
 */
export async function deleteArgoCdSecret(c: ClusterContext): Promise<void> {
  const argoNs = c.deps.argocdNamespace;
  if (!argoNs || c.memory.argoCd === DELETED) return;
  const ns = c.cluster.metadata.namespace!;
  const name = argoCdSecretName(ns, c.cluster.metadata.name);
  try {
    const existing = await c.deps.client.get<Secret>(SECRETS, name, argoNs);
    if (existing && isArgoCdSecretOf(existing, ns, c.cluster.metadata.name)) {
      await c.deps.client.delete(SECRETS, name, argoNs, { uid: existing.metadata.uid! });
      c.log.info("deleted the Argo CD cluster Secret", { secret: `${argoNs}/${name}` });
    }
    c.memory.argoCd = DELETED;
  } catch (err) {
    // The deletion goes on (the cluster's own objects matter more); the Secret is tried again next pass.
    const message = `the Argo CD cluster Secret ${argoNs}/${name} was not deleted: ${errorMessage(err)}; ` +
      "delete it by hand if the cluster is gone before NICO could";
    if (c.memory.argoCdWarnings.allow(c.memory.key, "ArgoCDRegistrationFailed", message, Date.now())) {
      c.deps.recorder.post(c.cluster, "Warning", "ArgoCDRegistrationFailed", message);
    }
  }
}
