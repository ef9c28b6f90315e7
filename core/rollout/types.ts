/**
 * The rollout planner's shapes: what it is given of each node and of the
 * cluster ({@link RolloutInput}), and what it answers ({@link RolloutPlan}).
 * The planner is core/rollout/plan.ts, its rules core/rollout/rules.ts.
 *
 * @module
 */
import type { Plane } from "../machines/selection.ts";
import type { RolloutVersions } from "../versions/policy.ts";
import type { EtcdHold } from "../etcd/membership.ts";

export type RolloutOrder = "WorkersFirst" | "ControlPlaneFirst";

/** How a new cluster's nodes are first created: all at once, or the bootstrap node first and alone. */
export type ProvisioningMode = "Parallel" | "BootstrapFirst";

export interface PlanNode {
  machine: string;
  plane: Plane;
  /** Its NixosConfiguration exists. */
  exists: boolean;
  /** Its configuration carries the spec NICO wants now. */
  upToDate: boolean;
  /** NIO applied its current configuration and the Machine reports it. */
  available: boolean;
  /** NIO reports the apply failed, or it missed the node timeout. */
  failed: boolean;
  /** Short human state, for messages. */
  detail?: string;
  /** The workload API went away after this node's current change, which was not seen working (core/nodes/joined.ts). */
  suspect?: boolean;
  /** Unseen since the workload API came back moments ago: unavailable, but not down (core/nodes/joined.ts). */
  settling?: boolean;
  /** Changed while the workload API was away: in flight until it is seen working (core/nodes/joined.ts). */
  changedInOutage?: boolean;
  /** Its pending change changes the Kubernetes version it is asked for (core/versions/chain.ts). */
  versionChange?: boolean;
}

export interface DepartingNode {
  machine: string;
  plane: Plane;
  /** Its deletion is in progress (NIO applies #minimal). */
  deleting: boolean;
  /**
   * It is down (taken out of service, or its Node is not Ready): removing it takes nothing away, and a
   * control-plane node that is down leaves before any other control-plane node changes (etcd still counts it).
   */
  down?: boolean;
}

/**
 * The planner's input. Every field is required (an explicit `undefined` where a fact is absent), so a new input
 * fails to type-check until every builder gives it; the controller and `nico plan` both build it with
 * core/rollout/input.ts {@link plannerInput}.
 */
export interface RolloutInput {
  nodes: PlanNode[];
  departing: DepartingNode[];
  bootstrap: string;
  order: RolloutOrder;
  maxUnavailable: number;
  paused: boolean;
  /** The bootstrap node is the API endpoint (no controlPlaneEndpoint): it may not leave while others remain. */
  endpointIsBootstrap: boolean;
  /** Parallel only changes the first bring-up; BootstrapFirst creates the bootstrap node first and alone. */
  provisioning: ProvisioningMode;
  /** The cluster is new (its bootstrap node has never been up): no running node can be taken down by creating others. */
  firstBringUp: boolean;
  /** Why the workload cluster cannot be observed now; set: creations only. */
  hold: string | undefined;
  /**
   * Departed nodes whose configuration is gone but whose Machine NIO is not done with yet (its removal
   * flake may still run): no further removal starts until they are released.
   */
  releasing: string[];
  /** The Kubernetes versions the nodes report, for the skew guard (core/rollout/version_rules.ts); `undefined`: none known. */
  versions: RolloutVersions | undefined;
  /** etcd backups before control-plane steps (core/rollout/backuphold.ts); `undefined`: backups are not configured. */
  backup: BackupGate | undefined;
}

/** What the backup rule judges: the newest snapshot, the last failure, and since when each step is wanted. */
export interface BackupGate {
  /** `spec.etcd.backup.beforeChanges`. */
  policy: "Required" | "BestEffort";
  /** When the newest successful snapshot began (ms since the epoch); absent: none known. */
  lastSuccess?: number | undefined;
  /** The last failed attempt, when it failed (ms) and why (naming the store's error). */
  failure?: { at: number; message: string } | undefined;
  /** A snapshot is being taken now. */
  taking: boolean;
  /** When each control-plane step held for a snapshot was first wanted (ms), by machine; a step not listed: now. */
  since: ReadonlyMap<string, number>;
  /** This pass's time (ms). */
  now: number;
}

/** Control-plane steps held for a snapshot (or a pre-change snapshot skipped): status and the backup phase read it. */
export interface BackupHold {
  machines: string[];
  /** `taking`: a snapshot is wanted; `failed`: none can be taken (Required: halted); `skipped`: BestEffort went on. */
  state: "taking" | "failed" | "skipped";
  message: string;
  /** A skipped snapshot of another step, said alongside. */
  skipped?: string | undefined;
}

/** What the skew guard judges (core/versions/policy.ts). */
export type { RolloutVersions } from "../versions/policy.ts";

/** A node the plan would change or remove, held back until its drain finishes (core/rollout/drainhold.ts). */
export interface DrainHold {
  machine: string;
  state: "Draining" | "TimedOut";
  message: string;
}

export interface RolloutPlan {
  create: string[];
  update: string[];
  remove: string[];
  /** The rollout is halted at this node (`VersionSkew`: by the skew guard, the node's versions break the policy). */
  halted?: { machine: string; detail: string; reason?: "VersionSkew" | undefined } | undefined;
  /** Why nothing more happens in this pass, for people. */
  waiting?: string | undefined;
  /** Everything left to create or update, in the order the planner will do it. */
  pending: string[];
  /** Departing nodes, in removal order. */
  removing: string[];
  /** Nodes NIO is converging now. */
  updating: string[];
  /** Departing nodes kept on purpose (the bootstrap node while it is the API endpoint), with why. */
  held?: { machine: string; why: string } | undefined;
  /** Nodes the planner chose that wait for their drain (core/rollout/drainhold.ts), with what each waits for. */
  drainHeld?: DrainHold[] | undefined;
  /** Control-plane nodes the planner chose that wait for etcd (core/rollout/etcdhold.ts), with why. */
  etcdHeld?: EtcdHold[] | undefined;
  /** Control-plane steps that wait for an etcd snapshot (core/rollout/backuphold.ts). */
  backupHeld?: BackupHold | undefined;
}

/** What a rule answers: it decided the pass (the rules after it are not asked), or it passes. */
export type RuleAnswer = "decided" | "pass";

/** The pass being planned, as every rule reads it: the input, and its nodes in the order the planner takes them. */
export interface RolloutPass {
  readonly i: RolloutInput;
  /** Control-plane nodes, the bootstrap node first while it is missing, otherwise last; the rest by name. */
  readonly cp: readonly PlanNode[];
  /** Workers by name. */
  readonly workers: readonly PlanNode[];
  /** Departed nodes NIO is not done with yet, by name: no removal starts until they are released. */
  readonly releasing: readonly string[];
}

/** What the rules build: the plan's moves, each rule's reason for holding something back (`plan.waiting`), the order. */
export interface Draft {
  readonly plan: RolloutPlan;
  readonly reasons: string[];
  /** The order of this pass: `spec.rollout.order`, unless a rule says otherwise (a Kubernetes version change). */
  order: RolloutOrder;
}

/** One rule of the planner. */
export type Rule = (p: RolloutPass, d: Draft) => RuleAnswer;
