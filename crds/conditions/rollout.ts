/**
 * The rollout's conditions: `RollingOut`, `UpToDate`, `Paused`, and what a
 * change waits for: `RevisionResolved`, `KubeconfigCurrent`,
 * `MachinesReleasing`.
 *
 * @module
 */
import { reason, type TypeSpec } from "./types.ts";

const RESOLVING = "the spec changed and its commit is not known yet: nothing rolls out, and `observedGeneration` " +
  "stays at the previous generation until it is";
const UNRESOLVABLE = "the spec's commit cannot be resolved: nothing rolls out; nodes stay where they are";

export const ROLLING_OUT = {
  role: "detail",
  polarity: "negative",
  watched: false,
  about: "a change is being rolled out to the nodes, or why none is",
  reasons: {
    RollingOut: reason(
      "True",
      "progress",
      "later",
      "a change is being rolled out; the message says which node is updating and what it waits for (and, with " +
        "fewer than 3 control-plane nodes, that an update of the control plane interrupts the Kubernetes API)",
      "nothing",
    ),
    RolloutComplete: reason("False", "fine", "later", "every node runs the desired configuration", "nothing"),
    RolloutStalled: reason(
      "False",
      "stalled",
      "later",
      "the rollout is halted at a node and nothing else is touched: the node failed (with `NodeNotReady`: its Node " +
        "stayed missing or NotReady past the node timeout), its drain did not finish within " +
        "`spec.rollout.drain.timeout` (`DrainTimeout`: a PodDisruptionBudget, or pods with emptyDir data), or its " +
        "Kubernetes version breaks the version skew policy (`VersionSkew`: see `Stalled`), or the etcd snapshot " +
        "a control-plane step waits for cannot be taken (`BackupFailed`, with `beforeChanges: Required`: see " +
        "`EtcdBackedUp`)",
      "fix the node (the rollout resumes once NIO applies and its Node is Ready) or change the spec (the failed " +
        "node is re-rendered first); for a drain, let the budget allow it, set `deleteEmptyDirData`, or " +
        "`onTimeout: Proceed` (the message names the pods); for a version skew, as for `VersionSkew` in `Stalled`; for a " +
        "backup, fix the store (the step goes on once a snapshot is taken) or set `beforeChanges: BestEffort`",
    ),
    RemovalHeld: reason(
      "False",
      "attention",
      "later",
      "the bootstrap node left the control plane but is the API endpoint, so NICO keeps it",
      "set `spec.controlPlaneEndpoint` (a stable address of the API); NICO then removes it",
    ),
    Paused: reason(
      "False",
      "attention",
      "later",
      "nodes are pending while `spec.paused` or the `nico.homystack.com/paused` annotation is set",
      "clear both to continue",
    ),
    ResolvingRef: reason("False", "progress", "later", RESOLVING, "nothing; see `RevisionResolved` if it lasts"),
    RefResolutionFailed: reason("False", "stalled", "later", UNRESOLVABLE, "see `RevisionResolved`"),
  },
} as const satisfies TypeSpec;

export const UP_TO_DATE = {
  role: "detail",
  polarity: "positive",
  watched: false,
  about: "every node runs the desired configuration",
  reasons: {
    UpToDate: reason("True", "fine", "later", "every node runs the desired configuration", "nothing"),
    RolloutPending: reason(
      "False",
      "progress",
      "later",
      "some nodes do not run the desired configuration yet; the message is the plan, in order",
      "nothing, or pause to hold it",
    ),
    ResolvingRef: reason("Unknown", "progress", "later", RESOLVING, "nothing; see `RevisionResolved` if it lasts"),
    RefResolutionFailed: reason("Unknown", "stalled", "later", UNRESOLVABLE, "see `RevisionResolved`"),
  },
} as const satisfies TypeSpec;

export const PAUSED = {
  role: "detail",
  polarity: "negative",
  watched: true,
  about: "whether changes are held (`spec.paused` or the `nico.homystack.com/paused` annotation)",
  reasons: {
    Paused: reason(
      "True",
      "attention",
      "later",
      "NICO changes no child object until `spec.paused` and the annotation are cleared; status still updates",
      "clear `spec.paused` and the `nico.homystack.com/paused` annotation to go on",
    ),
    NotPaused: reason("False", "fine", "later", "changes are rolled out", "nothing"),
  },
} as const satisfies TypeSpec;

export const REVISION_RESOLVED = {
  role: "detail",
  polarity: "positive",
  watched: false,
  about: "the commit `ref` resolves to, which every node is pinned to (with `--resolve-refs`)",
  reasons: {
    Resolved: reason("True", "fine", "later", "`ref` resolved; the message names the commit", "nothing"),
    Resolving: reason(
      "Unknown",
      "progress",
      "later",
      "NICO is resolving `ref` to a commit; nodes stay on the commit they have",
      "nothing, unless it lasts",
    ),
    ResolveFailed: reason(
      "False",
      "attention",
      "later",
      "NICO cannot resolve `ref` to a commit (the message says why); nodes stay on the commit they have",
      'fix the URL, ref or credentials; see "Pinned revisions" in operations.md',
    ),
  },
} as const satisfies TypeSpec;

export const KUBECONFIG_CURRENT = {
  role: "detail",
  polarity: "positive",
  watched: false,
  about: "the kubeconfig names the endpoint the spec asks for",
  reasons: {
    EndpointServed: reason("True", "fine", "later", "the kubeconfig names the spec's endpoint", "nothing"),
    WaitingForControlPlane: reason(
      "False",
      "progress",
      "later",
      "`controlPlaneEndpoint` changed; the kubeconfig keeps the old server until every control-plane node runs the " +
        "configuration with the new one",
      "nothing: it switches when the rollout reaches the last control-plane node; if the rollout halted, fix that node",
    ),
  },
} as const satisfies TypeSpec;

export const ARGOCD_REGISTERED = {
  role: "detail",
  polarity: "positive",
  watched: false,
  about: "the cluster's Argo CD cluster Secret is written (absent unless NICO runs with `--argocd-namespace`)",
  reasons: {
    Registered: reason(
      "True",
      "fine",
      "later",
      "Argo CD's namespace holds the cluster's Secret as NICO rendered it",
      "nothing",
    ),
    ServerTaken: reason(
      "False",
      "attention",
      "later",
      "another cluster Secret of Argo CD already names this cluster's API server; NICO writes no second one " +
        "(Argo CD keeps one Secret per server and would mix the two clusters' credentials)",
      "give the cluster its own `spec.controlPlaneEndpoint` (or ask the operator which cluster holds that server)",
    ),
    RegistrationFailed: reason(
      "False",
      "attention",
      "later",
      "the Secret could not be written (no such namespace, no rights there, a foreign Secret of that name); the " +
        "message says why",
      "ask the operator to fix Argo CD's namespace or NICO's rights there",
    ),
  },
} as const satisfies TypeSpec;

export const MACHINES_RELEASING = {
  role: "detail",
  polarity: "negative",
  watched: false,
  about: "Machines that left the cluster and wait for NIO before they go back to the pool (absent when none does)",
  reasons: {
    WaitingForNIO: reason(
      "True",
      "progress",
      "later",
      "a Machine goes back to the pool only once NIO is done with it (its configuration removed); the message says " +
        "what each waits for",
      "nothing; if it lasts, look at the named Machine and its NixosConfiguration (NIO may still be removing a " +
        "dead node)",
    ),
  },
} as const satisfies TypeSpec;
