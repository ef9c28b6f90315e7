/**
 * The rows of the planner's rule table (tests/unit/rollout_rules_test.ts) for the version rules
 * (core/rollout/version_rules.ts): the order of a version change, and the skew guard. Pure.
 */
import { versionChangesControlPlaneFirst, versionSkewGuard } from "../core/rollout/version_rules.ts";
import type { RolloutVersions } from "../core/rollout/types.ts";
import { input, leaving, missing, n, outdated, type Row } from "./rollout_rules_kit.ts";

/** Versions as the skew guard reads them: `cp-*` and `w-*` at these minors, each asked for `asks`. */
function versions(minors: Record<string, number>, asks: Record<string, number> = {}, target = true): RolloutVersions {
  const at = (minor: number) => ({ minor, patch: 0 });
  return {
    nodes: Object.entries(minors).map(([machine, minor]) =>
      machine.startsWith("cp")
        ? { machine, plane: "controlPlane", kubelet: at(minor), apiServer: at(minor) }
        : { machine, plane: "dataPlane", kubelet: at(minor) }
    ),
    asks: new Map(Object.entries(asks).map(([m, minor]) => [m, { minor }])),
    target,
  };
}
const ALL_AT_31 = { "cp-1": 31, "cp-2": 31, "cp-3": 31, "w-1": 31, "w-2": 31, "w-3": 31 };

/** The version rules' rows. */
export const VERSION_ROWS: Row[] = [
  {
    rule: versionChangesControlPlaneFirst,
    name: "a control-plane version change: ControlPlaneFirst for this pass, whatever the order says",
    input: input([n("cp-2", { ...outdated, versionChange: true }), n("w-1", outdated)]),
    want: {
      answer: "pass",
      order: "ControlPlaneFirst",
      reasons: ["the control plane's Kubernetes version changes: it goes first, whatever spec.rollout.order says"],
    },
  },
  {
    rule: versionChangesControlPlaneFirst,
    name: "where an upgrade stands is said while something is pending",
    input: input([n("cp-2", outdated)], {
      order: "ControlPlaneFirst",
      versions: { ...versions(ALL_AT_31, { "cp-2": 32 }), waiting: "the control plane goes to 1.32" },
    }),
    want: { answer: "pass", reasons: ["the control plane goes to 1.32"] },
  },
  {
    rule: versionChangesControlPlaneFirst,
    name: "…not for a change of the workers' version, nor for any other change",
    input: input([n("cp-2", outdated), n("w-1", { ...outdated, versionChange: true })]),
    want: { answer: "pass" },
  },
  {
    rule: versionSkewGuard,
    name: "no versions known: passes",
    input: input([n("w-1", outdated)]),
    before: { update: ["w-1"] },
    want: { answer: "pass", update: ["w-1"] },
  },
  {
    rule: versionSkewGuard,
    name: "a step that would put a kubelet above the API servers is not taken",
    input: input([n("w-1", outdated)], { versions: versions(ALL_AT_31, { "w-1": 32 }) }),
    before: { update: ["w-1"] },
    want: {
      answer: "pass",
      reasons: [
        "w-1 stays where it is, not 1.32: w-1's kubelet 1.32 is newer than cp-1's API server 1.31.0: a kubelet " +
        "must not be newer than kube-apiserver; roll the control plane first (spec.rollout.order: " +
        "ControlPlaneFirst) or set spec.version",
      ],
    },
  },
  {
    rule: versionSkewGuard,
    name: "a step within the policy is taken",
    input: input([n("cp-2", outdated)], { versions: versions(ALL_AT_31, { "cp-2": 32 }) }),
    before: { update: ["cp-2"] },
    want: { answer: "pass", update: ["cp-2"] },
  },
  {
    rule: versionSkewGuard,
    name: "a break that exists halts: nothing else is created, changed or removed",
    input: input([n("w-2", outdated), n("w-9", missing)], {
      versions: versions({ ...ALL_AT_31, "w-1": 32 }, {}, false),
      departing: [leaving("w-8")],
    }),
    before: { create: ["w-9"], update: ["w-2"], remove: ["w-8"] },
    want: { answer: "pass", halted: "w-1", reasons: ["rollout halted at w-1 (version skew)"] },
  },
  {
    rule: versionSkewGuard,
    name: "…but a control-plane step fixes it forward under ControlPlaneFirst",
    input: input([n("cp-2", outdated), n("w-2", outdated)], {
      order: "ControlPlaneFirst",
      versions: versions({ ...ALL_AT_31, "w-1": 32 }, {}, false),
    }),
    before: { update: ["cp-2"] },
    want: {
      answer: "pass",
      update: ["cp-2"],
      halted: "w-1",
      reasons: ["rollout halted at w-1 (version skew); fixing forward cp-2 (the control plane)"],
    },
  },
  {
    rule: versionSkewGuard,
    name: "…and with spec.version set",
    input: input([n("cp-2", outdated)], { versions: versions({ ...ALL_AT_31, "w-1": 32 }, { "cp-2": 32 }) }),
    before: { update: ["cp-2"] },
    want: {
      answer: "pass",
      update: ["cp-2"],
      halted: "w-1",
      reasons: ["rollout halted at w-1 (version skew); fixing forward cp-2 (the control plane)"],
    },
  },
  {
    rule: versionSkewGuard,
    name: "…nothing to guard while paused",
    input: input([n("w-1", outdated)], { paused: true, versions: versions({ ...ALL_AT_31, "w-1": 32 }) }),
    want: { answer: "pass" },
  },
];
