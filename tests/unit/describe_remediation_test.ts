/** `nico describe` shows a Machine's out-of-service mark and the Remediating condition. */
import assert from "node:assert/strict";
import { renderDescribe } from "../../cli/describe.ts";
import { clusterView, isAbnormal } from "../../cli/observe.ts";
import { REMEDIATED_ANNOTATION } from "../../core/contract/labels.ts";
import type { KubernetesCluster } from "../../crds/kubernetescluster.ts";
import { machine, ownedConfig, UID } from "../../testing/objects.ts";

const NOW = new Date("2026-01-01T01:00:00Z");
const MARK = "prod/worker at 2026-01-01T00:55:00Z: NodeNotReady: Node w-1 NotReady for 5m";

const cluster: KubernetesCluster = {
  apiVersion: "nico.homystack.com/v1alpha1",
  kind: "KubernetesCluster",
  metadata: { name: "prod", namespace: "default", uid: UID, creationTimestamp: "2026-01-01T00:00:00Z" },
  spec: { controlPlane: { machines: ["cp-1"] }, dataPlane: { machines: ["w-1", "w-2"], spares: ["w-3"] } } as never,
  status: {
    phase: "Updating",
    controlPlane: { ready: 1, total: 1, machines: ["cp-1"] },
    dataPlane: { ready: 1, total: 2, machines: ["w-2", "w-3"] },
    rollout: { upToDate: 2, total: 3, pending: ["w-3"], removing: ["w-1"] },
    conditions: [{
      type: "Remediating",
      status: "True",
      reason: "Remediating",
      message: "w-1 (NodeNotReady) is replaced by w-3 (joining); w-1 is removed in its turn",
      lastTransitionTime: "2026-01-01T00:55:00Z",
    }],
  },
};

Deno.test("describe: the marked node says it is out of service and why; Remediating is shown", () => {
  const w1 = machine("w-1", { claim: "prod" });
  w1.metadata.annotations = { [REMEDIATED_ANNOTATION]: MARK };
  const view = clusterView(
    cluster,
    ["cp-1", "w-1", "w-2"].map((m) => ownedConfig("prod", m, m === "cp-1" ? "control-plane" : "worker")),
    [machine("cp-1", { claim: "prod" }), w1, machine("w-2", { claim: "prod" }), machine("w-3", { claim: "prod" })],
    NOW,
  );
  const text = renderDescribe(view, { color: false, width: Infinity }, { showConditions: "problems", now: NOW });
  const row = text.split("\n").find((l) => l.includes("Machine/w-1"));
  assert.match(
    row ?? "",
    /Machine\/w-1 \(out of service\).*removing.*out of service \(nico\.homystack\.com\/remediated: prod\/worker at .*NodeNotReady/,
  );
  assert.match(text, /Remediating=True Remediating: w-1 \(NodeNotReady\) is replaced by w-3/);
});

Deno.test("Remediating is not fine while True or refused, fine when nothing is unhealthy", () => {
  const c = (status: string, reason: string) => ({ type: "Remediating", status, reason });
  assert.deepEqual(
    [c("True", "Remediating"), c("False", "QuorumWouldBeLost"), c("False", "NoUnhealthyNodes")].map(isAbnormal),
    [true, true, false],
  );
});
