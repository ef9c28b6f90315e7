/**
 * `Ready`, `Reconciling` and `Stalled`: the summary and the two conditions
 * kstatus reads, with the problems that stop a pass, described once and
 * written under each of them.
 *
 * @module
 */
import { asIn, reason, type TypeSpec, written } from "./types.ts";

/** Problems a pass stops on that only the user can fix (a `ClusterProblem` of the controller). */
export const PROBLEMS = {
  InvalidSpec: {
    means: "the stored spec does not pass NICO's schema (an older object after an upgrade)",
    todo: "fix the field named in the message",
  },
  ForeignConfiguration: {
    means: "a NixosConfiguration named `<cluster>.<machine>` exists but is not this cluster's (phase `Failed`)",
    todo: "delete it, or remove the Machine from the cluster's spec",
  },
  ForeignSecret: {
    means: "a Secret named like one of NICO's (`<cluster>-join-token`, `-agent-token`, `-ca`, `-ca-key`, " +
      "`-kubeconfig`, `-etcd-ca`, `-etcd-ca-key`) is not this cluster's (phase `Failed`)",
    todo: "delete or rename it; NICO then creates its own",
  },
  CertificateAuthorityKeyMismatch: {
    means: "`<cluster>-ca-key` of a cluster that has been brought up does not hold the key of the certificate in " +
      "`<cluster>-ca` (a missing one is `IdentityLost`), or `<cluster>-etcd-ca-key` not the key of `<cluster>-etcd-ca`; " +
      "NICO stops and changes nothing",
    todo: "restore the key Secret from the backup that matches its certificate, or re-key deliberately with the " +
      "annotation `nico.homystack.com/regenerate-identity=true` (every node gets a new identity)",
  },
  IdentityLost: {
    means: "the CA (`<cluster>-ca`, `-ca-key`), server token (`-join-token`), agent token (`-agent-token`, once a " +
      "node carries it) or etcd CA (`-etcd-ca`, `-etcd-ca-key`, once a node carries it) Secret of a cluster that has been brought up is missing; NICO stops and changes nothing",
    todo: "restore the Secret from a backup (`kubectl apply -f`), or re-key deliberately with the annotation " +
      "`nico.homystack.com/regenerate-identity=true` (every node gets a new identity; NICO removes the annotation)",
  },
} as const;

/** What stops a pass before it can render nodes, until the user acts. */
export const USER_BLOCKS = {
  NoGitRepo: {
    means: "no `spec.gitRepo`, and NICO runs without `--default-git-repo`",
    todo: "set `spec.gitRepo`",
  },
  InvalidEndpoint: {
    means: "the endpoint host (`spec.controlPlaneEndpoint.host`, or the bootstrap Machine's host) is no DNS name " +
      "or IP address",
    todo: "fix the host; the message names the field or Machine",
  },
  RefResolutionFailed: {
    means: "the spec's `ref`, `gitRepo` or credentials do not resolve to a commit and no node carries one yet: " +
      "a cluster with no node holds no Machine",
    todo: "fix the URL, ref or credentials (see `RevisionResolved`)",
  },
  NIONotInstalled: {
    means: "the API server serves no `machines` or no `nixosconfigurations` of `nio.homystack.com` (NIO missing, " +
      "or half installed) when NICO started; NICO changes nothing on the cluster. The message names what is missing",
    todo: "install NIO's CRDs (NIO v1: its release's `install.yaml` with `kubectl apply --server-side`), then " +
      "restart NICO",
  },
} as const;

const NODE_FAILED = {
  NodeFailed: {
    means: "NIO reported a node `Degraded`/`Stalled`, a node was not applied within `spec.rollout.nodeTimeout`, or " +
      "its Node stayed missing or NotReady that long after it applied (`NodeNotReady` in the message: a failed " +
      "join, kubelet down, a Node not named like its Machine), or kept reporting another Kubernetes version than " +
      "its cluster.nix asks for (`VersionMismatch`: the flake does not run the version asked)",
    todo: "`kubectl describe nixconf <cluster>.<machine>` and `kubectl get nodes` in the cluster (the Node must be " +
      "named like the Machine: flake contract); fix the flake or the host; the cluster recovers by itself once NIO " +
      "applies and the Node is Ready",
  },
} as const;

const WAITING = "nothing, unless it lasts: look at the named node's NixosConfiguration";

export const READY = {
  role: "summary",
  polarity: "positive",
  watched: true,
  about: "the summary: True when every node is Ready, runs the desired configuration and the kubeconfig is issued",
  reasons: {
    ClusterReady: reason(
      "True",
      "fine",
      "now",
      "every node is Ready (its Node too, when NICO watches the workload cluster), the workload API answers, the " +
        "kubeconfig is issued and every node runs the desired configuration (a paused change aside)",
      "nothing",
    ),
    WaitingForControlPlane: reason(
      "False",
      "progress",
      "later",
      "control-plane nodes are still converging; the message names each node and what it waits for",
      WAITING,
    ),
    WaitingForWorkers: reason(
      "False",
      "progress",
      "later",
      "workers are still converging; the message names each node and what it waits for",
      WAITING,
    ),
    WaitingForKubeconfig: reason(
      "False",
      "progress",
      "later",
      "nodes are ready; NICO is writing `<cluster>-kubeconfig`",
      "nothing; if it lasts, read NICO's log (Secret write refused?)",
    ),
    RollingOut: reason(
      "False",
      "progress",
      "later",
      "every node is healthy, but some do not run the desired configuration yet; `RollingOut` and `UpToDate` say which",
      "nothing: a rollout is under way",
    ),
    ResolvingRef: reason(
      "False",
      "progress",
      "later",
      "a new cluster waits for its first commit: NICO is resolving `ref` of `gitRepo`",
      "nothing; see `RevisionResolved` if it lasts",
    ),
    Deleting: reason(
      "False",
      "progress",
      "later",
      "the cluster is being deleted; the message lists the configurations NIO still removes, then what the " +
        "Machines wait for before they are released",
      "wait; NIO runs `#minimal` on each node. A node NIO cannot reach keeps its configuration (and its Machine " +
        "claimed) until NIO gives up or you remove NIO's finalizer by hand",
    ),
    ...written(NODE_FAILED, "False", "stalled", "now"),
    VersionSkew: reason(
      "False",
      "stalled",
      "now",
      "the rollout is halted by the version skew guard (`Stalled=True VersionSkew`): a cluster whose nodes break the " +
        "skew policy is not Ready, even with every node switched",
      "as for `VersionSkew` in `Stalled`",
    ),
    RolloutHalted: reason(
      "False",
      "stalled",
      "now",
      "the rollout is halted at a node that has not failed (`Stalled=True RolloutHalted`: a drain timed out)",
      "as for `RolloutHalted` in `Stalled`",
    ),
    VersionDowngrade: reason(
      "False",
      "stalled",
      "now",
      "`spec.version` asks for a lower minor than the control plane runs (`Stalled=True VersionDowngrade`): the " +
        "cluster does not run what the spec asks, and never will as written",
      "as for `VersionDowngrade` in `Stalled`",
    ),
    WorkloadAPIUnavailable: reason(
      "False",
      "attention",
      "now",
      "the cluster's API does not answer `/readyz` with NICO's kubeconfig; nodes are shown as applied, the rollout " +
        "waits",
      "check the endpoint from NICO's pod with the kubeconfig Secret (`get --raw /readyz`)",
    ),
    NoControlPlane: reason(
      "False",
      "progress",
      "now",
      "no control-plane Machine is available; a cluster with no node yet claims no Machine meanwhile",
      "see `MachinesAvailable`: add or free Machines",
    ),
    ...written(USER_BLOCKS, "False", "stalled", "now"),
    ...written(PROBLEMS, "False", "stalled", "now"),
    ReconcileError: reason(
      "False",
      "attention",
      "now",
      "an API call failed in a way NICO did not foresee; the message is the API server's answer; NICO retries " +
        "with backoff",
      "read the message (an admission policy or webhook refusing NICO's object, RBAC, quota); it clears on the " +
        "next successful pass",
    ),
  },
} as const satisfies TypeSpec;

const progress = (means: string, todo = "nothing, unless it lasts") => reason("True", "progress", "later", means, todo);

export const RECONCILING = {
  role: "progress",
  polarity: "negative",
  watched: true,
  about: "NICO is at work on the spec (kstatus: InProgress while True); never True together with Stalled",
  reasons: {
    Provisioning: progress("the first bring-up: the message says what it waits for"),
    RollingOut: progress("a change is rolling out, or the last node of a rollout is rejoining; see `RollingOut`"),
    ResolvingRef: progress("the spec's commit is not known yet", "nothing; see `RevisionResolved` if it lasts"),
    WaitingForMachines: progress(
      "the spec asks for Machines that are not available (see `MachinesAvailable`)",
      "add or free Machines",
    ),
    NoControlPlane: progress("no control-plane Machine is available (see `MachinesAvailable`)", "add or free Machines"),
    ReconcileError: progress(
      "NICO retries after an error; the message is the error",
      "as for `ReconcileError` in `Ready`",
    ),
    Paused: progress(
      "a change waits because the cluster is paused (Argo CD: Suspended)",
      "clear `spec.paused` and the `nico.homystack.com/paused` annotation",
    ),
    Remediating: progress(
      "a Machine taken out of service has not left yet (see `Remediating`)",
      "nothing; see `Remediating`",
    ),
    Deleting: progress("the cluster is being deleted", "see `Deleting` in `Ready`"),
    Stalled: reason(
      "False",
      "fine",
      "later",
      "not in progress because NICO cannot go on: `Stalled` says why",
      "see `Stalled`",
    ),
    Settled: reason("False", "fine", "later", "nothing in progress", "nothing"),
  },
} as const satisfies TypeSpec;

const STOPS = "NICO stops until you act; `Ready` has the same reason and message";

export const STALLED = {
  role: "stalled",
  polarity: "negative",
  watched: true,
  about: "NICO cannot go on until the user acts (kstatus: Failed; Argo CD: Degraded)",
  reasons: {
    NotStalled: reason("False", "fine", "later", "nothing stands in NICO's way", "nothing"),
    NodeFailed: reason(
      "True",
      "stalled",
      "now",
      "a node failed; the message names it and, during a rollout, where the rollout is halted",
      "as for `NodeFailed` in `Ready`",
    ),
    RolloutHalted: reason(
      "True",
      "stalled",
      "now",
      "the rollout is halted at a node that has not failed: a drain ran past `spec.rollout.drain.timeout`, or the " +
        "etcd snapshot its control-plane step waits for cannot be taken (`BackupFailed`)",
      "as for `RolloutStalled` in `RollingOut`",
    ),
    VersionSkew: reason(
      "True",
      "stalled",
      "now",
      "the nodes' Kubernetes versions break the version skew policy (a kubelet newer than its API server, API " +
        "servers more than one minor apart, a kubelet too far behind); the message names the node, both versions " +
        "and the fix. The rollout is halted there: only control-plane steps that fix it forward go on",
      "roll the control plane first (`spec.rollout.order: ControlPlaneFirst`) or set `spec.version` (NICO then " +
        "upgrades the control plane first, one minor at a time); see docs/upgrades.md",
    ),
    VersionDowngrade: reason(
      "True",
      "stalled",
      "now",
      "`spec.version` asks for a lower minor than the control plane runs; Kubernetes does not support going back a " +
        "minor, so NICO asks no node for it (other changes still roll out)",
      "set `spec.version` to the control plane's minor or later (the webhook refuses such a change when it runs)",
    ),
    ...written(asIn(USER_BLOCKS, "Ready", STOPS), "True", "stalled", "now"),
    ...written(asIn(PROBLEMS, "Ready", STOPS), "True", "stalled", "now"),
  },
} as const satisfies TypeSpec;
