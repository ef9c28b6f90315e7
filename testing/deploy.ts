/**
 * deploy/ on the local control plane: apply only the RBAC of an install
 * variant (no Deployment, no webhook configurations pointing at a Service
 * that does not exist), and a client for NICO's ServiceAccount.
 *
 * @module
 */
import { parseAllDocuments, stringify } from "yaml";
import type { ControlPlane } from "./envtest/controlplane.ts";

const ROOT = new URL("../", import.meta.url).pathname;

/** NICO's ServiceAccount, as the API server names its user. */
export const NICO_SA_USER = "system:serviceaccount:nico-system:nico";

/** The install variants in deploy/: everything cluster-wide, or confined to the namespace `clusters`. */
export const VARIANTS = {
  "cluster-wide": { dir: `${ROOT}deploy/`, namespace: undefined },
  "namespaced": { dir: `${ROOT}deploy/namespaced/`, namespace: "clusters" },
} as const;
export type Variant = keyof typeof VARIANTS;

/** The objects that say what NICO may do: RBAC, and the admission policy on its webhook configurations. */
const RBAC_KINDS = new Set([
  "Namespace",
  "ServiceAccount",
  "Role",
  "RoleBinding",
  "ClusterRole",
  "ClusterRoleBinding",
  "ValidatingAdmissionPolicy",
  "ValidatingAdmissionPolicyBinding",
]);

/**
 * Applies the namespaces, RBAC objects and admission policy of `variant` (rendered by
 * `kubectl kustomize`), after removing the other variant's cluster-wide
 * binding so that the two never add up.
 */
export async function applyRbac(cp: ControlPlane, variant: Variant): Promise<void> {
  const rendered = await cp.kubectl(["kustomize", VARIANTS[variant].dir]);
  if (rendered.code !== 0) throw new Error(`kubectl kustomize ${VARIANTS[variant].dir}: ${rendered.stderr}`);
  const docs = parseAllDocuments(rendered.stdout).map((d) => d.toJS() as { kind?: string })
    .filter((o) => o.kind && RBAC_KINDS.has(o.kind));
  for (const leftover of ["clusterrolebinding/nico", "rolebinding/nico -n clusters"]) {
    await cp.kubectl(["delete", "--ignore-not-found", ...leftover.split(" ")]);
  }
  const ordered = [...docs.filter((o) => o.kind === "Namespace"), ...docs.filter((o) => o.kind !== "Namespace")];
  const out = await cp.kubectl(["apply", "--server-side", "--force-conflicts", "-f", "-"], {
    stdin: ordered.map((o) => stringify(o)).join("---\n"),
  });
  if (out.code !== 0) throw new Error(`applying the RBAC of ${variant}: ${out.stderr}`);
}

/** A kubeconfig for NICO's ServiceAccount (a client certificate for its user name and groups). */
export function serviceAccountKubeconfig(cp: ControlPlane): Promise<string> {
  return cp.userKubeconfig(NICO_SA_USER, ["system:serviceaccounts", "system:serviceaccounts:nico-system"]);
}
