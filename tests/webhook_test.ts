/**
 * The admission webhook in-process, through `app.request()`: every
 * validation rule, defaulting, every bad input, the rendered webhook
 * configurations, and the TLS server with certificate reload.
 */
import { assertGolden } from "./golden.ts";
import {
  foreignConfig as fixtureForeignConfig,
  machine as fixtureMachine,
  type MachineOpts,
  ownedConfig as fixtureOwnedConfig,
} from "../testing/objects.ts";
import assert from "node:assert/strict";
import { stringify } from "yaml";
import { configName } from "../core/names.ts";
import { isDeepStrictEqual } from "node:util";
import {
  type KubernetesCluster,
  KubernetesClusterSpec,
  type KubernetesClusterSpecInput,
} from "../crds/kubernetescluster.ts";
import { CLUSTER_LABEL } from "../core/labels.ts";
import type { Machine, NixosConfiguration } from "../core/nio.ts";
import { createCa, issueCert } from "../lib/pki.ts";
import { type AdmissionLookup, LookupNotReady, staticLookup, type StaticObjects } from "../webhooks/lookup.ts";
import { webhookApp, type WebhookAppOptions } from "../webhooks/app.ts";
import { webhookConfigurations } from "../webhooks/configurations.ts";
import { MUTATE_PATH, VALIDATE_PATH } from "../webhooks/paths.ts";
import { startWebhookServer } from "../webhooks/server.ts";
import type { TlsProvider } from "../webhooks/tls.ts";

const NS = "infra";
const UID = "uid-prod";

// ---------------------------------------------------------------- builders

function machine(name: string, o: MachineOpts = {}): Machine {
  return fixtureMachine(name, { namespace: NS, ...o });
}

/** A NixosConfiguration of cluster `cluster`, controlled by the cluster with `uid`. */
function ownedConfig(cluster: string, m: string, role: "control-plane" | "worker", uid = UID): NixosConfiguration {
  return fixtureOwnedConfig(cluster, m, role, uid, NS);
}

function foreignConfig(name: string, m: string): NixosConfiguration {
  return fixtureForeignConfig(name, m, NS);
}

function cluster(spec: unknown, o: { name?: string; uid?: string; status?: unknown; deleting?: boolean } = {}) {
  return {
    apiVersion: "nico.homystack.com/v1alpha1",
    kind: "KubernetesCluster",
    metadata: {
      name: o.name ?? "prod",
      namespace: NS,
      uid: o.uid ?? UID,
      ...(o.deleting ? { deletionTimestamp: "2025-01-01T00:00:00Z" } : {}),
    },
    spec,
    ...(o.status ? { status: o.status } : {}),
  };
}

const REPO = "https://git.example.test/flake.git";
const withRepo = (spec: KubernetesClusterSpecInput): KubernetesClusterSpecInput => ({ gitRepo: REPO, ...spec });

function reviewBody(
  op: "CREATE" | "UPDATE" | "DELETE",
  object: unknown,
  oldObject?: unknown,
  kind = "KubernetesCluster",
) {
  return {
    apiVersion: "admission.k8s.io/v1",
    kind: "AdmissionReview",
    request: {
      uid: "req-1",
      kind: { group: kind === "KubernetesCluster" ? "nico.homystack.com" : "", version: "v1alpha1", kind },
      resource: { group: "nico.homystack.com", version: "v1alpha1", resource: "kubernetesclusters" },
      operation: op,
      namespace: NS,
      name: "prod",
      ...(object === undefined ? {} : { object }),
      ...(oldObject === undefined ? {} : { oldObject }),
    },
  };
}

interface Answer {
  status: number;
  text: string;
  // deno-lint-ignore no-explicit-any
  json: any;
}

async function post(
  app: ReturnType<typeof webhookApp>,
  path: string,
  body: unknown,
  init: RequestInit = {},
): Promise<Answer> {
  const res = await app.request(path, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: typeof body === "string" ? body : JSON.stringify(body),
    ...init,
  });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, text, json };
}

function app(objects: StaticObjects = {}, opts: Partial<WebhookAppOptions> = {}) {
  return webhookApp({ lookup: staticLookup({ ...objects }), ...opts });
}

/** Machines cp-1..cp-n and w-1..w-n, discoverable and labelled by role. */
function fleet(cp: number, w = 0, o: MachineOpts = {}): Machine[] {
  return [
    ...Array.from({ length: cp }, (_, i) => machine(`cp-${i + 1}`, { labels: { role: "cp" }, ...o })),
    ...Array.from({ length: w }, (_, i) => machine(`w-${i + 1}`, { labels: { role: "worker" }, ...o })),
  ];
}

// ---------------------------------------------------------------- validation

interface Case {
  name: string;
  objects?: StaticObjects;
  op?: "CREATE" | "UPDATE";
  object: unknown;
  oldObject?: unknown;
  options?: Partial<WebhookAppOptions>;
  /** Each refusal line must match, in order; `[]` means allowed. */
  errors: (string | RegExp)[];
  /** Each warning must match, in order. */
  warnings?: (string | RegExp)[];
}

function check(actual: string[], expected: (string | RegExp)[], what: string) {
  assert.equal(actual.length, expected.length, `${what}: ${JSON.stringify(actual, null, 1)}`);
  expected.forEach((e, i) => {
    if (typeof e === "string") assert.equal(actual[i], e, what);
    else assert.match(actual[i]!, e, what);
  });
}

const three = { controlPlane: { machines: ["cp-1", "cp-2", "cp-3"] } };

const createCases: Case[] = [
  {
    name: "a valid cluster passes without warnings",
    objects: { machines: fleet(3, 2) },
    object: cluster(withRepo({ ...three, dataPlane: { machines: ["w-1", "w-2"] } })),
    errors: [],
  },
  {
    name: "an explicit Machine that does not exist",
    objects: { machines: fleet(3) },
    object: cluster(withRepo({ controlPlane: { machines: ["cp-1", "cp-9", "cp-3"] } })),
    errors: [
      "spec.controlPlane.machines[1]: Machine cp-9 does not exist in namespace infra; create it or fix the name",
    ],
  },
  {
    name: "an explicit Machine that is not discoverable",
    objects: { machines: [...fleet(1), machine("cp-02", { discoverable: false }), machine("cp-3")] },
    object: cluster(withRepo({ controlPlane: { machines: ["cp-1", "cp-02", "cp-3"] } })),
    errors: [
      "spec.controlPlane.machines[1]: Machine cp-02 is not discoverable: NIO cannot reach it; fix the host or pick another Machine",
    ],
  },
  {
    name: "an explicit Machine configured by something else",
    objects: { machines: [...fleet(2), machine("w-1", { applied: "someone-elses-config" })] },
    object: cluster(withRepo({ controlPlane: { machines: ["cp-1"] }, dataPlane: { machines: ["w-1"] } })),
    errors: [
      "spec.dataPlane.machines[0]: Machine w-1 is configured by NixosConfiguration someone-elses-config; remove that configuration first or pick another Machine",
    ],
    warnings: [], // refused: the single-node advice is not printed with the refusal
  },
  {
    name: "an explicit Machine claimed by another cluster",
    objects: { machines: [...fleet(2), machine("cp-3", { claim: "staging" })] },
    object: cluster(withRepo(three)),
    errors: [
      "spec.controlPlane.machines[2]: Machine cp-3 is claimed by cluster staging; remove it from that cluster first or pick another Machine",
    ],
  },
  {
    name: "an explicit Machine targeted by a NixosConfiguration that is not this cluster's",
    objects: { machines: fleet(3), configurations: [foreignConfig("hand-made", "cp-2")] },
    object: cluster(withRepo(three)),
    errors: [
      "spec.controlPlane.machines[1]: Machine cp-2 is already the target of NixosConfiguration hand-made; delete that NixosConfiguration first or pick another Machine",
    ],
  },
  {
    name: "a configuration of an earlier cluster of the same name (another uid) is not this cluster's",
    objects: { machines: fleet(3), configurations: [ownedConfig("prod", "cp-1", "control-plane", "uid-old")] },
    object: cluster(withRepo(three)),
    errors: [
      /^spec\.controlPlane\.machines\[0\]: Machine cp-1 is already the target of NixosConfiguration prod\.cp-1;/,
    ],
  },
  {
    name: "an explicit Machine another cluster already names",
    objects: {
      machines: fleet(3, 1),
      clusters: [
        cluster({ controlPlane: { machines: ["cp-1"] }, dataPlane: { machines: ["w-1"] } }, {
          name: "staging",
          uid: "u2",
        }) as KubernetesCluster,
      ],
    },
    object: cluster(withRepo({ ...three, dataPlane: { machines: ["w-1"] } })),
    errors: [
      "spec.controlPlane.machines[0]: Machine cp-1 is already named by cluster staging (spec.controlPlane.machines); a Machine serves one cluster: remove it from that cluster first or pick another Machine",
      "spec.dataPlane.machines[0]: Machine w-1 is already named by cluster staging (spec.dataPlane.machines); a Machine serves one cluster: remove it from that cluster first or pick another Machine",
    ],
  },
  {
    name: "a cluster being deleted no longer holds its Machines",
    objects: {
      machines: fleet(3),
      clusters: [cluster(three, { name: "old", uid: "u3", deleting: true }) as KubernetesCluster],
    },
    object: cluster(withRepo(three)),
    errors: [],
  },
  {
    name: "a Machine named twice",
    objects: { machines: fleet(3) },
    object: cluster(withRepo({ controlPlane: { machines: ["cp-1", "cp-2", "cp-1"] } })),
    errors: [
      "spec.controlPlane.machines[2]: Machine cp-1 is named twice (also at spec.controlPlane.machines[0]); list each Machine once",
    ],
  },
  {
    name: "a Machine in both planes",
    objects: { machines: fleet(3) },
    object: cluster(withRepo({ ...three, dataPlane: { machines: ["cp-3"] } })),
    errors: [
      "spec.dataPlane.machines[0]: Machine cp-3 is also in spec.controlPlane.machines; a Machine serves one plane only: remove it from one of the lists",
    ],
  },
  {
    name: "malformed selectors",
    objects: { machines: fleet(3) },
    object: cluster(withRepo({
      controlPlane: {
        count: 3,
        machineSelector: {
          matchLabels: { "bad key!": "cp", role: "not ok" },
          matchExpressions: [{ key: "zone", operator: "In" }, { key: "-x", operator: "Exists", values: ["a"] }],
        },
      },
    })),
    errors: [
      /^spec\.controlPlane\.machineSelector\.matchLabels\["bad key!"\]: label key name 'bad key!' must be/,
      /^spec\.controlPlane\.machineSelector\.matchLabels\["role"\]: label value 'not ok' must be/,
      "spec.controlPlane.machineSelector.matchExpressions[0].values: operator In needs at least one value; add values or use Exists",
      /^spec\.controlPlane\.machineSelector\.matchExpressions\[1\]\.key: label key name '-x' must be/,
      "spec.controlPlane.machineSelector.matchExpressions[1].values: operator Exists takes no values; remove them or use In",
    ],
    warnings: [/^spec\.controlPlane\.count: 3 Machines wanted but none match/],
  },
  {
    name: "credentialsRef to a Secret in another namespace",
    objects: { machines: fleet(3), secrets: [`${NS}/git`] },
    object: cluster(withRepo({ ...three, credentialsRef: { name: "git", namespace: "other" } as { name: string } })),
    errors: [
      "spec.credentialsRef.namespace: credentialsRef has no namespace field: the Secret must be in the cluster's namespace infra, not other; copy Secret git into infra and remove credentialsRef.namespace",
    ],
  },
  {
    name: "credentialsRef with a namespace field, even its own",
    objects: { machines: fleet(3), secrets: [`${NS}/git`] },
    object: cluster(withRepo({ ...three, credentialsRef: { name: "git", namespace: NS } as { name: string } })),
    errors: [
      /^spec\.credentialsRef\.namespace: credentialsRef has no namespace field: the Secret must be in the cluster's namespace infra; copy/,
    ],
  },
  {
    name: "zod issues carry their field path",
    objects: { machines: fleet(3) },
    object: cluster({ controlPlane: { machines: ["Bad_Name"], count: -1 }, fullInstall: "yes" }),
    errors: [
      "spec.fullInstall: Invalid input: expected boolean, received string",
      "spec.controlPlane.machines[0]: must be a lowercase RFC 1123 name: a-z, 0-9, '-' and '.', starting and ending with a letter or digit",
      "spec.controlPlane.count: Too small: expected number to be >=0",
    ],
  },
  {
    name: "no spec at all",
    object: cluster(undefined),
    errors: ["spec: Invalid input: expected object, received undefined"],
  },
  {
    name: "a control plane of no machine",
    objects: { machines: fleet(3) },
    object: cluster(withRepo({ controlPlane: { count: 0 } })),
    errors: [
      "spec.controlPlane: the control plane needs at least one machine: list spec.controlPlane.machines or set spec.controlPlane.count >= 1",
    ],
  },
  {
    name: "a cluster name too long for a label",
    objects: { machines: fleet(3) },
    object: cluster(withRepo(three), { name: "x".repeat(64) }),
    errors: [
      /^metadata\.name: cluster name x{64} cannot be a label value .*: label value 'x{64}' must be at most 63 characters.*; pick a shorter name$/,
    ],
  },
  {
    name: "fewer eligible Machines than count is a warning",
    objects: { machines: [...fleet(2), machine("cp-3", { labels: { role: "cp" }, discoverable: false })] },
    object: cluster(withRepo({ controlPlane: { machineSelector: { matchLabels: { role: "cp" } }, count: 3 } })),
    errors: [],
    warnings: [
      "spec.controlPlane.count: 3 Machines wanted but only 2 (cp-1, cp-2) match role=cp and are available; NICO provisions what it can and waits for more: label or free more Machines, or lower count",
    ],
  },
  {
    name: "a worker shortfall is a warning too",
    objects: { machines: fleet(3, 1) },
    object: cluster(
      withRepo({ ...three, dataPlane: { machineSelector: { matchLabels: { role: "worker" } }, count: 2 } }),
    ),
    errors: [],
    warnings: [/^spec\.dataPlane\.count: 2 Machines wanted but only 1 \(w-1\) match role=worker and are available;/],
  },
  {
    name: "a single-node control plane is a warning",
    objects: { machines: fleet(1) },
    object: cluster(withRepo({ controlPlane: { machines: ["cp-1"] } })),
    errors: [],
    warnings: [
      "spec.controlPlane.machines: a single-node control plane has no redundancy: while that Machine updates or if it fails the Kubernetes API is down; use 3 for availability",
    ],
  },
  {
    name: "a two-node control plane is a warning",
    objects: { machines: fleet(2) },
    object: cluster(withRepo({ controlPlane: { machines: ["cp-1", "cp-2"] } })),
    errors: [],
    warnings: [
      "spec.controlPlane.machines: 2 control-plane Machines need 2 for etcd quorum, so they survive 0 failure(s), no more than 1 would; an update of either Machine stops the Kubernetes API; use an odd number (3)",
    ],
  },
  {
    name: "a four-node control plane by count is a warning",
    objects: { machines: fleet(4) },
    object: cluster(withRepo({ controlPlane: { machineSelector: { matchLabels: { role: "cp" } }, count: 4 } })),
    errors: [],
    warnings: [
      "spec.controlPlane.count: 4 control-plane Machines need 3 for etcd quorum, so they survive 1 failure(s), no more than 3 would; an update uses up that margin; use an odd number (3 or 5)",
    ],
  },
  {
    name: "a missing credentialsRef Secret is a warning",
    objects: { machines: fleet(3) },
    object: cluster(withRepo({ ...three, credentialsRef: { name: "git" } })),
    errors: [],
    warnings: [
      "spec.credentialsRef.name: Secret git does not exist in namespace infra; NIO cannot fetch a private gitRepo until it does: create it",
    ],
  },
  {
    name: "an existing credentialsRef Secret is fine",
    objects: { machines: fleet(3), secrets: [`${NS}/git`] },
    object: cluster(withRepo({ ...three, credentialsRef: { name: "git" } })),
    errors: [],
  },
  {
    name: "no gitRepo and no default repository is a warning",
    objects: { machines: fleet(3) },
    object: cluster(three),
    errors: [],
    warnings: [/^spec\.gitRepo: not set and NICO has no default repository/],
  },
  {
    name: "no gitRepo with a default repository is fine",
    objects: { machines: fleet(3) },
    object: cluster(three),
    options: { defaultGitRepo: REPO },
    errors: [],
  },
  {
    name: "count beside an explicit list is a warning",
    objects: { machines: fleet(3) },
    object: cluster(withRepo({ controlPlane: { machines: ["cp-1", "cp-2", "cp-3"], count: 5 } })),
    errors: [],
    warnings: [
      "spec.controlPlane.count: ignored because spec.controlPlane.machines lists 3 Machine(s); remove count or the list",
    ],
  },
  {
    name: "several problems: one line each",
    objects: { machines: [machine("cp-1", { discoverable: false })] },
    object: cluster(withRepo({ controlPlane: { machines: ["cp-1", "cp-2", "cp-3"] } })),
    errors: [
      /^spec\.controlPlane\.machines\[0\]: Machine cp-1 is not discoverable/,
      /^spec\.controlPlane\.machines\[1\]: Machine cp-2 does not exist/,
      /^spec\.controlPlane\.machines\[2\]: Machine cp-3 does not exist/,
    ],
  },
];

// An existing three-node cluster: cp-1..3 claimed and configured by prod.
const members = ["cp-1", "cp-2", "cp-3"];
const ownedFleet = () => [
  ...members.map((n) => machine(n, { labels: { role: "cp" }, claim: "prod", applied: configName("prod", n) })),
  machine("cp-4", { labels: { role: "cp" } }),
  machine("cp-5", { labels: { role: "cp" } }),
  machine("cp-6", { labels: { role: "cp" } }),
];
const ownedConfigs = (names = members) => names.map((n) => ownedConfig("prod", n, "control-plane"));
const status = { bootstrapNode: "cp-1" };

const updateCases: Case[] = [
  {
    name: "a metadata-only update passes even when a Machine became unreachable",
    objects: { machines: [machine("cp-1", { discoverable: false })] },
    op: "UPDATE",
    object: {
      ...cluster(withRepo({ controlPlane: { machines: ["cp-1", "cp-9"] } })),
      metadata: { ...cluster({}).metadata, finalizers: ["x"] },
    },
    oldObject: cluster(withRepo({ controlPlane: { machines: ["cp-1", "cp-9"] } })),
    errors: [],
  },
  {
    name: "an update during deletion passes",
    objects: { machines: [] },
    op: "UPDATE",
    object: cluster(withRepo({ controlPlane: { machines: ["gone"] } }), { deleting: true }),
    oldObject: cluster(withRepo(three)),
    errors: [],
  },
  {
    name: "Machines this cluster owns are not refused again",
    objects: { machines: ownedFleet(), configurations: ownedConfigs() },
    op: "UPDATE",
    object: cluster(withRepo({ ...three, ref: "v2" }), { status }),
    oldObject: cluster(withRepo(three), { status }),
    errors: [],
  },
  {
    name: "an owned member that became unreachable is a warning, not a refusal",
    objects: {
      machines: ownedFleet().map((m) =>
        m.metadata.name === "cp-2" ? { ...m, status: { ...m.status, discoverable: false } } : m
      ),
      configurations: ownedConfigs(),
    },
    op: "UPDATE",
    object: cluster(withRepo({ ...three, ref: "v2" }), { status }),
    oldObject: cluster(withRepo(three), { status }),
    errors: [],
    warnings: [
      "spec.controlPlane.machines[1]: Machine cp-2 is not discoverable: NIO cannot reach it; fix the host or pick another Machine (it stays a member of this cluster, but NICO cannot update it until this is fixed)",
    ],
  },
  {
    name: "a selected member that became unreachable is a warning",
    objects: {
      machines: ownedFleet().map((m) =>
        m.metadata.name === "cp-2" ? { ...m, status: { ...m.status, discoverable: false } } : m
      ),
      configurations: ownedConfigs(),
    },
    op: "UPDATE",
    object: cluster(
      withRepo({ controlPlane: { machineSelector: { matchLabels: { role: "cp" } }, count: 3 }, ref: "v2" }),
      { status },
    ),
    oldObject: cluster(withRepo({ controlPlane: { machineSelector: { matchLabels: { role: "cp" } }, count: 3 } }), {
      status,
    }),
    errors: [],
    warnings: [
      "spec.controlPlane.machineSelector: Machine cp-2 is not discoverable: NIO cannot reach it; it stays a member, but NICO cannot update it until this is fixed",
    ],
  },
  {
    name: "a selected member claimed by another cluster leaves, with a warning",
    objects: {
      machines: ownedFleet().map((m) =>
        m.metadata.name === "cp-3"
          ? { ...m, metadata: { ...m.metadata, labels: { role: "cp", [CLUSTER_LABEL]: "staging" } } }
          : m
      ),
      configurations: ownedConfigs(),
    },
    op: "UPDATE",
    object: cluster(
      withRepo({ controlPlane: { machineSelector: { matchLabels: { role: "cp" } }, count: 3 }, ref: "v2" }),
      { status },
    ),
    oldObject: cluster(withRepo({ controlPlane: { machineSelector: { matchLabels: { role: "cp" } }, count: 3 } }), {
      status,
    }),
    errors: [],
    warnings: ["spec.controlPlane.machineSelector: Machine cp-3 is claimed by cluster staging; it leaves this cluster"],
  },
  {
    name: "a Machine named before the change that is now unreachable is a warning",
    objects: { machines: [...fleet(2), machine("cp-3", { discoverable: false })] },
    op: "UPDATE",
    object: cluster(withRepo({ ...three, ref: "v2" })),
    oldObject: cluster(withRepo(three)),
    errors: [],
    warnings: [
      /^spec\.controlPlane\.machines\[2\]: Machine cp-3 is not discoverable: .* \(it was already named before this change\)$/,
    ],
  },
  {
    name: "a newly added Machine is still checked on update",
    objects: { machines: ownedFleet(), configurations: ownedConfigs() },
    op: "UPDATE",
    object: cluster(withRepo({ ...three, dataPlane: { machines: ["w-9"] } }), { status }),
    oldObject: cluster(withRepo(three), { status }),
    errors: ["spec.dataPlane.machines[0]: Machine w-9 does not exist in namespace infra; create it or fix the name"],
  },
  {
    name: "fullInstall false to true on an existing cluster",
    objects: { machines: ownedFleet(), configurations: ownedConfigs() },
    op: "UPDATE",
    object: cluster(withRepo({ ...three, fullInstall: true }), { status }),
    oldObject: cluster(withRepo(three), { status }),
    errors: [
      "spec.fullInstall: cannot change to true on an existing cluster: NIO would reinstall NixOS and WIPE THE DISK of every node, destroying the cluster and its data; keep it false, or create a new cluster to reinstall from scratch",
    ],
  },
  {
    name: "fullInstall true to false is fine",
    objects: { machines: ownedFleet(), configurations: ownedConfigs() },
    op: "UPDATE",
    object: cluster(withRepo({ ...three, fullInstall: false }), { status }),
    oldObject: cluster(withRepo({ ...three, fullInstall: true }), { status }),
    errors: [],
  },
  {
    name: "replacing every control-plane Machine at once",
    objects: { machines: ownedFleet(), configurations: ownedConfigs(["cp-1"]) },
    op: "UPDATE",
    object: cluster(withRepo({ controlPlane: { machines: ["cp-4"] } }), { status }),
    oldObject: cluster(withRepo({ controlPlane: { machines: ["cp-1"] } }), { status }),
    errors: [
      "spec.controlPlane.machines: this change removes every current control-plane Machine (cp-1); the cluster's etcd data lives only on them: keep at least one and replace the others one at a time",
    ],
    warnings: [], // the single-node advice is not repeated on a refused request
  },
  {
    name: "moving the only control-plane Machine to the workers",
    objects: { machines: ownedFleet(), configurations: ownedConfigs(["cp-1"]) },
    op: "UPDATE",
    object: cluster(withRepo({ controlPlane: { machines: ["cp-4"] }, dataPlane: { machines: ["cp-1"] } }), { status }),
    oldObject: cluster(withRepo({ controlPlane: { machines: ["cp-1"] } }), { status }),
    errors: [/^spec\.controlPlane\.machines: this change removes every current control-plane Machine \(cp-1\)/],
    warnings: [],
  },
  {
    name: "shrinking the control plane by two at once (count) is accepted: removed one at a time",
    objects: {
      machines: ownedFleet().map((m) => ({
        ...m,
        metadata: { ...m.metadata, labels: { role: "cp", [CLUSTER_LABEL]: "prod" } },
      })),
      configurations: ownedConfigs(["cp-1", "cp-2", "cp-3", "cp-4", "cp-5"]),
    },
    op: "UPDATE",
    object: cluster(withRepo({ controlPlane: { machineSelector: { matchLabels: { role: "cp" } }, count: 3 } }), {
      status,
    }),
    oldObject: cluster(withRepo({ controlPlane: { machineSelector: { matchLabels: { role: "cp" } }, count: 5 } }), {
      status,
    }),
    errors: [],
    warnings: [
      "spec.controlPlane.count: this change removes 2 control-plane Machines (cp-4, cp-5); NICO adds any new ones first, then removes these one at a time, each only once every other control-plane node is ready",
    ],
  },
  {
    name: "shrinking the control plane by one is allowed",
    objects: { machines: ownedFleet(), configurations: ownedConfigs() },
    op: "UPDATE",
    object: cluster(withRepo({ controlPlane: { machines: ["cp-1", "cp-2"] } }), { status }),
    oldObject: cluster(withRepo(three), { status }),
    errors: [],
    warnings: [
      /^spec\.controlPlane\.machines: 2 control-plane Machines need 2 for etcd quorum, so they survive 0 failure/,
    ],
  },
  {
    name: "replacing two of three explicit members at once is accepted: new ones first, then one removal at a time",
    objects: { machines: ownedFleet(), configurations: ownedConfigs() },
    op: "UPDATE",
    object: cluster(withRepo({ controlPlane: { machines: ["cp-1", "cp-4", "cp-5"] } }), { status }),
    oldObject: cluster(withRepo(three), { status }),
    errors: [],
    warnings: [/^spec\.controlPlane\.machines: this change removes 2 control-plane Machines \(cp-2, cp-3\); NICO adds/],
  },
  {
    name: "removing the bootstrap node while it is the API endpoint: accepted, with a word that it is held",
    objects: { machines: ownedFleet(), configurations: ownedConfigs() },
    op: "UPDATE",
    object: cluster(withRepo({ controlPlane: { machines: ["cp-2", "cp-3", "cp-4"] } }), { status }),
    oldObject: cluster(withRepo(three), { status }),
    errors: [],
    warnings: [
      /^spec\.controlPlane\.machines: cp-1 is the bootstrap node and the cluster's API endpoint; NICO keeps it/,
    ],
  },
  {
    name: "a cluster with no members yet may change its control plane freely",
    objects: { machines: fleet(6) },
    op: "UPDATE",
    object: cluster(withRepo({ controlPlane: { machines: ["cp-4", "cp-5", "cp-6"] } })),
    oldObject: cluster(withRepo(three)),
    errors: [],
  },
];

async function runCase(c: Case) {
  const a = app(c.objects, c.options);
  const res = await post(a, VALIDATE_PATH, reviewBody(c.op ?? "CREATE", c.object, c.oldObject));
  assert.equal(res.status, 200, res.text);
  const r = res.json.response;
  assert.equal(res.json.apiVersion, "admission.k8s.io/v1");
  assert.equal(res.json.kind, "AdmissionReview");
  assert.equal(r.uid, "req-1");
  const errors = r.allowed ? [] : String(r.status.message).split("\n");
  check(errors, c.errors, "refusals");
  check(r.warnings ?? [], c.warnings ?? [], "warnings");
  if (!r.allowed) {
    assert.equal(r.status.code, 403);
    assert.equal(r.status.reason, "Forbidden");
  }
  for (const line of [...errors, ...(r.warnings ?? [])]) {
    assert.ok(!line.includes("\n") && (line.startsWith("spec") || line.startsWith("metadata")), line);
  }
}

Deno.test("validation on CREATE: every rule", async (t) => {
  for (const c of createCases) await t.step(c.name, () => runCase(c));
});

Deno.test("validation on UPDATE: unsafe changes refused, owned Machines not re-refused", async (t) => {
  for (const c of updateCases) await t.step(c.name, () => runCase(c));
});

Deno.test("the Secret check: errors and slow answers become warnings, never hangs", async (t) => {
  const object = cluster(withRepo({ ...three, credentialsRef: { name: "git" } }));
  const base = staticLookup({ machines: fleet(3) });
  const cases: { name: string; secretExists: AdmissionLookup["secretExists"]; warning: RegExp }[] = [
    {
      name: "the GET fails",
      secretExists: () => Promise.reject(new Error('secrets "git" is forbidden')),
      warning:
        /^spec\.credentialsRef\.name: could not check that Secret git exists \(secrets "git" is forbidden\); make sure it does$/,
    },
    {
      name: "the GET hangs",
      secretExists: () => new Promise(() => {}),
      warning: /^spec\.credentialsRef\.name: could not check that Secret git exists \(no answer within 50 ms\)/,
    },
  ];
  for (const c of cases) {
    await t.step(c.name, async () => {
      const a = webhookApp({ lookup: { ...base, secretExists: c.secretExists }, secretCheckTimeoutMs: 50 });
      const started = performance.now();
      const res = await post(a, VALIDATE_PATH, reviewBody("CREATE", object));
      assert.ok(performance.now() - started < 2000);
      assert.equal(res.json.response.allowed, true);
      check(res.json.response.warnings, [c.warning], "warnings");
    });
  }
  await t.step("an unchanged spec asks nothing", async () => {
    let asked = 0;
    const a = webhookApp({ lookup: { ...base, secretExists: () => (asked++, Promise.resolve(false)) } });
    const res = await post(a, VALIDATE_PATH, reviewBody("UPDATE", object, object));
    assert.equal(res.json.response.allowed, true);
    assert.equal(asked, 0);
  });
});

// ---------------------------------------------------------------- defaulting

/** Applies `add` operations (all the webhook sends). */
function applyPatch(obj: unknown, ops: { op: string; path: string; value: unknown }[]): unknown {
  const out = structuredClone(obj) as Record<string, unknown>;
  for (const op of ops) {
    assert.equal(op.op, "add");
    const parts = op.path.split("/").slice(1).map((p) => p.replaceAll("~1", "/").replaceAll("~0", "~"));
    let at: Record<string, unknown> = out;
    for (const p of parts.slice(0, -1)) at = at[p] as Record<string, unknown>;
    assert.ok(!(parts.at(-1)! in at), `patch adds ${op.path}, which exists`);
    at[parts.at(-1)!] = op.value;
  }
  return out;
}

async function mutate(object: unknown, opts: Partial<WebhookAppOptions> = {}) {
  const res = await post(app({}, opts), MUTATE_PATH, reviewBody("CREATE", object));
  assert.equal(res.status, 200, res.text);
  const r = res.json.response;
  assert.equal(r.allowed, true);
  if (r.patch === undefined) {
    assert.equal(r.patchType, undefined);
    return [];
  }
  assert.equal(r.patchType, "JSONPatch");
  return JSON.parse(atob(r.patch));
}

Deno.test("defaulting: JSON Patch, idempotent", async (t) => {
  await t.step("gitRepo from the default repository, and the schema's defaults", async () => {
    const spec = { controlPlane: { machines: ["cp-1"] }, controlPlaneEndpoint: { host: "api.example" } };
    const object = cluster(spec);
    const ops = await mutate(object, { defaultGitRepo: REPO });
    for (
      const want of [
        { op: "add", path: "/spec/gitRepo", value: REPO },
        { op: "add", path: "/spec/controlPlaneEndpoint/port", value: 6443 },
        { op: "add", path: "/spec/fullInstall", value: false },
        { op: "add", path: "/spec/dataPlane", value: {} },
      ]
    ) {
      assert.ok(
        ops.some((o: unknown) => isDeepStrictEqual(o, want)),
        `missing ${JSON.stringify(want)} in ${JSON.stringify(ops)}`,
      );
    }
    const patched = applyPatch(object, ops) as { spec: unknown };
    assert.deepEqual(
      patched.spec,
      { ...KubernetesClusterSpec.parse(spec), gitRepo: REPO },
      "the patch adds exactly the schema's defaults",
    );
    assert.deepEqual(await mutate(patched, { defaultGitRepo: REPO }), [], "a second pass has nothing to do");
  });
  await t.step("a complete object gets no patch", async () => {
    const spec = KubernetesClusterSpec.parse({
      gitRepo: "https://mine.example/x.git",
      controlPlane: { count: 1 },
      fullInstall: true,
    });
    assert.deepEqual(await mutate(cluster(spec), { defaultGitRepo: REPO }), []);
  });
  await t.step("without a default repository gitRepo stays absent", async () => {
    const ops = await mutate(cluster({ controlPlane: { count: 1 } }));
    assert.ok(ops.length > 0);
    assert.ok(!ops.some((o: { path: string }) => o.path === "/spec/gitRepo"), JSON.stringify(ops));
  });
  await t.step("an invalid spec gets only gitRepo; validation explains the rest", async () => {
    const ops = await mutate(cluster({ controlPlane: { machines: ["Bad_Name"] } }), { defaultGitRepo: REPO });
    assert.deepEqual(ops, [{ op: "add", path: "/spec/gitRepo", value: REPO }]);
  });
  await t.step("no spec: no patch", async () => {
    assert.deepEqual(await mutate(cluster(undefined), { defaultGitRepo: REPO }), []);
  });
});

// ---------------------------------------------------------------- bad input

Deno.test("bad input: a clear 4xx, never a crash or a hang", async (t) => {
  const good = reviewBody("CREATE", cluster(withRepo(three)));
  const cases: { name: string; body: unknown; status: number; message: RegExp; path?: string }[] = [
    {
      name: "malformed JSON",
      body: '{"apiVersion": ',
      status: 400,
      message: /^bad AdmissionReview: the body is not valid JSON: /,
    },
    { name: "empty body", body: "", status: 400, message: /not valid JSON/ },
    { name: "an array", body: "[]", status: 400, message: /must be a JSON object: an AdmissionReview/ },
    {
      name: "wrong kind",
      body: { ...good, kind: "Pod" },
      status: 400,
      message: /kind must be AdmissionReview, got "Pod"/,
    },
    {
      name: "wrong API version",
      body: { ...good, apiVersion: "admission.k8s.io/v1beta1" },
      status: 400,
      message: /apiVersion must be admission\.k8s\.io\/v1, got "admission\.k8s\.io\/v1beta1"/,
    },
    {
      name: "no request",
      body: { apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview" },
      status: 400,
      message: /request is missing/,
    },
    {
      name: "missing request.uid",
      body: { ...good, request: { ...good.request, uid: undefined } },
      status: 400,
      message: /request\.uid is missing/,
    },
    {
      name: "missing object on CREATE",
      body: reviewBody("CREATE", undefined),
      status: 400,
      message: /request\.object is missing: a CREATE carries the object/,
    },
    {
      name: "missing oldObject on UPDATE",
      body: reviewBody("UPDATE", cluster(three)),
      status: 400,
      message: /request\.oldObject is missing/,
    },
    {
      name: "unknown operation",
      body: { ...good, request: { ...good.request, operation: "PATCH" } },
      status: 400,
      message: /request\.operation must be/,
    },
    { name: "the mutating endpoint too", body: "nope", status: 400, message: /not valid JSON/, path: MUTATE_PATH },
  ];
  const a = app({ machines: fleet(3) });
  for (const c of cases) {
    await t.step(c.name, async () => {
      const res = await post(a, c.path ?? VALIDATE_PATH, c.body);
      assert.equal(res.status, c.status, res.text);
      assert.match(res.text, c.message);
    });
  }

  const big = JSON.stringify({ ...good, padding: "x".repeat(3 * 1024 * 1024) });
  await t.step("oversized body with content-length", async () => {
    const res = await post(a, VALIDATE_PATH, big, { headers: { "content-length": String(big.length) } });
    assert.equal(res.status, 413);
    assert.match(res.text, /^bad AdmissionReview: the body is larger than 3145728 bytes$/);
  });
  await t.step("oversized body streamed without content-length", async () => {
    const bytes = new TextEncoder().encode(big);
    const body = new ReadableStream<Uint8Array>({
      start(ctl) {
        for (let i = 0; i < bytes.length; i += 65536) ctl.enqueue(bytes.subarray(i, i + 65536));
        ctl.close();
      },
    });
    const res = await a.request(VALIDATE_PATH, { method: "POST", body, headers: { "transfer-encoding": "chunked" } });
    assert.equal(res.status, 413);
    assert.match(await res.text(), /larger than 3145728 bytes/);
  });
  await t.step("a body just under the limit is read", async () => {
    const fits = JSON.stringify({ ...good, padding: "x".repeat(3 * 1024 * 1024 - 2000) });
    const res = await post(a, VALIDATE_PATH, fits);
    assert.equal(res.status, 200);
    assert.equal(res.json.response.allowed, true);
  });
  await t.step("unknown paths are a 404 that says what is served", async () => {
    const res = await a.request("/validate", { method: "POST", body: "{}" });
    assert.equal(res.status, 404);
    assert.match(await res.text(), /POST \/validate-kubernetescluster and POST \/mutate-kubernetescluster/);
  });
});

Deno.test("requests NICO cannot judge: refused or allowed with the reason, at once", async (t) => {
  const object = cluster(withRepo(three));
  await t.step("a lookup that throws: allowed false, code 500, the reason", async () => {
    const lookup: AdmissionLookup = {
      ...staticLookup({}),
      machines: () => {
        throw new Error("cache exploded");
      },
    };
    const res = await post(webhookApp({ lookup }), VALIDATE_PATH, reviewBody("CREATE", object));
    assert.equal(res.status, 200);
    assert.deepEqual(res.json.response, {
      uid: "req-1",
      allowed: false,
      status: {
        code: 500,
        reason: "InternalError",
        message: "NICO's webhook could not check this object: cache exploded",
      },
    });
  });
  await t.step("a cache that is not synced: allowed false, code 503", async () => {
    const lookup: AdmissionLookup = {
      ...staticLookup({}),
      machines: () => {
        throw new LookupNotReady("NICO's cache of machines is still loading; try again in a few seconds");
      },
    };
    const res = await post(webhookApp({ lookup }), VALIDATE_PATH, reviewBody("CREATE", object));
    assert.equal(res.json.response.allowed, false);
    assert.equal(res.json.response.status.code, 503);
    assert.match(res.json.response.status.message, /still loading/);
  });
  await t.step("a metadata-only update passes even while the cache is loading", async () => {
    const lookup: AdmissionLookup = {
      ...staticLookup({}),
      machines: () => {
        throw new LookupNotReady("still loading");
      },
    };
    const labelled = { ...object, metadata: { ...object.metadata, labels: { team: "infra" } } };
    const res = await post(webhookApp({ lookup }), VALIDATE_PATH, reviewBody("UPDATE", labelled, object));
    assert.deepEqual(res.json.response, { uid: "req-1", allowed: true });
  });
  await t.step("another kind of object: refused with the reason", async () => {
    const res = await post(app(), VALIDATE_PATH, reviewBody("CREATE", { metadata: { name: "p" } }, undefined, "Pod"));
    assert.equal(res.json.response.allowed, false);
    assert.equal(res.json.response.status.code, 400);
    assert.match(
      res.json.response.status.message,
      /admits only nico\.homystack\.com KubernetesCluster objects, not v1alpha1 Pod/,
    );
  });
  await t.step("DELETE is allowed untouched", async () => {
    for (const path of [VALIDATE_PATH, MUTATE_PATH]) {
      const res = await post(app(), path, reviewBody("DELETE", undefined, object));
      assert.deepEqual(res.json.response, { uid: "req-1", allowed: true });
    }
  });
});

// ---------------------------------------------------------------- configurations

Deno.test("webhook configurations: golden", async (t) => {
  const render = (o: Parameters<typeof webhookConfigurations>[0]) => {
    const { validating, mutating } = webhookConfigurations(o);
    return `${stringify(validating)}---\n${stringify(mutating)}`;
  };
  await t.step("in-cluster Service with NICO's CA bundle", async () => {
    await assertGolden(
      "webhook-configurations-service.yaml",
      render({ service: { namespace: "nico-system", name: "nico-webhook" }, caBundlePem: "CA PEM" }),
    );
  });
  await t.step("URL and cert-manager's inject-ca-from", () => {
    const { validating, mutating } = webhookConfigurations({
      url: "https://127.0.0.1:9443/",
      injectCaFrom: "nico-system/nico-webhook",
    });
    assert.deepEqual(validating.webhooks[0]!.clientConfig, {
      url: "https://127.0.0.1:9443/validate-kubernetescluster",
    });
    assert.deepEqual(mutating.webhooks[0]!.clientConfig, { url: "https://127.0.0.1:9443/mutate-kubernetescluster" });
    assert.deepEqual(validating.metadata.annotations, { "cert-manager.io/inject-ca-from": "nico-system/nico-webhook" });
    assert.equal(validating.webhooks[0]!.timeoutSeconds, 5);
  });
  await t.step("exactly one of service and url", () => {
    assert.throws(() => webhookConfigurations({}), /exactly one of service and url/);
    assert.throws(
      () => webhookConfigurations({ url: "https://x", service: { namespace: "a", name: "b" } }),
      /exactly one of service and url/,
    );
  });
});

// ---------------------------------------------------------------- TLS server

Deno.test("the TLS server serves the app on loopback and reloads a renewed certificate", async () => {
  const ca1 = await createCa({ commonName: "ca-one" });
  const ca2 = await createCa({ commonName: "ca-two" });
  const leaf = (ca: typeof ca1) =>
    issueCert(ca, { commonName: "127.0.0.1", ipAddresses: ["127.0.0.1"], usage: "server", days: 1 });
  let current = await leaf(ca1);
  const provider: TlsProvider = { load: () => Promise.resolve(current), describe: () => "test" };
  const server = await startWebhookServer({
    app: app({ machines: fleet(3) }),
    hostname: "127.0.0.1",
    port: 0,
    tls: provider,
    reloadIntervalMs: 0,
  });
  const trusting = (ca: typeof ca1) => Deno.createHttpClient({ caCerts: [ca.certPem] });
  const c1 = trusting(ca1);
  const c2 = trusting(ca2);
  const call = async (client: Deno.HttpClient) => {
    const res = await fetch(`https://127.0.0.1:${server.port}${VALIDATE_PATH}`, {
      method: "POST",
      body: JSON.stringify(reviewBody("CREATE", cluster(withRepo(three)))),
      client,
    });
    return (await res.json()).response.allowed as boolean;
  };
  try {
    assert.ok(server.port > 0);
    assert.equal(await call(c1), true);
    await assert.rejects(call(c2), "a client that trusts only the other CA is refused");
    assert.equal(await server.reload(), false, "same certificate: nothing to do");

    const good = current;
    current = { certPem: good.certPem, keyPem: (await leaf(ca1)).keyPem };
    await assert.rejects(server.reload(), /the renewed webhook certificate is unusable: .*KeyMismatch/);
    current = { certPem: "not a certificate", keyPem: good.keyPem };
    await assert.rejects(server.reload(), /unusable/);
    assert.equal(await call(c1), true, "a bad certificate leaves the old one serving");

    current = await leaf(ca2);
    assert.equal(await server.reload(), true);
    assert.equal(await call(c2), true, "the renewed certificate is served on the same port");
    const c1b = trusting(ca1);
    await assert.rejects(call(c1b), "the old certificate is gone");
    c1b.close();
  } finally {
    c1.close();
    c2.close();
    await server.stop();
  }
});
