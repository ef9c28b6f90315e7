/** Admission webhook: every validation rule on CREATE (cases run through the Hono app). */
import { type KubernetesCluster } from "../../crds/kubernetescluster.ts";
import { REMEDIATED_ANNOTATION as REMEDIATED } from "../../core/contract/labels.ts";
import {
  Case,
  cluster,
  fleet,
  foreignConfig,
  machine,
  NS,
  ownedConfig,
  REPO,
  runCase,
  three,
  withRepo,
} from "../webhook_kit.ts";

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
    objects: { machines: fleet(3) },
    object: cluster(withRepo({ ...three, credentialsRef: { name: "git", namespace: "other" } as { name: string } })),
    errors: [
      "spec.credentialsRef.namespace: credentialsRef has no namespace field: the Secret must be in the cluster's namespace infra, not other; copy Secret git into infra and remove credentialsRef.namespace",
    ],
  },
  {
    name: "credentialsRef with a namespace field, even its own",
    objects: { machines: fleet(3) },
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
      "spec.controlPlane.machines: 2 control-plane Machines need 2 for etcd quorum, so they survive no failure, the same as a single Machine; an update of either Machine stops the Kubernetes API; use an odd number (3)",
    ],
  },
  {
    name: "a four-node control plane by count is a warning",
    objects: { machines: fleet(4) },
    object: cluster(withRepo({ controlPlane: { machineSelector: { matchLabels: { role: "cp" } }, count: 4 } })),
    errors: [],
    warnings: [
      "spec.controlPlane.count: 4 control-plane Machines need 3 for etcd quorum, so they survive 1 failure, the same as 3 Machines; an update uses up that margin; use an odd number (3 or 5)",
    ],
  },
  {
    name: "a credentialsRef Secret the user may not get is refused (finding 1)",
    objects: { machines: fleet(3) },
    object: cluster(withRepo({ ...three, credentialsRef: { name: "deploy-token" } })),
    errors: [
      "spec.credentialsRef.name: user alice may not get Secret deploy-token in namespace infra, so it cannot make NICO send that Secret to a Git server; ask for get access to that Secret, or have someone who has it set spec.credentialsRef",
    ],
  },
  {
    name: "a credentialsRef Secret the user may get is fine",
    objects: { machines: fleet(3) },
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
  {
    name: "a spare also listed, or a spare of both planes",
    objects: { machines: fleet(3, 3) },
    object: cluster(withRepo({
      ...three,
      controlPlane: { machines: ["cp-1", "cp-2", "cp-3"], spares: ["w-3"] },
      dataPlane: { machines: ["w-1", "w-2"], spares: ["w-2", "w-3"] },
    })),
    errors: [
      "spec.dataPlane.spares[0]: Machine w-2 is also in spec.dataPlane.machines; a spare stands by for one plane: remove it from one",
      "spec.dataPlane.spares[1]: Machine w-3 is also in spec.controlPlane.spares; a spare stands by for one plane: remove it from one",
    ],
  },
  {
    name: "an explicit Machine out of service",
    objects: {
      machines: [
        ...fleet(2),
        { ...machine("cp-3"), metadata: { ...machine("cp-3").metadata, annotations: { [REMEDIATED]: "bad disk" } } },
      ],
    },
    object: cluster(withRepo(three)),
    errors: [
      "spec.controlPlane.machines[2]: Machine cp-3 is out of service (nico.homystack.com/remediated: bad disk); remove the annotation once the host is repaired to use it again; or pick another Machine",
    ],
  },
];

// An existing three-node cluster: cp-1..3 claimed and configured by prod.
Deno.test("validation on CREATE: every rule", async (t) => {
  for (const c of createCases) await t.step(c.name, () => runCase(c));
});
