/**
 * Admission of `spec.version` (webhooks/version_rules.ts, and the schema's pattern): what is no Kubernetes
 * version is refused naming the forms; a minor downgrade is refused, judged by what the control plane reports,
 * else by the old spec; a patch back within a minor passes; a jump over minors passes with word of the chain.
 */
import { type Case, cluster, ownedConfigs, ownedFleet, runCase, three, withRepo } from "../webhook_kit.ts";

/** A status whose control plane reports `apiServer` on every node (and its kubelets `kubelet`). */
function reporting(apiServer: string | undefined, kubelet = apiServer) {
  const names = three.controlPlane.machines;
  return {
    bootstrapNode: "cp-1",
    controlPlane: { ready: 3, total: 3, machines: names },
    versions: {
      nodes: names.map((name) => ({
        name,
        ...(kubelet ? { kubelet } : {}),
        ...(apiServer ? { apiServer } : {}),
      })),
    },
  };
}

const objects = { machines: ownedFleet(), configurations: ownedConfigs() };
const update = (version: string | undefined, oldVersion: string | undefined, status: unknown): Case => ({
  name: "",
  objects,
  op: "UPDATE",
  object: cluster(withRepo({ ...three, ...(version ? { version } : {}) }), { status }),
  oldObject: cluster(withRepo({ ...three, ...(oldVersion ? { version: oldVersion } : {}) }), { status }),
  errors: [],
});
const FORMS = "must be a Kubernetes version such as 1.31 or 1.31.4 (a leading v is allowed; no build or " +
  "pre-release suffix such as +k3s1 or -rc.1)";

const cases: Case[] = [
  {
    ...update("1.31.4+k3s1", undefined, reporting("v1.31.4")),
    name: "a build suffix is no spec.version",
    errors: [`spec.version: ${FORMS}`],
  },
  { ...update("2.0", undefined, undefined), name: "nor a major 2", errors: [`spec.version: ${FORMS}`] },
  {
    name: "nor anything on create",
    objects,
    object: cluster(withRepo({ ...three, version: "latest" })),
    errors: [`spec.version: ${FORMS}`],
  },
  {
    name: "any version on create",
    objects: { machines: ownedFleet() },
    object: cluster(withRepo({ controlPlane: { machines: ["cp-4", "cp-5", "cp-6"] }, version: "v1.33" })),
    errors: [],
  },
  {
    ...update("1.30", "1.31", reporting("v1.31.4+k3s1")),
    name: "a minor below what the control plane reports is refused",
    errors: [
      "spec.version: 1.30 is a downgrade: the control plane runs 1.31.4, and Kubernetes does not support going " +
      "back a minor; set spec.version to 1.31 or later",
    ],
  },
  {
    ...update("1.30", undefined, reporting("v1.31.4")),
    name: "…also when the spec asked for no version before",
    errors: [/^spec\.version: 1\.30 is a downgrade: the control plane runs 1\.31\.4/],
  },
  {
    ...update("1.31", "1.33", reporting("v1.31.2")),
    name: "what the control plane reports counts, not the old spec (it is still on its way)",
    errors: [],
  },
  {
    ...update("1.30", "1.31", reporting(undefined)),
    name: "no versions reported: judged by the old spec",
    errors: [/^spec\.version: 1\.30 is a downgrade: spec\.version was 1\.31,/],
  },
  {
    // The two-step bypass: set 1.31 (nothing reported), remove spec.version, then set 1.0.
    ...update("1.0", undefined, { ...reporting(undefined), versions: { target: "1.31" } }),
    name: "no versions reported and none in the old spec: judged by what NICO last asked for",
    errors: [/^spec\.version: 1\.0 is a downgrade: NICO last asked the control plane for 1\.31,/],
  },
  {
    ...update("1.30", undefined, {
      ...reporting(undefined),
      versions: { nodes: three.controlPlane.machines.map((name) => ({ name, asked: "1.31" })) },
    }),
    name: "…also by the version each control-plane node is asked for",
    errors: [/^spec\.version: 1\.30 is a downgrade: NICO last asked the control plane for 1\.31,/],
  },
  {
    ...update("1.31.1", "1.31.4", reporting("v1.31.4")),
    name: "a patch back within a minor passes",
    errors: [],
  },
  {
    ...update("1.33", "1.30", reporting("v1.30.9")),
    name: "a jump over several minors passes, with word of the chain",
    errors: [],
    warnings: [
      "spec.version: the control plane runs 1.30.9; NICO goes to 1.33 through 1.31, 1.32, 1.33 in turn: the " +
      "control plane one minor at a time, each fully rolled out and reported before the next, then the workers",
    ],
  },
  {
    ...update("1.31", "1.30", reporting("v1.30.9")),
    name: "one minor up: nothing to say",
    errors: [],
  },
  {
    ...update(undefined, "1.31", reporting("v1.31.4")),
    name: "dropping spec.version passes, with word of what it means",
    errors: [],
    warnings: [/^spec\.version: removed; NICO asks the nodes for no version from now on/],
  },
];

Deno.test("spec.version at admission", async (t) => {
  for (const c of cases) await t.step(c.name, () => runCase(c));
});
