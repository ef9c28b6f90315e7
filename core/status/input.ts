/**
 * What the status of a pass is computed from: {@link StatusInput} and the
 * ways a pass can stop ({@link Problem}, {@link Blocked}). Types only, so
 * that the modules of core/status import them without importing each other.
 *
 * @module
 */
import type { RestoreStatus } from "../../crds/restore.ts";
import type { EtcdStatus, KubernetesClusterStatus } from "../../crds/kubernetescluster.ts";
import type { ConditionInput, StallReason, WaitReason } from "../../crds/conditions/mod.ts";
import type { NodeReport } from "../nodes/readiness.ts";
import type { RolloutPlan } from "../rollout/plan.ts";
import type { Selection } from "../machines/selection.ts";

/**
 * Why a pass stopped before it could render nodes. A reason that stalls (its `Ready` meaning is `stalled`: only
 * the user can lift it) makes `Stalled=True`; any other lifts itself (a ref resolving, Machines arriving) and
 * keeps the cluster `Reconciling`.
 */
export interface Blocked {
  reason: StallReason | WaitReason;
  message: string;
}

/** The spec's repository and ref have no commit yet: resolving (this pass did not evaluate the spec), or failing. */
export interface Unresolved {
  reason: "ResolvingRef" | "RefResolutionFailed";
  message: string;
}

/**
 * Something that stopped this pass, shown as `Ready=False` with its reason
 * and message. `blocking`: the user must act (phase `Failed`, `Stalled=True`);
 * otherwise (an error NICO did not foresee) the phase is what the
 * observations say and NICO retries.
 */
export type Problem =
  | { reason: StallReason; message: string; blocking: true }
  | { reason: "ReconcileError"; message: string; blocking: false };

export interface StatusInput {
  generation: number;
  previous: KubernetesClusterStatus | undefined;
  deleting: boolean;
  selection: Selection;
  nodes: NodeReport[];
  bootstrap: string | undefined;
  endpoint: string | undefined;
  /** Set only when the kubeconfig Secret exists. */
  kubeconfigSecret: string | undefined;
  /** The commit nodes are pinned to. */
  revision?: string | undefined;
  /** A problem that stops NICO before it can render nodes (for example no gitRepo). */
  blocked?: Blocked | undefined;
  /** The spec's repository and ref have no commit yet. */
  unresolved?: Unresolved | undefined;
  /**
   * This pass evaluated the current generation (default true). A pass that did not (a ref still resolving, a
   * pass cut short before it planned) keeps `observedGeneration` where it was, so nobody mistakes its status for
   * the answer to the new spec.
   */
  evaluated?: boolean | undefined;
  /** Extra conditions computed elsewhere. */
  extra?: ConditionInput[];
  /** The rollout planner's view of this pass. */
  rollout?: { plan: RolloutPlan; paused: boolean; specHash: string; controlPlaneSize: number } | undefined;
  /**
   * The Kubernetes versions (core/versions/cluster.ts): `status.version` and `status.versions`, and why
   * `spec.version` is not rolled out when it asks for a downgrade.
   */
  versions?:
    | { status: Pick<KubernetesClusterStatus, "version" | "versions">; downgrade?: string | undefined }
    | undefined;
  /** `status.restore`, where a restore was asked for (absent: the previous one is kept). */
  restore?: RestoreStatus | undefined;
  /** `status.etcd`, where NICO sees etcd (core/etcd/health.ts). */
  etcd?: EtcdStatus | undefined;
  /** The workload API, when NICO watches workload clusters: the cluster is Ready only while it answers. */
  workloadApi?: { available: boolean; message: string } | undefined;
  now: Date;
}
