/**
 * The `KubernetesCluster` API: one zod schema that gives the TypeScript
 * types, the runtime validation and (through `crds/generate.ts`) the CRD's
 * OpenAPI schema, so the three never drift.
 *
 * @module
 */
import { z } from "zod";
import { DNS_SUBDOMAIN } from "./common.ts";
import type { ObjectMeta } from "../lib/kube/meta.ts";
import { resource } from "../lib/kube/resources.ts";
import { durationPattern, parseDuration } from "../lib/duration.ts";
import { NioSettings } from "./nio.ts";
import { BackupSpec } from "./backup.ts";
import { Remediation, Spares } from "./remediation.ts";
import { RestoreRequest } from "./restore.ts";
import type { KubernetesClusterStatus } from "./status.ts";
import { SPEC_VERSION_MESSAGE, SPEC_VERSION_PATTERN, SpecVersion } from "./version.ts";

export {
  Condition,
  ConditionStatus,
  EtcdStatus,
  KubernetesClusterStatus,
  Phase,
  PHASES,
  PlaneStatus,
} from "./status.ts";

/** A host as the CRD accepts it: an ASCII DNS name, an IPv4 or an IPv6 address, nothing else. */
export const HOST_PATTERN = "^[A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?$|^[0-9A-Fa-f:.]+$";

const HOST_MESSAGE = "must be a DNS name (letters, digits, '-' and '.') or an IP address, with no spaces; " +
  "write an internationalised name in its punycode (xn--) form";

export const GROUP = "nico.homystack.com";
export const VERSION = "v1alpha1";
export const API_VERSION = `${GROUP}/${VERSION}`;
export const KIND = "KubernetesCluster";
/** Where KubernetesClusters are served. */
export const KUBERNETES_CLUSTERS = resource(GROUP, VERSION, KIND, "kubernetesclusters");

/** A CEL rule as the CRD schema carries it. */
export interface CelRule {
  rule: string;
  message: string;
  fieldPath?: string;
  reason?: "FieldValueInvalid" | "FieldValueForbidden" | "FieldValueRequired" | "FieldValueDuplicate";
}

function cel(...rules: CelRule[]) {
  return { "x-kubernetes-validations": rules };
}

export const MachineName = z.string().min(1).max(253).regex(DNS_SUBDOMAIN)
  .describe("Name of a NIO Machine in the cluster's namespace.");

export const LabelSelectorRequirement = z.object({
  key: z.string().min(1).max(317).describe("Label key the requirement applies to."),
  operator: z.enum(["In", "NotIn", "Exists", "DoesNotExist"])
    .describe("How the key relates to the values: In, NotIn, Exists or DoesNotExist."),
  values: z.array(z.string().max(63)).max(64).optional()
    .describe("Label values; non-empty for In and NotIn, empty for Exists and DoesNotExist."),
}).describe("One label requirement, as in a Kubernetes label selector.").meta(cel({
  rule:
    "self.operator in ['In', 'NotIn'] ? (has(self.values) && size(self.values) > 0) : (!has(self.values) || size(self.values) == 0)",
  message: "values must be non-empty for In and NotIn, and empty for Exists and DoesNotExist",
}));

export const LabelSelector = z.object({
  matchLabels: z.record(z.string(), z.string()).optional()
    .describe("Labels a Machine must carry, each with exactly this value."),
  matchExpressions: z.array(LabelSelectorRequirement).max(32).optional()
    .describe("Label requirements a Machine must meet, all of them."),
}).describe(
  "Kubernetes label selector over Machines in the cluster's namespace; an empty selector matches every Machine.",
);

/** A duration such as `90s`, `30m` or `2h` (whole seconds at least: no `ms` in a spec). */
export const Duration = z.string().regex(
  durationPattern(["s", "m", "h"]),
  "expected a duration such as 90s, 30m or 2h",
);

/** Milliseconds of a {@link Duration} (see `lib/duration.ts`, the one parser). */
export function durationMs(d: string): number {
  const ms = parseDuration(d);
  if (ms === undefined) throw new Error(`not a duration: ${JSON.stringify(d)}; expected one such as 90s, 30m or 2h`);
  return ms;
}

/** A duration in the unit it reads back in (`20s`, `30m`): the one definition is in `lib/duration.ts`. */
export { formatDuration } from "../lib/duration.ts";

/** Spares stand in for an explicit list only. */
const SPARES_NEED_LIST: CelRule = {
  rule: "!has(self.spares) || size(self.spares) == 0 || (has(self.machines) && size(self.machines) > 0)",
  message: "spares stand in for an explicit machines list; a machineSelector plane takes its spares from the pool",
  fieldPath: ".spares",
};

function planeSchema(plane: "control plane" | "worker", description: string, ...rules: CelRule[]) {
  return z.object({
    machines: z.array(MachineName).max(128).optional()
      .describe(
        `Explicit ${plane} Machines by name. When non-empty it takes precedence over machineSelector and count.`,
      )
      .meta(cel({
        rule: "self.all(m, self.exists_one(x, x == m))",
        message: "a Machine is named more than once; list each Machine once",
      })),
    machineSelector: LabelSelector.optional()
      .describe(`Selects ${plane} Machines by label when machines is empty.`),
    count: z.int().min(0).max(1000).optional()
      .describe(
        `How many ${plane} Machines to take from machineSelector; ignored when machines is non-empty.` +
          (plane === "worker" ? " Absent with a machineSelector: every matching Machine." : ""),
      ),
    spares: Spares.optional(),
    remediation: Remediation.optional(),
    replaceUnhealthyAfter: Duration.optional()
      .describe(
        "Deprecated: use remediation. Set alone, it means remediation with machineUnreachableTimeout set to this " +
          "value and the other checks off (the replaced Machine is marked out of service like any remediated one).",
      ),
  }).describe(description).meta(cel(SPARES_NEED_LIST, ...rules));
}

export const ControlPlane = planeSchema(
  "control plane",
  "Machines that run the Kubernetes control plane. An odd number (3 or 5) keeps quorum through the loss of one (or two).",
  {
    rule: "(has(self.machines) && size(self.machines) > 0) || (has(self.count) && self.count >= 1)",
    message:
      "the control plane needs at least one machine: list spec.controlPlane.machines or set spec.controlPlane.count >= 1",
  },
);

export const DataPlane = planeSchema("worker", "Machines that run workloads only (workers).");

export const SecretReference = z.object({
  name: z.string().min(1).max(253).regex(DNS_SUBDOMAIN).describe("Name of a Secret in the cluster's namespace."),
}).describe("Reference to a Secret in the cluster's namespace.");

export const Endpoint = z.object({
  host: z.string().min(1).max(253).regex(new RegExp(HOST_PATTERN), HOST_MESSAGE).describe(
    "DNS name or IP address clients use to reach the Kubernetes API (a load balancer or virtual IP). " +
      "ASCII only: write an internationalised name in its punycode (xn--) form.",
  ).meta(cel({ rule: `self.matches('${HOST_PATTERN}')`, message: HOST_MESSAGE })),
  port: z.int().min(1).max(65535).default(6443).describe("TCP port of the Kubernetes API."),
}).describe("Address of the Kubernetes API of the new cluster.");

/** Defaults of `spec.rollout.drain`: drain, wait up to 10 minutes, then halt; never lose emptyDir data. */
export const DRAIN_DEFAULTS = { enabled: true, timeout: "10m", onTimeout: "Halt", deleteEmptyDirData: false } as const;

export const Drain = z.object({
  enabled: z.boolean().default(true)
    .describe("Cordon and drain a node before its configuration is updated or removed; uncordon it once Ready."),
  timeout: Duration.default("10m")
    .describe("How long a drain may take (PodDisruptionBudgets can hold it); then onTimeout applies."),
  onTimeout: z.enum(["Halt", "Proceed"]).default("Halt")
    .describe(
      "Halt: the rollout stops at the node (RolloutStalled, DrainTimeout) until the pods can go or the spec changes. " +
        "Proceed: the node is updated anyway, its remaining pods with it.",
    ),
  deleteEmptyDirData: z.boolean().default(false)
    .describe("Evict pods with emptyDir volumes too (their data is lost). Off: such pods hold the drain."),
}).describe("Cordon and drain before a node's configuration changes (pods evicted through the Eviction API).");

export const EtcdSettings = z.object({
  clientPort: z.int().min(1).max(65535).default(2379)
    .describe("The port stacked etcd serves clients on, on each control-plane node's address (the flake contract)."),
  backup: BackupSpec.optional(),
  restore: RestoreRequest.optional(),
}).describe(
  "Stacked etcd as the flake runs it. NICO reaches it with a client certificate from the etcd CA it issues; " +
    "absent: port 2379.",
);

export const KubernetesClusterSpec = z.object({
  gitRepo: z.string().min(1).max(2048).optional()
    .describe(
      "URL of the Git repository holding the cluster flake (https://, ssh://, git@host:path or git://; no credentials: use credentialsRef). Defaulted from the operator's --default-git-repo when absent.",
    )
    .meta(cel(
      {
        rule: "!self.matches('\\\\s') && !self.startsWith('-') && !self.matches('^[A-Za-z0-9+.-]+::')",
        message:
          "gitRepo must be one URL on one line, must not start with '-' and must not use remote-helper syntax such as ext::",
      },
      {
        rule: "self.matches('^[A-Za-z][A-Za-z0-9+.-]*://[^/]') || self.matches('^([^@/:]+@)?[^/:]+:.')",
        message: "gitRepo must be a repository URL such as https://host/path.git or git@host:path.git",
      },
      {
        rule: "!self.matches('^(?i)file:')",
        message: "gitRepo must not be a local path or file://: use https://host/path",
      },
      {
        rule:
          "!self.matches('^(?i)(https?|git)://[^/@]*@') && !self.matches('^[A-Za-z][A-Za-z0-9+.-]*://[^/@]*:[^/@]*@')",
        message: "gitRepo must not carry credentials: put them in a Secret and name it in credentialsRef",
      },
    )),
  ref: z.string().min(1).max(255).optional()
    .describe(
      "Branch, tag or commit of gitRepo to deploy. Absent: the repository's default branch, which NICO resolves " +
        "and pins; with the operator's --resolve-refs=false NICO passes no ref and NIO's own default (main) applies.",
    )
    .meta(cel({
      rule: "self.matches('^[A-Za-z0-9._/+=,@-]+$') && !self.startsWith('-') && !self.contains('..')",
      message: "ref may hold only letters, digits and . _ / + = , @ - (a branch, a tag or a 40-hex commit)",
    })),
  configurationSubdir: z.string().max(1024).optional()
    .describe("Folder inside gitRepo that holds flake.nix; the repository root when absent.")
    .meta(cel({
      rule: "!self.startsWith('/') && !self.matches('(^|/)[.][.](/|$)')",
      message: "configurationSubdir must be a relative path inside the repository: no leading '/' and no '..'",
    })),
  credentialsRef: SecretReference.optional()
    .describe("Secret with Git credentials for a private gitRepo, passed to NIO unchanged."),
  controlPlaneEndpoint: Endpoint.optional()
    .describe(
      "Stable address of the Kubernetes API. When absent, the bootstrap control-plane node's address and port 6443 are used.",
    ),
  fullInstall: z.boolean().default(false)
    .describe(
      "When true NIO installs NixOS from scratch with nixos-anywhere, WIPING THE DISK of every node. Leave false for Machines that already run NixOS.",
    ),
  machineSshKey: z.boolean().default(false)
    .describe(
      "When true every node also receives its own Machine's SSH private key (the key NIO logs in with) as the file machine-ssh-key. Leave false unless the flake needs it: whoever can read files on a node then holds a key that opens that host, and every other host sharing the key.",
    ),
  nio: NioSettings.optional(),
  etcd: EtcdSettings.optional(),
  version: SpecVersion.optional().meta(cel({
    rule: `self.matches('${SPEC_VERSION_PATTERN.source.replaceAll("\\", "\\\\")}')`,
    message: `spec.version ${SPEC_VERSION_MESSAGE}`,
  })),
  controlPlane: ControlPlane,
  dataPlane: DataPlane.default({}),
  paused: z.boolean().default(false)
    .describe(
      "When true NICO changes no child object (no creation, update or deletion), except that on NIO v1 a node NICO had asked to run every minute gets its resting dayTwoSchedule back; status still updates. The annotation nico.homystack.com/paused does the same.",
    ),
  rollout: z.object({
    provisioning: z.enum(["Parallel", "BootstrapFirst"]).default("Parallel")
      .describe(
        "First bring-up of a new cluster. Parallel creates every node's configuration at once (installs run together; " +
          "joins retry until the bootstrap server answers, as the flake contract requires). BootstrapFirst applies the " +
          "bootstrap node first and alone, for flakes whose joins do not retry. Later changes always roll out one at a time.",
      ),
    order: z.enum(["WorkersFirst", "ControlPlaneFirst"]).default("WorkersFirst")
      .describe(
        "WorkersFirst updates workers, then the control plane. ControlPlaneFirst suits Kubernetes version upgrades, where a kubelet must not be newer than its API server.",
      ),
    maxUnavailable: z.int().min(1).max(1000).default(1)
      .describe(
        "Workers that may be updating or unready at once during a rollout. Control-plane nodes always go one at a time.",
      ),
    nodeTimeout: Duration.optional()
      .describe(
        "A node not applied this long after NICO changed its configuration is Failed, which halts the rollout. " +
          "Absent: the operator's --node-timeout (30m unless set). A node whose Node is not Ready this long after " +
          "it applied is Failed too (NodeNotReady).",
      ),
    drain: Drain.default(DRAIN_DEFAULTS),
  }).default({ provisioning: "Parallel", order: "WorkersFirst", maxUnavailable: 1, drain: DRAIN_DEFAULTS })
    .describe("How changes roll out to existing nodes."),
}).describe("Desired state of a Kubernetes cluster built from NIO Machines.").meta(cel({
  rule:
    "!has(self.dataPlane.machines) || !has(self.controlPlane.machines) || self.dataPlane.machines.all(m, !(m in self.controlPlane.machines))",
  message: "a Machine cannot be in both spec.controlPlane.machines and spec.dataPlane.machines",
  fieldPath: ".dataPlane.machines",
}));

export type KubernetesClusterSpec = z.output<typeof KubernetesClusterSpec>;
export type KubernetesClusterSpecInput = z.input<typeof KubernetesClusterSpec>;
export type LabelSelector = z.output<typeof LabelSelector>;

export type { ObjectMeta, OwnerReference } from "../lib/kube/meta.ts";

export interface KubernetesCluster {
  apiVersion: typeof API_VERSION;
  kind: typeof KIND;
  metadata: ObjectMeta;
  spec: KubernetesClusterSpec;
  status?: KubernetesClusterStatus;
}
