/**
 * Changes to an existing cluster that would hurt it: a disk-wiping
 * reinstall, or a control plane that loses every member or more than one
 * at once. Pure; compares what the controller would select before and
 * after the change, so Machines lost for other reasons do not count.
 *
 * @module
 */
import { type ClusterRef, currentMembers, selectMachines } from "../core/selection.ts";
import type { KubernetesClusterSpec } from "../crds/kubernetescluster.ts";
import type { Machine, NixosConfiguration } from "../core/nio.ts";

/** What the update rules read. */
export interface UpdateContext {
  cluster: ClusterRef;
  oldSpec: KubernetesClusterSpec;
  spec: KubernetesClusterSpec;
  bootstrap?: string | undefined;
  machines: Machine[];
  configurations: NixosConfiguration[];
}

function sameList(a: readonly string[] | undefined, b: readonly string[] | undefined): boolean {
  const x = a ?? [];
  const y = b ?? [];
  return x.length === y.length && x.every((v, i) => v === y[i]);
}

/** The field a person changed to shrink the control plane. */
function controlPlaneField(oldSpec: KubernetesClusterSpec, spec: KubernetesClusterSpec): string {
  if (!sameList(oldSpec.controlPlane.machines, spec.controlPlane.machines)) return "spec.controlPlane.machines";
  if (oldSpec.controlPlane.count !== spec.controlPlane.count) return "spec.controlPlane.count";
  if (!sameList(oldSpec.dataPlane.machines, spec.dataPlane.machines)) return "spec.dataPlane.machines";
  return "spec.controlPlane.machineSelector";
}

/** Refusals for unsafe changes, each saying which change and why. */
export function updateProblems(ctx: UpdateContext): string[] {
  const out: string[] = [];
  if (!ctx.oldSpec.fullInstall && ctx.spec.fullInstall) {
    out.push(
      "spec.fullInstall: cannot change to true on an existing cluster: NIO would reinstall NixOS and WIPE THE DISK of every node, " +
        "destroying the cluster and its data; keep it false, or create a new cluster to reinstall from scratch",
    );
  }

  const current = currentMembers(ctx.cluster, ctx.configurations).controlPlane;
  if (current.length === 0) return out;
  const select = (spec: KubernetesClusterSpec) =>
    selectMachines({
      cluster: { ...ctx.cluster, spec },
      machines: ctx.machines,
      configurations: ctx.configurations,
      bootstrap: ctx.bootstrap,
    }).controlPlane.members;
  const before = new Set(select(ctx.oldSpec));
  const after = new Set(select(ctx.spec));
  const staying = current.filter((m) => before.has(m));
  const removed = staying.filter((m) => !after.has(m));
  if (removed.length === 0) return out;
  const field = controlPlaneField(ctx.oldSpec, ctx.spec);
  if (removed.length === staying.length) {
    out.push(
      `${field}: this change removes every current control-plane Machine (${removed.join(", ")}); ` +
        "the cluster's etcd data lives only on them: keep at least one and replace the others one at a time",
    );
  } else if (removed.length > 1) {
    out.push(
      `${field}: this change removes ${removed.length} control-plane Machines at once (${removed.join(", ")}), ` +
        "which can lose etcd quorum; remove one at a time and wait for the cluster to be Ready between steps",
    );
  }
  return out;
}
