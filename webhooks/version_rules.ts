/**
 * Changes of `spec.version` worth a refusal or a word: a lower minor than
 * the control plane runs (Kubernetes does not go back a minor) is refused;
 * a jump over several minors is accepted and said to be chained; dropping
 * `spec.version` is said to hand the version back to the flake. What the
 * control plane runs is what its nodes report (`status.versions`), else the
 * highest of the old spec's version and what NICO last asked the control
 * plane for (`status.versions`: the target, the step, each control-plane
 * node's `asked`), so removing `spec.version` first does not open a
 * downgrade while no API server has reported. (That a value is a Kubernetes version at all is the
 * schema's: crds/version.ts.) Pure.
 *
 * @module
 */
import type { KubernetesClusterSpec, KubernetesClusterStatus } from "../crds/kubernetescluster.ts";
import {
  formatVersion,
  highest,
  type KubeVersion,
  lowest,
  parseReportedVersion,
  parseSpecVersion,
} from "../core/versions/version.ts";

/** The lowest version the control plane reports in `status`: its API servers (a node's kubelet when none answers). */
export function controlPlaneVersion(status: KubernetesClusterStatus | undefined): KubeVersion | undefined {
  const cp = new Set(status?.controlPlane?.machines ?? []);
  const reported = (status?.versions?.nodes ?? []).filter((n) => cp.has(n.name))
    .flatMap((n) => parseReportedVersion(n.apiServer ?? n.kubelet) ?? []);
  return lowest(reported);
}

/** The highest version NICO last asked the control plane for, as `status.versions` keeps it. */
export function lastAsked(status: KubernetesClusterStatus | undefined): KubeVersion | undefined {
  const v = status?.versions;
  const cp = new Set(status?.controlPlane?.machines ?? []);
  const asked = [v?.target, v?.step, ...(v?.nodes ?? []).filter((n) => cp.has(n.name)).map((n) => n.asked)];
  return highest(asked.flatMap((a) => (a === undefined ? [] : parseSpecVersion(a) ?? parseReportedVersion(a) ?? [])));
}

/**
 * Refusals and warnings for `spec.version` on an UPDATE from `oldSpec` (with the cluster's `status`).
 *
 * @example
 * ```ts
 * import { versionProblems } from "./version_rules.ts";
 * const status = { controlPlane: { ready: 1, total: 1, machines: ["cp-1"] }, versions: { nodes: [{ name: "cp-1", apiServer: "v1.31.4" }] } };
 * versionProblems({ version: "1.30" } as never, {} as never, status).errors.length; // 1
 * versionProblems({ version: "1.31.2" } as never, {} as never, status).errors.length; // 0
 * ```
 */
export function versionProblems(
  spec: KubernetesClusterSpec,
  oldSpec: KubernetesClusterSpec,
  status: KubernetesClusterStatus | undefined,
): { errors: string[]; warnings: string[] } {
  const errors: string[] = [];
  const warnings: string[] = [];
  const to = spec.version === undefined ? undefined : parseSpecVersion(spec.version);
  if (!to) {
    if (oldSpec.version !== undefined && spec.version === undefined) {
      warnings.push(
        "spec.version: removed; NICO asks the nodes for no version from now on, and each runs what the flake " +
          "gives it, which may be another version than now (the skew guard halts a rollout that would break the " +
          "version skew policy)",
      );
    }
    return { errors, warnings };
  }
  const runs = controlPlaneVersion(status);
  const old = oldSpec.version === undefined ? undefined : parseSpecVersion(oldSpec.version);
  const asked = lastAsked(status);
  const from = runs ?? highest([old, asked].filter((v) => v !== undefined));
  if (!from) return { errors, warnings };
  const where = runs
    ? `the control plane runs ${formatVersion(runs)}`
    : old && from.minor === old.minor
    ? `spec.version was ${formatVersion(from)}`
    : `NICO last asked the control plane for ${formatVersion(from)}`;
  if (to.minor < from.minor) {
    errors.push(
      `spec.version: ${formatVersion(to)} is a downgrade: ${where}, and Kubernetes does not support going back a ` +
        `minor; set spec.version to ${formatVersion({ minor: from.minor })} or later`,
    );
  } else if (to.minor - from.minor > 1) {
    const minors = Array.from({ length: to.minor - from.minor }, (_, k) => `1.${from.minor + k + 1}`);
    warnings.push(
      `spec.version: ${where}; NICO goes to ${formatVersion(to)} through ${minors.join(", ")} in turn: the control ` +
        "plane one minor at a time, each fully rolled out and reported before the next, then the workers",
    );
  }
  return { errors, warnings };
}
