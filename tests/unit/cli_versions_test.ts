/**
 * `nico describe` and `nico plan` with Kubernetes versions (cli/versions.ts): a VERSION column once the status
 * lists versions (absent otherwise, so the other golden files stand), and every step of a chained upgrade.
 */
import assert from "node:assert/strict";
import { renderDescribe } from "../../cli/describe.ts";
import { renderGet } from "../../cli/get.ts";
import { clusterView } from "../../cli/observe.ts";
import { renderPlan } from "../../cli/plan.ts";
import { renderClusterNix } from "../../core/render/clusternix.ts";
import type { KubernetesCluster } from "../../crds/kubernetescluster.ts";
import type { NixosConfiguration } from "../../core/contract/nio.ts";
import { machine, ownedConfig, UID } from "../../testing/objects.ts";

import { assertGolden } from "../golden.ts";

const NOW = new Date("2026-01-01T01:00:00Z");
const STYLE = { color: false, width: Infinity };
const CP = ["cp-1", "cp-2", "cp-3"];
const WORKERS = ["w-1", "w-2"];

/** A configuration the older NIO applied (its Machine says so too). */
function applied(m: string): NixosConfiguration {
  const cfg = ownedConfig("prod", m, CP.includes(m) ? "control-plane" : "worker");
  const at = "2026-01-01T00:30:00Z";
  return {
    ...cfg,
    metadata: { ...cfg.metadata, annotations: { "nico.homystack.com/spec-changed-at": "2026-01-01T00:10:00Z" } },
    status: {
      conditions: [{ type: "Applied", status: "True", reason: "Success", lastTransitionTime: at }],
      lastAppliedTime: at,
    },
  };
}

/** A configuration whose cluster.nix asks for `version`. */
function asking(m: string, version: string): NixosConfiguration {
  const cfg = applied(m);
  const text = renderClusterNix({
    name: "prod",
    namespace: "default",
    endpoint: { host: "127.0.0.2", port: 6443 },
    bootstrapNode: "cp-1",
    controlPlane: [],
    workers: [],
    kubernetesVersion: version,
  });
  return {
    ...cfg,
    spec: { ...cfg.spec, additionalFiles: [{ path: "cluster.nix", valueType: "Inline", inline: text }] },
  };
}

/** A 3 + 2 cluster on its way from 1.30 to 1.33: cp-2 reports 1.31 already, cp-3 is asked for it next. */
function midChain(): KubernetesCluster {
  const at = (v: string) => `v${v}.4+k3s1`;
  return {
    apiVersion: "nico.homystack.com/v1alpha1",
    kind: "KubernetesCluster",
    metadata: { name: "prod", namespace: "default", uid: UID, creationTimestamp: "2026-01-01T00:00:00Z" },
    spec: { version: "1.33", controlPlane: { machines: CP }, dataPlane: { machines: WORKERS } } as never,
    status: {
      phase: "Updating",
      bootstrapNode: "cp-1",
      kubeconfigSecret: "prod-kubeconfig",
      controlPlane: { ready: 3, total: 3, machines: CP },
      dataPlane: { ready: 2, total: 2, machines: WORKERS },
      rollout: { upToDate: 3, total: 5, pending: ["cp-3", "cp-1"] },
      version: "1.30.4",
      versions: {
        target: "1.33",
        step: "1.31",
        chain: ["1.31", "1.32", "1.33"],
        nodes: [
          { name: "cp-1", kubelet: at("1.30"), apiServer: at("1.30"), asked: "1.31" },
          { name: "cp-2", kubelet: at("1.31"), apiServer: at("1.31"), asked: "1.31" },
          { name: "cp-3", kubelet: at("1.30"), apiServer: at("1.30"), asked: "1.31" },
          { name: "w-1", kubelet: at("1.30") },
          { name: "w-2", kubelet: at("1.30") },
        ],
      },
    },
  };
}

function view(c: KubernetesCluster) {
  const configs = [
    asking("cp-1", "1.30"),
    asking("cp-2", "1.31"),
    asking("cp-3", "1.30"),
    ...WORKERS.map(applied),
  ];
  const machines = [...CP, ...WORKERS].map((m) => machine(m, { claim: "prod", applied: `prod.${m}` }));
  return clusterView(c, configs, machines, NOW, { nio: { generation: "older", source: "assumed" }, jobs: [] });
}

Deno.test("nico describe: each node's version, and where it goes", async () => {
  const text = renderDescribe(view(midChain()), STYLE, { showConditions: "problems", now: NOW });
  await assertGolden("cli-describe-versions.txt", text + "\n");
  assert.match(text.split("\n").find((l) => l.includes("Machine/cp-3"))!, /1\.30\.4 → 1\.31/);
  assert.match(text.split("\n")[1]!, /1\.30\.4 → 1\.33/);
});

Deno.test("nico describe without versions in the status: no VERSION column", () => {
  const c = midChain();
  const { versions: _v, version: _lowest, ...status } = c.status!;
  const text = renderDescribe(view({ ...c, status }), STYLE, { showConditions: "problems", now: NOW });
  assert.doesNotMatch(text, /VERSION/);
});

Deno.test("nico plan: every step of the chain, the control plane first, then the workers", async () => {
  const text = renderPlan(view(midChain()), STYLE);
  await assertGolden("cli-plan-versions.txt", text + "\n");
  assert.match(text, /Kubernetes 1\.30\.4 → 1\.33 \(spec\.version\)/);
  assert.match(text, /1\. control plane to 1\.31: cp-3, cp-1\n {2}2\. control plane to 1\.32: cp-2, cp-3, cp-1/);
  assert.match(text, /4\. workers to 1\.33: w-1, w-2/);
});

Deno.test("nico get: a VERSION column (the lowest version reported) once any cluster reports one", () => {
  const named = (name: string, version?: string): KubernetesCluster => ({
    apiVersion: "nico.homystack.com/v1alpha1",
    kind: "KubernetesCluster",
    metadata: { name, namespace: "default", creationTimestamp: "2026-01-01T00:00:00Z" },
    spec: { controlPlane: { machines: ["cp-1"] } },
    status: { phase: "Ready", ...(version ? { version } : {}) },
  } as KubernetesCluster);
  const lines = renderGet([named("old", "v1.31.4"), named("new")], false, STYLE, NOW).split("\n");
  assert.deepEqual(lines[0]!.split(/\s{2,}/), [
    "NAME",
    "PHASE",
    "CONTROL PLANE",
    "WORKERS",
    "VERSION",
    "ROLLOUT",
    "AGE",
  ]);
  const old = lines.find((l) => l.startsWith("old"))!;
  assert.equal(old.slice(lines[0]!.indexOf("VERSION")).split(/\s+/)[0], "v1.31.4");
  const none = renderGet([named("new")], false, STYLE, NOW).split("\n")[0]!;
  assert.ok(!none.includes("VERSION"), none);
});
