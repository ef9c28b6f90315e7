/**
 * The rollout planner's shapes: what it is given of each node and of the
 * cluster ({@link RolloutInput}), and what it answers ({@link RolloutPlan}).
 * The planner is core/rollout/plan.ts, its rules core/rollout/rules.ts.
 *
 * @module
 */
import type { Plane } from "../machines/selection.ts";
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

export interface RolloutInput {
  nodes: PlanNode[];
  departing: DepartingNode[];
  bootstrap: string;
  order: RolloutOrder;
  maxUnavailable: number;
  paused: boolean;
  /** The bootstrap node is the API endpoint (no controlPlaneEndpoint): it may not leave while others remain. */
  endpointIsBootstrap?: boolean;
  /** Default BootstrapFirst. Parallel only changes the first bring-up. */
  provisioning?: ProvisioningMode;
  /** The cluster is new (its bootstrap node has never been up): no running node can be taken down by creating others. */
  firstBringUp?: boolean;
  /** Why the workload cluster cannot be observed now; set: creations only. */
  hold?: string | undefined;
  /**
   * Departed nodes whose configuration is gone but whose Machine NIO is not done with yet (its removal
   * flake may still run): no further removal starts until they are released.
   */
  releasing?: string[];
}

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
  /** The rollout is halted at this node. */
  halted?: { machine: string; detail: string } | undefined;
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
}
