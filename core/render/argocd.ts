/**
 * The Argo CD cluster Secret NICO keeps for each cluster when it registers clusters with Argo CD
 * (`--argocd-namespace`): the fields Argo CD documents for declarative clusters (operator manual,
 * "Declarative Setup", Clusters): the label `argocd.argoproj.io/secret-type: cluster`, `name`, `server` and
 * `config`, a JSON object whose `tlsClientConfig` holds the CA and the client certificate and key of the kubeconfig
 * NICO issued, each base64 of its PEM. Rendered from that kubeconfig, so it follows endpoint moves and renewals.
 * Pure.
 *
 * @module
 */
import { encodeBase64 } from "../../lib/encoding.ts";
import type { IssuedKubeconfig } from "./kubeconfig.ts";

/** The label Argo CD finds its cluster Secrets by, and its value for a cluster. */
export const ARGOCD_SECRET_TYPE_LABEL = "argocd.argoproj.io/secret-type";
export const ARGOCD_SECRET_TYPE_CLUSTER = "cluster";
/** On NICO's Argo CD cluster Secrets: the KubernetesCluster's namespace and name (the Secret lives elsewhere). */
export const ARGOCD_FOR_NAMESPACE_LABEL = "nico.homystack.com/cluster-namespace";
export const ARGOCD_FOR_NAME_LABEL = "nico.homystack.com/cluster-name";
/** Labels of the KubernetesCluster that are never copied: Argo CD's own keys stay NICO's to set. */
const ARGOCD_PREFIX = "argocd.argoproj.io/";

/**
 * Whether a label key of the KubernetesCluster is copied onto its Argo CD Secret: only keys the operator lists
 * (`--argocd-label-keys`: a key, or a prefix ending in `/` or `*`), never Argo CD's own; none by default. A tenant
 * labels its own cluster, and an ApplicationSet's cluster generator selects by those labels: a copied `env` label
 * would let a tenant join the platform team's ApplicationSets.
 *
 * @example
 * ```ts
 * import { copiedLabel } from "./argocd.ts";
 * copiedLabel("team", ["team", "example.com/"]); // true
 * copiedLabel("example.com/tier", ["team", "example.com/"]); // true
 * copiedLabel("env", ["team", "example.com/"]); // false
 * copiedLabel("env", []); // false
 * ```
 */
export function copiedLabel(key: string, allowed: readonly string[]): boolean {
  if (key.startsWith(ARGOCD_PREFIX)) return false;
  return allowed.some((a) =>
    a.endsWith("*") ? key.startsWith(a.slice(0, -1)) : a.endsWith("/") ? key.startsWith(a) : key === a
  );
}

/** The shape of a Secret as NICO writes it. */
export interface ArgoCdSecret {
  apiVersion: "v1";
  kind: "Secret";
  metadata: { name: string; namespace: string; labels: Record<string, string>; annotations: Record<string, string> };
  type: "Opaque";
  data: Record<string, string>;
}

/**
 * The cluster's name in Argo CD (an Application's `destination.name`): `<namespace>/<cluster>`, unique across
 * the namespaces NICO watches.
 *
 * @example
 * ```ts
 * import { argoCdClusterName } from "./argocd.ts";
 * argoCdClusterName("infra", "prod"); // "infra/prod"
 * ```
 */
export function argoCdClusterName(namespace: string, cluster: string): string {
  return `${namespace}/${cluster}`;
}

/**
 * The Secret's name in Argo CD's namespace: `nico.<cluster>.<namespace>` (cluster names hold no dot, so two
 * clusters never share one).
 *
 * @example
 * ```ts
 * import { argoCdSecretName } from "./argocd.ts";
 * argoCdSecretName("infra", "prod"); // "nico.prod.infra"
 * ```
 */
export function argoCdSecretName(namespace: string, cluster: string): string {
  return `nico.${cluster}.${namespace}`;
}

/**
 * The `config` of the Secret: TLS client configuration from the kubeconfig, with the server's certificate
 * checked against the cluster CA (never `insecure`).
 *
 * @example
 * ```ts
 * import { argoCdConfig } from "./argocd.ts";
 * argoCdConfig({ caPem: "CA", certPem: "CERT", keyPem: "KEY" }).tlsClientConfig.caData; // "Q0E="
 * ```
 */
export function argoCdConfig(kc: Pick<IssuedKubeconfig, "caPem" | "certPem" | "keyPem">): {
  tlsClientConfig: { insecure: false; caData: string; certData: string; keyData: string };
} {
  return {
    tlsClientConfig: {
      insecure: false,
      caData: encodeBase64(kc.caPem),
      certData: encodeBase64(kc.certPem),
      keyData: encodeBase64(kc.keyPem),
    },
  };
}

/**
 * The label keys of `--argocd-label-keys` (comma-separated).
 *
 * @example
 * ```ts
 * import { labelKeyList } from "./argocd.ts";
 * labelKeyList(" team, example.com/ ,"); // ["team", "example.com/"]
 * ```
 */
export function labelKeyList(text: string): string[] {
  return text.split(",").map((k) => k.trim()).filter((k) => k !== "");
}

/** What the Argo CD cluster Secret of a cluster is made from. */
export interface ArgoCdInput {
  /** The KubernetesCluster: its namespace, name and labels (copied, but for Argo CD's own keys). */
  cluster: { namespace: string; name: string; labels?: Record<string, string> | undefined };
  /** Argo CD's namespace (`--argocd-namespace`). */
  argoCdNamespace: string;
  /** The kubeconfig NICO issued, read back. */
  kubeconfig: Pick<IssuedKubeconfig, "server" | "caPem" | "certPem" | "keyPem">;
  /** Label keys copied from the cluster (`--argocd-label-keys`, see {@link copiedLabel}); default none. */
  labelKeys?: readonly string[] | undefined;
  /** The Argo CD project the cluster is scoped to (`--argocd-project`); absent: none. */
  project?: string | undefined;
}

/**
 * The Argo CD cluster Secret of a cluster.
 *
 * @example
 * ```ts
 * import { argoCdClusterSecret } from "./argocd.ts";
 * const s = argoCdClusterSecret({
 *   cluster: { namespace: "infra", name: "prod", labels: { env: "prod", team: "a" } },
 *   argoCdNamespace: "argocd",
 *   kubeconfig: { server: "https://api.prod.example.test:6443", caPem: "CA", certPem: "CERT", keyPem: "KEY" },
 *   labelKeys: ["team"],
 *   project: "tenant-a",
 * });
 * s.metadata.labels["argocd.argoproj.io/secret-type"]; // "cluster"
 * s.metadata.labels.team; // "a"
 * s.metadata.labels.env; // undefined
 * atob(s.data.server!); // "https://api.prod.example.test:6443"
 * atob(s.data.project!); // "tenant-a"
 * ```
 */
export function argoCdClusterSecret(i: ArgoCdInput): ArgoCdSecret {
  const { namespace, name } = i.cluster;
  const copied = Object.entries(i.cluster.labels ?? {}).filter(([k]) => copiedLabel(k, i.labelKeys ?? []));
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: {
      name: argoCdSecretName(namespace, name),
      namespace: i.argoCdNamespace,
      labels: {
        ...Object.fromEntries(copied),
        [ARGOCD_SECRET_TYPE_LABEL]: ARGOCD_SECRET_TYPE_CLUSTER,
        [ARGOCD_FOR_NAMESPACE_LABEL]: namespace,
        [ARGOCD_FOR_NAME_LABEL]: name,
        "app.kubernetes.io/managed-by": "nico",
      },
      annotations: { "nico.homystack.com/source": `KubernetesCluster ${namespace}/${name}, Secret ${name}-kubeconfig` },
    },
    type: "Opaque",
    data: {
      name: encodeBase64(argoCdClusterName(namespace, name)),
      server: encodeBase64(i.kubeconfig.server),
      config: encodeBase64(JSON.stringify(argoCdConfig(i.kubeconfig))),
      ...(i.project ? { project: encodeBase64(i.project) } : {}),
    },
  };
}

/**
 * Whether `secret` is NICO's Argo CD cluster Secret of cluster `namespace/name` (NICO replaces or deletes no
 * other Secret of that name).
 *
 * @example
 * ```ts
 * import { isArgoCdSecretOf } from "./argocd.ts";
 * const labels = { "nico.homystack.com/cluster-namespace": "infra", "nico.homystack.com/cluster-name": "prod" };
 * isArgoCdSecretOf({ metadata: { labels } }, "infra", "prod"); // true
 * isArgoCdSecretOf({ metadata: {} }, "infra", "prod"); // false
 * ```
 */
export function isArgoCdSecretOf(
  secret: { metadata: { labels?: Record<string, string> | undefined } },
  namespace: string,
  name: string,
): boolean {
  const l = secret.metadata.labels ?? {};
  return l[ARGOCD_FOR_NAMESPACE_LABEL] === namespace && l[ARGOCD_FOR_NAME_LABEL] === name;
}
