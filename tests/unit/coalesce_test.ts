/** Which cluster updates call for a reconcile: a status-only change (NICO's own write) does not. */
import assert from "node:assert/strict";
import type { KubernetesCluster } from "../../crds/kubernetescluster.ts";
import { onlyStatusChanged } from "../../controllers/cluster/mappers.ts";

const base = {
  metadata: { name: "c", namespace: "ns", resourceVersion: "1", generation: 1, finalizers: ["f"] },
  spec: { controlPlane: { machines: ["cp-1"] } },
  status: { phase: "Provisioning" },
} as unknown as KubernetesCluster;
type Meta = { -readonly [K in keyof KubernetesCluster["metadata"]]: KubernetesCluster["metadata"][K] };
const next = (patch: (c: KubernetesCluster & { metadata: Meta }) => void) => {
  const c = structuredClone(base) as KubernetesCluster & { metadata: Meta };
  c.metadata.resourceVersion = "2";
  patch(c);
  return c as KubernetesCluster;
};

Deno.test("onlyStatusChanged: status writes are skipped; spec, metadata, resyncs, adds and deletes are not", () => {
  const cases: [string, KubernetesCluster, "add" | "update" | "delete", KubernetesCluster | undefined, boolean][] = [
    ["status only", next((c) => (c.status = { phase: "Ready" })), "update", base, true],
    ["spec (new generation)", next((c) => (c.metadata.generation = 2)), "update", base, false],
    ["an annotation", next((c) => (c.metadata.annotations = { a: "b" })), "update", base, false],
    ["a label", next((c) => (c.metadata.labels = { a: "b" })), "update", base, false],
    ["the finalizers", next((c) => (c.metadata.finalizers = [])), "update", base, false],
    [
      "deletion starts",
      next((c) => (c.metadata.deletionTimestamp = "2026-11-30T00:00:00Z")),
      "update",
      base,
      false,
    ],
    ["a resync (same resourceVersion)", structuredClone(base), "update", base, false],
    ["an add", base, "add", undefined, false],
    ["a delete", base, "delete", base, false],
  ];
  for (const [what, obj, type, old, want] of cases) {
    assert.equal(onlyStatusChanged(obj, type, old), want, what);
  }
});
