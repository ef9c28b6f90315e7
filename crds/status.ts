/**
 * The `KubernetesCluster` status schema (`status`): observed state, recomputed from the cluster's objects on
 * every pass. Part of the one zod schema of crds/kubernetescluster.ts, which re-exports it.
 *
 * @module
 */
import { z } from "zod";
import { StatusVersion, VersionsStatus } from "./version.ts";
import { BackupsStatus } from "./backup.ts";
import { RestoreStatus } from "./restore.ts";

export const ConditionStatus = z.enum(["True", "False", "Unknown"]);

export const Condition = z.object({
  type: z.string().min(1).max(316).describe("Kind of condition, in CamelCase, such as Ready."),
  status: ConditionStatus.describe("True, False or Unknown."),
  observedGeneration: z.int().min(0).optional()
    .describe("metadata.generation the condition was computed for."),
  lastTransitionTime: z.string().describe("When status last changed, RFC 3339.").meta({ format: "date-time" }),
  reason: z.string().min(1).max(1024).describe("CamelCase reason for the last transition, for programs."),
  message: z.string().max(32768).describe("What is happening, for people."),
}).describe("A metav1.Condition.");

export const PlaneStatus = z.object({
  ready: z.int().min(0).describe(
    "Ready nodes: NIO applied their configuration and their Node is Ready in the workload cluster.",
  ),
  applied: z.int().min(0).optional().describe(
    "Nodes whose configuration NIO has applied (Ready or not in the workload cluster).",
  ),
  total: z.int().min(0).describe("Nodes selected for this plane."),
  requested: z.int().min(0).optional().describe(
    "Nodes the spec asks for (the list's length or count); the plane is Ready only when this many are ready.",
  ),
  summary: z.string().optional().describe("ready/requested, for kubectl get."),
  readyMachines: z.array(z.string()).optional().describe("Names of the Ready Machines (Node Ready too), sorted."),
  machines: z.array(z.string()).optional().describe("Names of all selected Machines, sorted."),
}).describe("Readiness of one plane.");

export const EtcdMemberStatus = z.object({
  name: z.string().describe("The member's name; empty for a member added but never started."),
  memberID: z.string().describe("The member id (a decimal uint64)."),
  peerURL: z.string().optional().describe("Its first peer URL: its node's address in the flake contract."),
  node: z.string().optional().describe("The control-plane Machine on the peer URL's address, if any."),
  healthy: z.boolean().describe("It answered its status in time, with no errors, knowing a leader."),
  leader: z.boolean().describe("It leads."),
  learner: z.boolean().describe("A learner: it does not vote and is not counted."),
  alarms: z.array(z.string()).optional().describe("Alarms raised on it (NOSPACE, CORRUPT)."),
}).describe("One etcd member as NICO last saw it.");

export const EtcdStatus = z.object({
  members: z.array(EtcdMemberStatus).describe("The member list, as etcd gave it, with each member's health."),
  voters: z.int().min(0).describe("Voting members (learners are not)."),
  healthyVoters: z.int().min(0).describe("Voting members that are healthy."),
  quorum: z.int().min(0).describe("A majority of the voters: etcd needs this many healthy."),
  tolerance: z.int().describe("Healthy voters above the quorum: how many more it can lose (negative: lost)."),
  counted: z.string().describe("Which members the quorum rules counted, for people."),
  backups: BackupsStatus.optional(),
}).describe("Stacked etcd, read from etcd's own client API (absent while NICO cannot see it; see EtcdHealthy).");

export const Phase = z.enum(["Provisioning", "Ready", "Updating", "Failed", "Deleting"]);

export const KubernetesClusterStatus = z.object({
  phase: Phase.optional().describe(
    "Provisioning (first bring-up), Ready (every node applied), Updating (a running cluster has nodes that do not run the desired configuration yet; Node health alone never makes it Updating), Failed (exactly while Stalled is True: a node failed, the rollout is halted, or the spec cannot be used; see conditions) or Deleting.",
  ),
  observedGeneration: z.int().min(0).optional().describe(
    "The last metadata.generation NICO evaluated. A pass that has not evaluated the current one yet (its ref is still resolving) keeps the previous, so this equal to metadata.generation means the status answers the current spec.",
  ),
  controlPlane: PlaneStatus.optional().describe("Control-plane readiness."),
  dataPlane: PlaneStatus.optional().describe("Worker readiness."),
  bootstrapNode: z.string().optional()
    .describe("The control-plane Machine that initialised the cluster; kept stable for the life of the cluster."),
  initialization: z.object({
    provisioned: z.boolean().optional().describe(
      "The first bring-up finished: the cluster was Ready once. From then on it is never Provisioning again.",
    ),
  }).optional().describe("Milestones of the cluster's life that stay true once reached."),
  endpoint: z.string().optional().describe("https://host:port of the cluster's Kubernetes API."),
  kubeconfigSecret: z.string().optional()
    .describe("Secret (key value) holding an admin kubeconfig; set only once the Secret exists."),
  revision: z.string().optional().describe("The commit of gitRepo that nodes are pinned to, when NICO resolved ref."),
  version: StatusVersion.optional(),
  versions: VersionsStatus.optional(),
  rollout: z.object({
    specHash: z.string().optional().describe("Hash of the cluster-wide desired configuration being rolled out."),
    upToDate: z.int().min(0).describe(
      "Nodes running the desired configuration (NIO applied it), whether or not their Node is Ready.",
    ),
    total: z.int().min(0).describe("Nodes in the cluster."),
    updating: z.array(z.string()).optional().describe(
      "Nodes whose configuration carries the desired spec and that NIO has not applied yet.",
    ),
    pending: z.array(z.string()).optional().describe(
      "The plan: nodes still to update, in the order NICO will update them.",
    ),
    removing: z.array(z.string()).optional().describe("Departing nodes, in the order NICO will remove them."),
    draining: z.array(z.object({
      node: z.string().describe("The node the rollout would change or remove now."),
      state: z.enum(["Draining", "TimedOut"]).describe(
        "Draining: its pods are still leaving; TimedOut: past spec.rollout.drain.timeout with onTimeout Halt.",
      ),
      message: z.string().describe("What the drain did and waits for (the PodDisruptionBudget or pods it names)."),
    })).optional().describe(
      "Nodes held back in this pass until their drain finishes (see spec.rollout.drain); absent when none is.",
    ),
    etcdHeld: z.array(z.object({
      node: z.string().describe("The control-plane node the rollout would create, change or remove now."),
      message: z.string().describe(
        "What it waits for in etcd (a leadership move, a member's removal, quorum, a voter that does not answer).",
      ),
    })).optional().describe("Control-plane nodes held back in this pass for etcd; absent when none is."),
    paused: z.boolean().optional().describe(
      'True while the rollout is paused (spec.paused, or the nico.homystack.com/paused annotation set to "true"): NICO changes no node. Absent when it is not.',
    ),
    halted: z.object({
      node: z.string().describe("The node the rollout is halted at."),
      detail: z.string().describe("Why, in short (the node's state, or the version skew it breaks)."),
      reason: z.enum(["VersionSkew"]).optional().describe(
        "VersionSkew: the skew guard halted it (the node's versions break Kubernetes' skew policy); absent: the node failed.",
      ),
    }).optional().describe(
      "Where the rollout is halted (RollingOut is RolloutStalled): nothing else is touched until the node recovers or the spec changes. Absent when it is not halted.",
    ),
  }).optional().describe("Progress of the current rollout."),
  etcd: EtcdStatus.optional(),
  restore: RestoreStatus.optional(),
  shard: z.string().optional().describe(
    "The shard that reconciles this cluster (its nico.homystack.com/shard label, run with nico run --shard); absent: the default shard.",
  ),
  conditions: z.array(Condition).optional().describe(
    "Ready (the summary), Reconciling and Stalled (the kstatus conditions: in progress, or stuck until the user acts), ControlPlaneReady, DataPlaneReady, MachinesAvailable, RollingOut, UpToDate and others.",
  )
    .meta({ "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"] }),
}).describe("Observed state, recomputed from the cluster's objects on every reconcile.");

export type KubernetesClusterStatus = z.output<typeof KubernetesClusterStatus>;
export type Condition = z.output<typeof Condition>;
export type PlaneStatus = z.output<typeof PlaneStatus>;
export type Phase = z.output<typeof Phase>;
export type EtcdStatus = z.output<typeof EtcdStatus>;
/** Every phase, in the order the CRD lists them (metrics start each at zero). */
export const PHASES: readonly Phase[] = Phase.options;
