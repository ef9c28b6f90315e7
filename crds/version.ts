/**
 * The Kubernetes version in the `KubernetesCluster` schema: `spec.version`
 * (what the user asks for) and `status.version`, `status.versions` (what the
 * nodes report, and the way there). core/versions/ reads and judges them.
 *
 * @module
 */
import { z } from "zod";

/** What `spec.version` must look like: `1.31`, `1.31.4`, `v1.31.4` (no pre-release or build suffix). */
export const SPEC_VERSION_PATTERN = /^v?1\.(0|[1-9]\d{0,2})(?:\.(0|[1-9]\d{0,3}))?$/;

/** What is wrong with a `spec.version` that does not match {@link SPEC_VERSION_PATTERN}. */
export const SPEC_VERSION_MESSAGE = "must be a Kubernetes version such as 1.31 or 1.31.4 (a leading v is allowed; " +
  "no build or pre-release suffix such as +k3s1 or -rc.1)";

/** `spec.version`. */
export const SpecVersion = z.string().max(16).regex(SPEC_VERSION_PATTERN, SPEC_VERSION_MESSAGE).describe(
  "The Kubernetes version to run: a minor (1.31) or a patch (1.31.4). NICO writes it into each node's cluster.nix " +
    "(kubernetesVersion) for the flake to pick its package, upgrades the control plane first, one minor at a time " +
    "(a jump over several minors is chained through each), then the workers, and ends a node's step only when the " +
    "node reports the version asked. A lower minor than the control plane runs is refused. Absent: NICO asks for " +
    "no version and the flake decides (the skew guard still halts a rollout that would break the version skew " +
    "policy).",
);

/** What one node reports, as `status.versions.nodes` lists it. */
export const NodeVersionStatus = z.object({
  name: z.string().describe("The Machine."),
  kubelet: z.string().optional().describe("What its Node reports (status.nodeInfo.kubeletVersion)."),
  apiServer: z.string().optional().describe(
    "A control-plane node: what its own API server answers on /version at its address (port 6443).",
  ),
  asked: z.string().optional().describe("The version its configuration asks for now (cluster.nix kubernetesVersion)."),
}).describe("The Kubernetes versions one node reports, and the one it is asked for.");

/** `status.versions`. */
export const VersionsStatus = z.object({
  target: z.string().optional().describe("spec.version, as NICO rolls it out."),
  step: z.string().optional().describe(
    "While an upgrade is under way: the version the control plane is asked for now.",
  ),
  chain: z.array(z.string()).optional().describe(
    "The control plane's versions still to go through, one minor at a time, the target last; absent once every " +
      "control-plane node reports the target (then the workers follow).",
  ),
  nodes: z.array(NodeVersionStatus).optional().describe("Each node's versions, by name."),
}).describe("The Kubernetes versions the nodes report, and the way to spec.version; rebuilt from observation.");

/** `status.version`. */
export const StatusVersion = z.string().describe(
  "The lowest Kubernetes version running in the cluster, as its kubelets and API servers report it.",
);
