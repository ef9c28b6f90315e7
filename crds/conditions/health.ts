/**
 * What the nodes and Machines are like: the planes (`ControlPlaneReady`,
 * `DataPlaneReady`), `MachinesAvailable`, the workload cluster
 * (`WorkloadAPIAvailable`, `NodesHealthy`, `ControlPlaneHealthy`) and
 * `Remediating`.
 *
 * @module
 */
import { reason, type TypeSpec } from "./types.ts";

const PLANE_REASONS = {
  NodesReady: reason(
    "True",
    "fine",
    "later",
    "every member is Ready and the plane has the size it asks for; `3/3 control plane machines ready` means exactly that",
    "nothing",
  ),
  NoMachines: reason("False", "attention", "later", "no Machine of the plane is selected", "see `MachinesAvailable`"),
  NodeFailed: reason("False", "stalled", "later", "a node of the plane failed", "as for `NodeFailed` in `Ready`"),
  Underprovisioned: reason(
    "False",
    "attention",
    "later",
    "the plane has fewer Machines than requested: it is not Ready however healthy its nodes are; the columns show " +
      "ready/requested",
    "add or free Machines (see `MachinesAvailable`), or lower `count`",
  ),
  WaitingForNodes: reason(
    "False",
    "progress",
    "later",
    "nodes are converging (the message names each and what it waits for), or not evaluated yet while a pass is " +
      "blocked (see `Ready`)",
    "nothing, unless it lasts: look at the named node's NixosConfiguration",
  ),
} as const;

export const CONTROL_PLANE_READY = {
  role: "detail",
  polarity: "positive",
  watched: false,
  about: "every control-plane member is Ready, and there are as many as requested",
  reasons: PLANE_REASONS,
} as const satisfies TypeSpec;

export const DATA_PLANE_READY = {
  role: "detail",
  polarity: "positive",
  watched: false,
  about: "every worker is Ready, and there are as many as requested",
  reasons: {
    ...PLANE_REASONS,
    NoWorkers: reason("True", "fine", "later", "the spec asks for no workers", "nothing"),
  },
} as const satisfies TypeSpec;

export const MACHINES_AVAILABLE = {
  role: "detail",
  polarity: "positive",
  watched: false,
  about: "each plane found the Machines it asks for; the message lists every selection problem",
  reasons: {
    MachinesSelected: reason("True", "fine", "later", "every plane has its Machines", "nothing"),
    Underprovisioned: reason(
      "False",
      "attention",
      "later",
      "fewer eligible Machines than `count`; NICO uses what there is. A Machine marked " +
        "`nico.homystack.com/remediated` (`OutOfService`: by NICO's remediation or a person) is not eligible",
      "add or free Machines matching the selector; once a marked host is repaired, " +
        "`kubectl annotate machine <name> nico.homystack.com/remediated-`",
    ),
    MachinesUnavailable: reason(
      "False",
      "attention",
      "later",
      "an explicitly listed Machine is missing, unreachable, taken or out of service (`OutOfService`), its host is " +
        "no host (`InvalidHost`: spaces inside, bad characters), or `<cluster>.<machine>` would pass 253 characters " +
        "(`NameTooLong`); the message says which and why",
      "fix the Machine (`spec.host`; the `nico.homystack.com/remediated-` mark of a repaired host) or the list; " +
        "shorten the cluster's or the Machine's name",
    ),
  },
} as const satisfies TypeSpec;

export const WORKLOAD_API_AVAILABLE = {
  role: "detail",
  polarity: "positive",
  watched: false,
  about: "the workload cluster's API answers with NICO's kubeconfig (when NICO watches workload clusters)",
  reasons: {
    Available: reason("True", "fine", "later", "the API server answers `/readyz` with NICO's kubeconfig", "nothing"),
    NotChecked: reason("Unknown", "progress", "later", "NICO has not asked the workload API yet", "nothing"),
    Unreachable: reason(
      "False",
      "attention",
      "later",
      "the workload API does not answer; the message says what it answered and for how long",
      "check the endpoint from NICO's pod with the kubeconfig Secret (`get --raw /readyz`)",
    ),
  },
} as const satisfies TypeSpec;

const UNREADABLE = {
  NoKubeconfig: reason(
    "Unknown",
    "progress",
    "later",
    "NICO has not issued the kubeconfig yet, so there is nothing to read Nodes with",
    "nothing: it comes with the bootstrap node",
  ),
  WorkloadAPIUnavailable: reason(
    "Unknown",
    "attention",
    "later",
    "the workload API cannot be read, so neither can its Nodes",
    "see `WorkloadAPIAvailable`",
  ),
} as const;

export const NODES_HEALTHY = {
  role: "detail",
  polarity: "positive",
  watched: false,
  about: "every applied node's Node is Ready and schedulable",
  reasons: {
    NodesReady: reason("True", "fine", "later", "every applied node's Node is Ready and schedulable", "nothing"),
    ...UNREADABLE,
    NodesNotReady: reason(
      "False",
      "attention",
      "later",
      "Nodes NotReady (their reason, and for how long)",
      "look at the named Nodes",
    ),
    NodesMissing: reason(
      "False",
      "attention",
      "later",
      "applied nodes with no Node of their name",
      "the Node must be named like the Machine (flake contract)",
    ),
    NodesCordoned: reason(
      "False",
      "attention",
      "later",
      "Nodes cordoned, by NICO for a drain (and for how long) or by someone else",
      "NICO uncordons only Nodes it cordoned",
    ),
  },
} as const satisfies TypeSpec;

export const CONTROL_PLANE_HEALTHY = {
  role: "detail",
  polarity: "positive",
  watched: false,
  about: "the API server is ready and every control-plane Node is Ready (per-member etcd health is not seen)",
  reasons: {
    Healthy: reason(
      "True",
      "fine",
      "later",
      "the API server NICO reaches is ready (`/readyz`, its etcd check included) and every control-plane Node is " +
        "Ready; what is and is not checked: readiness.md",
      "nothing",
    ),
    ...UNREADABLE,
    ControlPlaneNodesNotReady: reason(
      "False",
      "attention",
      "later",
      "a control-plane Node is not Ready",
      "as for `NodesNotReady` in `NodesHealthy`",
    ),
  },
} as const satisfies TypeSpec;

const refused = (means: string, todo: string) => reason("False", "attention", "now", means, todo);

export const REMEDIATING = {
  role: "detail",
  polarity: "negative",
  watched: true,
  about: "NICO is replacing unhealthy nodes (with `spec.<plane>.remediation`), or why it replaces none",
  reasons: {
    Remediating: reason(
      "True",
      "progress",
      "now",
      "a Machine taken out of service has not left yet; the message says what replaces it and where its departure " +
        "stands (GitOps: in progress)",
      "nothing; if it lasts, see `MachinesReleasing` (NIO still removing the dead node)",
    ),
    NoUnhealthyNodes: reason("False", "fine", "later", "no node is unhealthy", "nothing"),
    TooManyUnhealthy: refused(
      "more nodes of a plane are unhealthy than `remediation.maxUnhealthy` allows; NICO replaces none",
      "bring them back (power, network), raise `maxUnhealthy`, or mark a Machine by hand " +
        "(`nico.homystack.com/remediated`)",
    ),
    QuorumWouldBeLost: refused(
      "too few healthy control-plane members for etcd quorum (2 of 3 dead; a one-node control plane); NICO " +
        "replaces none",
      "bring a member back, or restore etcd from a backup " +
        "([readiness](readiness.md#remediation-specplaneremediation))",
    ),
    NoSpare: refused(
      "control plane: no free Machine matches the selector, so the dead member stays; workers: the dead node left " +
        "and the plane is `Underprovisioned`",
      "add a Machine matching the selector, or repair the host and remove its mark",
    ),
    ExplicitMachines: refused(
      "a node of an explicit `machines` list is unhealthy and no spare is free; NICO does not change the list",
      "replace it in `spec.<plane>.machines`, or add `spec.<plane>.spares`",
    ),
    RetryLimit: refused(
      "replacements failed too, `maxRetries` times within `retryPeriod`: likely the flake or a bad batch of Machines",
      "check them; remove the marks of repaired Machines (or wait for the period)",
    ),
    OneAtATime: refused(
      "control plane: one member is replaced at a time; the next waits for the first to leave",
      "wait",
    ),
    WorkloadAPIUnavailable: refused(
      "control plane: NICO cannot see whether the other members keep quorum while the workload API does not answer",
      "wait; see `WorkloadAPIAvailable`",
    ),
    BootstrapIsEndpoint: refused(
      "the unhealthy node is the bootstrap node and the API endpoint: a replacement would leave the kubeconfig " +
        "pointing at a dead address",
      "set `spec.controlPlaneEndpoint` to an address that outlives the node",
    ),
    Provisioning: refused(
      "NICO remediates nothing during the cluster's first bring-up",
      "mark a Machine out of service by hand (`nico.homystack.com/remediated`) to have it replaced",
    ),
    Paused: refused("the cluster is paused: NICO takes nothing out of service", "lift the pause"),
  },
} as const satisfies TypeSpec;
