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
  ARGOCD_SECRET_TYPE_CLUSTER,
  ARGOCD_SECRET_TYPE_LABEL,
  argoCdClusterSecret,
  type ArgoCdSecret,
  argoCdSecretName,
  isArgoCdSecretOf,
  labelKeyList,
} from "../../../core/render/argocd.ts";
import { parseIssuedKubeconfig } from "../../../core/render/kubeconfig.ts";
import { isAlreadyExists } from "../../../lib/kube/errors.ts";
import { SECRETS } from "../../../lib/kube/resources.ts";
import { errorMessage } from "../../../lib/runtime/log.ts";
import { refusedTarget } from "../workload/targets.ts";
import { condition as setCondition, type ConditionInput } from "../../../core/status/conditions.ts";
import type { ClusterContext, ClusterScope } from "../scope.ts";
import { type Secret, secretValue } from "../secrets.ts";
import { postEvent } from "../../events.ts";

/** The memory's mark of a Secret NICO deleted (nothing to delete again). */
const DELETED = "deleted";

/**
 * Writes the Argo CD cluster Secret when Argo CD registration is on, the kubeconfig exists and something changed;
 * answers the `ArgoCDRegistered` condition (none while registration is off or there is no kubeconfig yet).
 */
export async function reconcileArgoCd(s: ClusterScope): Promise<ConditionInput | undefined> {
  const argoNs = s.deps.argocdNamespace;
  if (!argoNs) return undefined;
  const text = secretValue(s.cache.secret(kubeconfigSecret(s.name)), "value");
  if (!text) return undefined;
  let desired: ArgoCdSecret;
  try {
    const kubeconfig = parseIssuedKubeconfig(text);
    desired = argoCdClusterSecret({
      cluster: { namespace: s.namespace, name: s.name, labels: s.cluster.metadata.labels },
      argoCdNamespace: argoNs,
      kubeconfig,
      labelKeys: labelKeyList(s.deps.argocdLabelKeys),
      project: s.deps.argocdProject,
    });
  } catch {
    return undefined; // the kubeconfig phase re-issues an unreadable kubeconfig; the next pass registers it
  }
  const at = `${argoNs}/${desired.metadata.name}`;
  const registered = setCondition("ArgoCDRegistered", "True", "Registered", `registered as Secret ${at}`);
  // Argo CD connects where the Secret says: a server NICO itself may not reach is not handed to it either.
  const refused = s.deps.etcd ? refusedTarget(atob(desired.data.server!), s.deps.etcd.policy) : undefined;
  if (refused) {
    return setCondition(
      "ArgoCDRegistered",
      "False",
      "RegistrationFailed",
      `not registered with Argo CD, which would connect where NICO does not: ${refused}`,
    );
  }
  const digest = createHash("sha256").update(JSON.stringify(desired)).digest("hex");
  if (s.memory.argoCd === digest) return registered;
  try {
    const why = await writeArgoCdSecret(s, desired);
    s.memory.argoCd = digest;
    s.memory.argoCdWarnings.clear(s.memory.key);
    if (why) s.log.info("wrote the Argo CD cluster Secret", { secret: at, why });
    return registered;
  } catch (err) {
    const taken = err instanceof ServerTakenError;
    const message = `the Argo CD cluster Secret ${at} was not written: ${
      errorMessage(err)
    }; Argo CD does not see this cluster's current endpoint and credentials (docs/operations.md, GitOps)`;
    if (s.memory.argoCdWarnings.allow(s.memory.key, "ArgoCDRegistrationFailed", message, s.now.getTime())) {
      postEvent(s.deps.recorder, s.cluster, "ArgoCDRegistrationFailed", message);
    }
    return setCondition("ArgoCDRegistered", "False", taken ? "ServerTaken" : "RegistrationFailed", message);
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
  await checkServerFree(s, desired);
  if (!existing) {
    try {
      await client.create(SECRETS, desired);
      postEvent(
        s.deps.recorder,
        s.cluster,
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

/**
 * Refuses to register a server another cluster Secret of Argo CD already names (webhooks/endpoint_rules.ts
 * refuses the same endpoint at admission; this catches a race past it, and a cluster whose server is its
 * bootstrap node's address). Argo CD keeps one Secret per server: two would mix two clusters' credentials.
 * The other Secret is not named: it may be another tenant's.
 */
async function checkServerFree(s: ClusterScope, desired: ArgoCdSecret): Promise<void> {
  const server = serverKey(atob(desired.data.server!));
  const { items } = await s.deps.client.list<Secret>(SECRETS, {
    namespace: desired.metadata.namespace,
    labelSelector: `${ARGOCD_SECRET_TYPE_LABEL}=${ARGOCD_SECRET_TYPE_CLUSTER}`,
  });
  const taken = items.some((o) =>
    !isArgoCdSecretOf(o, s.namespace, s.name) && o.data?.server !== undefined &&
    serverKey(secretText(o.data.server)) === server
  );
  if (taken) throw new ServerTakenError(atob(desired.data.server!));
}

/** Another cluster Secret of Argo CD names this cluster's server. */
export class ServerTakenError extends Error {
  override readonly name = "ServerTakenError";
  constructor(server: string) {
    super(
      `Argo CD already has another cluster Secret for ${server}; NICO does not register a second one (Argo CD would ` +
        "mix the two clusters' credentials): give this cluster its own spec.controlPlaneEndpoint",
    );
  }
}

const serverKey = (url: string) => url.trim().replace(/\/+$/, "").toLowerCase();
const secretText = (b64: string) => {
  try {
    return atob(b64);
  } catch {
    return "";
  }
};

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
export async function deleteArgoCdSecret(c: ClusterContext, now: Date): Promise<void> {
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
    if (c.memory.argoCdWarnings.allow(c.memory.key, "ArgoCDRegistrationFailed", message, now.getTime())) {
      postEvent(c.deps.recorder, c.cluster, "ArgoCDRegistrationFailed", message);
    }
  }
}
