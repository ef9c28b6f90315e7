/**
 * Changes to an existing cluster that would hurt it (a disk-wiping
 * reinstall, a control plane that loses every member), and changes worth a
 * word (several control-plane Machines leaving, which the rollout does one
 * at a time; the bootstrap node held as the API endpoint). Pure; compares what the controller would select before and
 * after the change, so Machines lost for other reasons do not count.
 *
 * @module
 */
import { type ClusterRef, currentMembers, type Selection, selectMachines } from "../core/machines/selection.ts";
import type { KubernetesClusterSpec } from "../crds/kubernetescluster.ts";
import type { Machine, NixosConfiguration } from "../core/contract/nio.ts";

/** What the update rules read. */
export interface UpdateContext {
  cluster: ClusterRef;
  oldSpec: KubernetesClusterSpec;
  spec: KubernetesClusterSpec;
  bootstrap?: string | undefined;
  machines: Machine[];
  configurations: NixosConfiguration[];
  /** The selection of `spec`, when the caller already made it (validation does): not selected again. */
  selection?: Selection | undefined;
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

/** Refusals for unsafe changes and warnings for slow ones, each saying which change and why. */
export function updateProblems(ctx: UpdateContext): { errors: string[]; warnings: string[] } {
  const out: string[] = [];
  const warnings: string[] = [];
  if (!ctx.oldSpec.fullInstall && ctx.spec.fullInstall) {
    out.push(
      "spec.fullInstall: cannot change to true on an existing cluster: NIO would reinstall NixOS and WIPE THE DISK of every node, " +
        "destroying the cluster and its data; keep it false, or create a new cluster to reinstall from scratch",
    );
  }

  const current = currentMembers(ctx.cluster, ctx.configurations).controlPlane;
  if (current.length === 0) return { errors: out, warnings };
  const select = (spec: KubernetesClusterSpec) =>
    selectMachines({
      cluster: { ...ctx.cluster, spec },
      machines: ctx.machines,
      configurations: ctx.configurations,
      bootstrap: ctx.bootstrap,
    });
  const before = new Set(select(ctx.oldSpec).controlPlane.members);
  const after = new Set((ctx.selection ?? select(ctx.spec)).controlPlane.members);
  const staying = current.filter((m) => before.has(m));
  const removed = staying.filter((m) => !after.has(m));
  const field = controlPlaneField(ctx.oldSpec, ctx.spec);
  const held = ctx.bootstrap && !ctx.spec.controlPlaneEndpoint && before.has(ctx.bootstrap) &&
    !after.has(ctx.bootstrap) &&
    after.size > 0;
  if (held && removed.length < staying.length) {
    warnings.push(
      `${field}: ${ctx.bootstrap} is the bootstrap node and the cluster's API endpoint; NICO keeps it until ` +
        "spec.controlPlaneEndpoint is set, so set that first (or with this change) to let it go",
    );
  }
  if (removed.length === 0) return { errors: out, warnings };
  if (removed.length === staying.length) {
    out.push(
      `${field}: this change removes every current control-plane Machine (${removed.join(", ")}); ` +
        "the cluster's etcd data lives only on them: keep at least one and replace the others one at a time",
    );
  } else if (removed.length > 1) {
    // The rollout removes them one at a time, each only while every other control-plane node is ready.
    warnings.push(
      `${field}: this change removes ${removed.length} control-plane Machines (${removed.join(", ")}); ` +
        "NICO adds any new ones first, then removes these one at a time, each only once every other control-plane node is ready",
    );
  }
  return { errors: out, warnings };
}
