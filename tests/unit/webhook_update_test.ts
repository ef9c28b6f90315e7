/** Admission webhook: every validation rule on UPDATE, and the credentials Secret check. */
import assert from "node:assert/strict";
import { CLUSTER_LABEL } from "../../core/contract/labels.ts";
import { staticLookup } from "../../webhooks/lookup.ts";
import type { SecretAccessCheck } from "../../webhooks/authorize.ts";
import { webhookApp } from "../../webhooks/app.ts";
import { VALIDATE_PATH } from "../../webhooks/paths.ts";
import {
  app,
  Case,
  check,
  cluster,
  fleet,
  machine,
  NS,
  ownedConfigs,
  ownedFleet,
  post,
  reviewBody,
  runCase,
  status,
  three,
  withRepo,
} from "../webhook_kit.ts";

/** Three control-plane Machines chosen by label, not by name. */
const threeBySelector = { controlPlane: { machineSelector: { matchLabels: { role: "cp" } }, count: 3 } };

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
      withRepo({ ...threeBySelector, ref: "v2" }),
      { status },
    ),
    oldObject: cluster(withRepo(threeBySelector), {
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
      withRepo({ ...threeBySelector, ref: "v2" }),
      { status },
    ),
    oldObject: cluster(withRepo(threeBySelector), {
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
    object: cluster(withRepo(threeBySelector), {
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
      /^spec\.controlPlane\.machines: 2 control-plane Machines need 2 for etcd quorum, so they survive no failure/,
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

Deno.test("validation on UPDATE: unsafe changes refused, owned Machines not re-refused", async (t) => {
  for (const c of updateCases) await t.step(c.name, () => runCase(c));
});

Deno.test("the access check (finding 1): errors and slow answers refuse, never hang; unchanged references ask nothing", async (t) => {
  const object = cluster(withRepo({ ...three, credentialsRef: { name: "git" } }));
  const lookup = staticLookup({ machines: fleet(3) });
  const cases: { name: string; access: SecretAccessCheck; error: RegExp }[] = [
    {
      name: "the SubjectAccessReview fails",
      access: { canGetSecret: () => Promise.reject(new Error("subjectaccessreviews is forbidden")) },
      error:
        /^spec\.credentialsRef\.name: NICO could not check that you may read Secret git \(subjectaccessreviews is forbidden\); try again/,
    },
    {
      name: "the SubjectAccessReview hangs",
      access: { canGetSecret: () => new Promise(() => {}) },
      error: /^spec\.credentialsRef\.name: NICO could not check .* \(no answer from the API server within 50 ms\)/,
    },
  ];
  for (const c of cases) {
    await t.step(c.name, async () => {
      const a = webhookApp({ lookup, access: c.access, accessCheckTimeoutMs: 50 });
      const started = performance.now();
      const res = await post(a, VALIDATE_PATH, reviewBody("CREATE", object));
      assert.ok(performance.now() - started < 2000);
      assert.equal(res.json.response.allowed, false);
      check(res.json.response.status.message.split("\n"), [c.error], "errors");
    });
  }
  const counting = () => {
    const asked: string[] = [];
    const access: SecretAccessCheck = {
      canGetSecret: (
        user,
        ns,
        name,
      ) => (asked.push(`${user.username}:${ns}/${name}`), Promise.resolve({ allowed: true })),
    };
    return { asked, access };
  };
  await t.step("a review without userInfo is refused", async () => {
    const body = reviewBody("CREATE", object);
    delete (body.request as { userInfo?: unknown }).userInfo;
    const res = await post(app({ machines: fleet(3) }), VALIDATE_PATH, body);
    assert.equal(res.json.response.allowed, false);
    assert.match(res.json.response.status.message, /the AdmissionReview names no user/);
  });
  await t.step("an unchanged spec, or a change elsewhere, asks nothing", async () => {
    const { asked, access } = counting();
    const a = webhookApp({ lookup, access });
    assert.equal((await post(a, VALIDATE_PATH, reviewBody("UPDATE", object, object))).json.response.allowed, true);
    const paused = cluster(withRepo({ ...three, credentialsRef: { name: "git" }, paused: true }));
    assert.equal((await post(a, VALIDATE_PATH, reviewBody("UPDATE", paused, object))).json.response.allowed, true);
    assert.deepEqual(asked, []);
  });
  await t.step("a new credentialsRef, or a new gitRepo while one is set, asks for the requesting user", async () => {
    const { asked, access } = counting();
    const a = webhookApp({ lookup, access });
    const other = cluster(withRepo({ ...three, credentialsRef: { name: "other" } }));
    await post(a, VALIDATE_PATH, reviewBody("UPDATE", other, object));
    const moved = cluster({ ...three, gitRepo: "https://elsewhere.example/x.git", credentialsRef: { name: "git" } });
    await post(a, VALIDATE_PATH, reviewBody("UPDATE", moved, object));
    assert.deepEqual(asked, [`alice:${NS}/other`, `alice:${NS}/git`]);
  });
});

// ---------------------------------------------------------------- defaulting
