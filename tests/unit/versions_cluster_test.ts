/**
 * A cluster's versions in one pass (core/versions/cluster.ts), and what the status makes of them: the version
 * each cluster.nix asks for, which changes are version changes, status.version and status.versions, and
 * `Stalled` for a version skew or a downgrade.
 */
import assert from "node:assert/strict";
import { clusterVersions, type MemberVersions } from "../../core/versions/cluster.ts";
import { computeStatus, type StatusInput } from "../../core/status/cluster.ts";
import { selectMachines } from "../../core/machines/selection.ts";
import type { RolloutPlan } from "../../core/rollout/types.ts";
import { cluster, machine } from "../../testing/objects.ts";

const cp = (machine: string, o: Partial<MemberVersions> = {}): MemberVersions => ({
  machine,
  plane: "controlPlane",
  exists: true,
  ...o,
});
const w = (machine: string, o: Partial<MemberVersions> = {}): MemberVersions => ({
  ...cp(machine, o),
  plane: "dataPlane",
});
const on = (kubelet: string) => ({ kubelet, apiServer: kubelet });

Deno.test("without spec.version: nothing asked, the versions reported, the lowest as status.version", () => {
  const v = clusterVersions(undefined, [cp("cp-1", on("v1.31.4+k3s1")), w("w-1", { kubelet: "v1.31.2+k3s1" })]);
  assert.deepEqual([...v.render], []);
  assert.deepEqual([...v.changing], []);
  assert.deepEqual(v.status, {
    version: "1.31.2",
    versions: {
      nodes: [
        { name: "cp-1", kubelet: "v1.31.4+k3s1", apiServer: "v1.31.4+k3s1" },
        { name: "w-1", kubelet: "v1.31.2+k3s1" },
      ],
    },
  });
  assert.equal(v.rollout?.target, false, "the skew guard judges it all the same");
  assert.equal(clusterVersions(undefined, [cp("cp-1"), w("w-1")]).rollout, undefined, "nothing reported: no guard");
  assert.deepEqual(clusterVersions(undefined, [cp("cp-1"), w("w-1")]).status, {});
});

Deno.test("spec.version set on a running cluster that asks for none: the control plane's change is a version change", () => {
  const v = clusterVersions({ minor: 33 }, [cp("cp-1", on("v1.31.4")), w("w-1", { kubelet: "v1.31.4" })]);
  assert.deepEqual([...v.render], [["cp-1", "1.32"]], "one minor at a time; the worker keeps asking for nothing");
  assert.deepEqual([...v.changing], ["cp-1"]);
  assert.deepEqual(v.status.versions, {
    target: "1.33",
    step: "1.32",
    chain: ["1.32", "1.33"],
    nodes: [
      { name: "cp-1", kubelet: "v1.31.4", apiServer: "v1.31.4", asked: "1.32" },
      { name: "w-1", kubelet: "v1.31.4" },
    ],
  });
  assert.deepEqual(v.rollout?.asks.get("cp-1"), { minor: 32 });
});

Deno.test("a new node is asked for the target, and its creation is no version change", () => {
  const v = clusterVersions({ minor: 31 }, [cp("cp-1", { exists: false }), w("w-1", { exists: false })]);
  assert.deepEqual([...v.render], [["cp-1", "1.31"], ["w-1", "1.31"]]);
  assert.deepEqual([...v.changing], []);
});

Deno.test("a control-plane node's API server counts before its kubelet; with no answer, its kubelet", () => {
  const v = clusterVersions({ minor: 32 }, [
    cp("cp-1", { asked: { minor: 31 }, kubelet: "v1.31.0", apiServer: "v1.32.0" }),
    cp("cp-2", { asked: { minor: 32 }, kubelet: "v1.32.0" }),
    w("w-1", { asked: { minor: 31 }, kubelet: "v1.31.0" }),
  ]);
  assert.deepEqual(v.plan.chain, [], "the control plane reports 1.32");
  assert.equal(v.render.get("w-1"), "1.32", "the workers follow");
});

Deno.test("workload connections off: an applied node reports what it asks for", () => {
  const v = clusterVersions({ minor: 32 }, [
    cp("cp-1", { asked: { minor: 32 }, appliedUnseen: true }),
    w("w-1", { asked: { minor: 31 }, appliedUnseen: true }),
  ]);
  assert.equal(v.render.get("w-1"), "1.32");
  assert.equal(v.status.version, "1.31");
});

Deno.test("a downgrade asks no node for anything new", () => {
  const v = clusterVersions({ minor: 30 }, [cp("cp-1", { asked: { minor: 31 }, ...on("v1.31.2") })]);
  assert.deepEqual([...v.render], [["cp-1", "1.31"]]);
  assert.deepEqual([...v.changing], []);
  assert.ok(v.plan.downgrade);
});

function status(plan: RolloutPlan, versions?: StatusInput["versions"]) {
  const c = cluster({ controlPlane: { machines: ["cp-1"] }, dataPlane: { machines: ["w-1"] } });
  const selection = selectMachines({ cluster: c, machines: [machine("cp-1"), machine("w-1")], configurations: [] });
  const node = (m: string, plane: "controlPlane" | "dataPlane") => ({
    machine: m,
    plane,
    state: "Ready" as const,
    reason: "Joined",
    detail: "applied; Node Ready",
    upToDate: m === "w-1",
  });
  return computeStatus({
    generation: 2,
    previous: undefined,
    deleting: false,
    selection,
    nodes: [node("cp-1", "controlPlane"), node("w-1", "dataPlane")],
    bootstrap: "cp-1",
    endpoint: "https://127.0.0.1:6443",
    kubeconfigSecret: "prod-kubeconfig",
    rollout: { plan, paused: false, specHash: "0123456789abcdef", controlPlaneSize: 1 },
    versions,
    now: new Date("2026-01-01T12:00:00Z"),
  });
}
const cond = (s: ReturnType<typeof computeStatus>, type: string) => s.conditions!.find((c) => c.type === type)!;
const PLAN: RolloutPlan = { create: [], update: [], remove: [], pending: ["cp-1"], removing: [], updating: [] };

Deno.test("a version skew halts: Stalled=True VersionSkew and RollingOut=False RolloutStalled, naming the fix", () => {
  const detail = "VersionSkew: w-1's kubelet 1.32.0 is newer than cp-1's API server 1.31.0: a kubelet must not " +
    "be newer than kube-apiserver; roll the control plane first (spec.rollout.order: ControlPlaneFirst) or set " +
    "spec.version";
  const s = status({ ...PLAN, halted: { machine: "w-1", detail, reason: "VersionSkew" } }, {
    status: { version: "1.31.0" },
  });
  assert.equal(cond(s, "Stalled").status, "True");
  assert.equal(cond(s, "Stalled").reason, "VersionSkew");
  assert.match(cond(s, "Stalled").message, /^VersionSkew: w-1's kubelet 1\.32\.0 is newer than cp-1's API server/);
  assert.equal(cond(s, "RollingOut").reason, "RolloutStalled");
  assert.match(cond(s, "RollingOut").message, /halted at w-1 \(VersionSkew: .*set spec\.version\)/);
  assert.equal(s.version, "1.31.0");
});

Deno.test("a downgrade is Stalled=True VersionDowngrade; without one, versions change nothing else", () => {
  const s = status({ ...PLAN, pending: [] }, { status: {}, downgrade: "spec.version 1.30 is older than…" });
  assert.equal(cond(s, "Stalled").reason, "VersionDowngrade");
  const plain = status(PLAN);
  assert.equal(cond(plain, "Stalled").reason, "NotStalled");
  assert.equal(plain.version, undefined);
  assert.equal(plain.versions, undefined);
});
