/**
 * Every condition type and reason NICO writes on a KubernetesCluster, as
 * data: what each type is to kstatus, and for each reason the status it is
 * written with, what it means ({@link Meaning}) and how urgently a change to
 * it is written ({@link Urgency}). Producers build conditions through
 * `condition()` of core/status/conditions.ts, typed from this registry, so a
 * reason that is not here does not compile; the status write policy
 * (core/status/write.ts), the CLI and the table in docs/troubleshooting.md
 * (`deno task crds`) read it.
 *
 * @module
 */
import type { Meaning, ReasonSpec, Status, TypeSpec } from "./types.ts";
import { READY, RECONCILING, STALLED } from "./summary.ts";
import {
  CONTROL_PLANE_HEALTHY,
  CONTROL_PLANE_READY,
  DATA_PLANE_READY,
  MACHINES_AVAILABLE,
  NODES_HEALTHY,
  REMEDIATING,
  WORKLOAD_API_AVAILABLE,
} from "./health.ts";
import { ETCD_HEALTHY } from "./etcd.ts";
import { ETCD_BACKED_UP } from "./backup.ts";
import { NIO_INCOMPLETE } from "./nio.ts";
import { RESTORING } from "./restore.ts";
import {
  ARGOCD_REGISTERED,
  KUBECONFIG_CURRENT,
  MACHINES_RELEASING,
  PAUSED,
  REVISION_RESOLVED,
  ROLLING_OUT,
  UP_TO_DATE,
} from "./rollout.ts";

export type { Meaning, ReasonSpec, Role, Status, TypeSpec, Urgency } from "./types.ts";

/** The registry, in the order the docs list it (and computeStatus writes the conditions). */
export const CONDITIONS = {
  Ready: READY,
  Reconciling: RECONCILING,
  Stalled: STALLED,
  ControlPlaneReady: CONTROL_PLANE_READY,
  DataPlaneReady: DATA_PLANE_READY,
  MachinesAvailable: MACHINES_AVAILABLE,
  RollingOut: ROLLING_OUT,
  UpToDate: UP_TO_DATE,
  Paused: PAUSED,
  RevisionResolved: REVISION_RESOLVED,
  MachinesReleasing: MACHINES_RELEASING,
  Remediating: REMEDIATING,
  KubeconfigCurrent: KUBECONFIG_CURRENT,
  ArgoCDRegistered: ARGOCD_REGISTERED,
  WorkloadAPIAvailable: WORKLOAD_API_AVAILABLE,
  NodesHealthy: NODES_HEALTHY,
  ControlPlaneHealthy: CONTROL_PLANE_HEALTHY,
  EtcdHealthy: ETCD_HEALTHY,
  EtcdBackedUp: ETCD_BACKED_UP,
  Restoring: RESTORING,
  NIOIncomplete: NIO_INCOMPLETE,
} as const satisfies Record<string, TypeSpec>;

type Registry = typeof CONDITIONS;

/** The types readers wait on (`watched`): turning True, or ceasing to be True, is written at once. */
export const WATCHED: readonly ConditionType[] = (Object.keys(CONDITIONS) as ConditionType[])
  .filter((type) => CONDITIONS[type].watched);

/** A condition type NICO writes. */
export type ConditionType = keyof Registry;

type ReasonsOf<T extends ConditionType> = Registry[T]["reasons"];

/** The reasons of `T` written with status `S` (any status when `S` is left out). */
export type ReasonOf<T extends ConditionType, S extends Status = Status> =
  & {
    [R in keyof ReasonsOf<T>]: ReasonsOf<T>[R] extends { status: S } ? R : never;
  }[keyof ReasonsOf<T>]
  & string;

/** The reasons of `T` written with status `S` that mean `M`. */
export type ReasonMeaning<T extends ConditionType, S extends Status, M extends Meaning> =
  & {
    [R in keyof ReasonsOf<T>]: ReasonsOf<T>[R] extends { status: S; meaning: M } ? R : never;
  }[keyof ReasonsOf<T>]
  & string;

/** One condition of type `T` as NICO writes it: a registered reason, with the status it is written with. */
export type ConditionOf<T extends ConditionType> = {
  [S in Status]: [ReasonOf<T, S>] extends [never] ? never
    : { type: T; status: S; reason: ReasonOf<T, S>; message: string };
}[Status];

/** Any condition NICO writes, before its bookkeeping (`lastTransitionTime`, `observedGeneration`). */
export type ConditionInput = { [T in ConditionType]: ConditionOf<T> }[ConditionType];

/** What stops a pass until the user acts: `Ready=False` and `Stalled=True` with this reason. */
export type StallReason = ReasonMeaning<"Ready", "False", "stalled"> & ReasonOf<"Stalled", "True">;

/** What stops a pass that NICO works through by itself: `Ready=False` and `Reconciling=True` with this reason. */
export type WaitReason =
  & Exclude<ReasonOf<"Ready", "False">, ReasonMeaning<"Ready", "False", "stalled">>
  & ReasonOf<"Reconciling", "True">;

/**
 * The registry's entry for a reason written with `status`; undefined for any other (an unknown type or reason,
 * or another status: what an older NICO, or NIO, wrote).
 *
 * @example
 * ```ts
 * import { reasonSpec } from "./mod.ts";
 * reasonSpec("Ready", "False", "WaitingForWorkers")?.meaning; // "progress"
 * reasonSpec("Ready", "True", "WaitingForWorkers"); // undefined
 * ```
 */
export function reasonSpec(type: string, status: string, reason: string | undefined): ReasonSpec | undefined {
  const spec = typeSpec(type);
  if (!spec || reason === undefined || !Object.hasOwn(spec.reasons, reason)) return undefined;
  const r = spec.reasons[reason]!;
  return r.status === status ? r : undefined;
}

/**
 * The registry's entry for a condition type; undefined for a type NICO does not write.
 *
 * @example
 * ```ts
 * import { typeSpec } from "./mod.ts";
 * typeSpec("Stalled")?.polarity; // "negative"
 * typeSpec("Applied"); // undefined
 * ```
 */
export function typeSpec(type: string): TypeSpec | undefined {
  return Object.hasOwn(CONDITIONS, type) ? (CONDITIONS as Record<string, TypeSpec>)[type] : undefined;
}

/**
 * Whether a reason stops NICO until the user acts (its `Ready` meaning is `stalled`).
 *
 * @example
 * ```ts
 * import { stalls } from "./mod.ts";
 * stalls("NoGitRepo"); // true
 * stalls("ResolvingRef"); // false
 * ```
 */
export function stalls(reason: StallReason | WaitReason): reason is StallReason {
  return reasonSpec("Ready", "False", reason)?.meaning === "stalled";
}

/**
 * Whether `c` is of `type` with `reason` (a reason the registry lists for that type: a typo does not compile).
 *
 * @example
 * ```ts
 * import { hasReason } from "./mod.ts";
 * hasReason({ type: "RollingOut", reason: "RolloutStalled" }, "RollingOut", "RolloutStalled"); // true
 * ```
 */
export function hasReason<C extends { type: string; reason?: string | undefined }, T extends ConditionType>(
  c: C | undefined,
  type: T,
  reason: ReasonOf<T>,
): c is C {
  return c?.type === type && c.reason === reason;
}

/**
 * The condition of `type` among `conditions` (a type the registry lists: a typo does not compile).
 *
 * @example
 * ```ts
 * import { conditionOf } from "./mod.ts";
 * conditionOf([{ type: "Ready", status: "True" }], "Ready")?.status; // "True"
 * ```
 */
export function conditionOf<C extends { type: string }>(
  conditions: readonly C[] | undefined,
  type: ConditionType,
): C | undefined {
  return conditions?.find((c) => c.type === type);
}

/** Every (type, reason) pair of the registry, in its order. */
export function registeredReasons(): { type: ConditionType; reason: string; spec: ReasonSpec }[] {
  return Object.entries(CONDITIONS).flatMap(([type, t]) =>
    Object.entries(t.reasons as Record<string, ReasonSpec>).map(([reason, spec]) => ({
      type: type as ConditionType,
      reason,
      spec,
    }))
  );
}
