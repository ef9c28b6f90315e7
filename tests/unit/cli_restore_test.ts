/** `nico describe` during and after a restore of etcd (status.restore). */
import assert from "node:assert/strict";
import { renderDescribe } from "../../cli/describe.ts";
import { clusterView } from "../../cli/observe.ts";
import type { KubernetesCluster } from "../../crds/kubernetescluster.ts";
import type { RestoreStatus } from "../../crds/restore.ts";

const NOW = new Date("2026-06-01T12:10:00Z");
const STYLE = { color: false, width: Infinity };

function restoring(restore: RestoreStatus): KubernetesCluster {
  return {
    apiVersion: "nico.homystack.com/v1alpha1",
    kind: "KubernetesCluster",
    metadata: { name: "prod", namespace: "default", creationTimestamp: "2026-06-01T00:00:00Z" },
    spec: { controlPlane: { machines: ["cp-1", "cp-2", "cp-3"] } },
    status: { phase: "Updating", observedGeneration: 1, restore },
  } as unknown as KubernetesCluster;
}

const text = (c: KubernetesCluster) =>
  renderDescribe(clusterView(c, [], [], NOW), STYLE, { now: NOW, showConditions: "problems" });

Deno.test("nico describe: a restore under way shows its step, its backup and each control-plane node's part", () => {
  const out = text(restoring({
    requestId: "r1",
    step: "Rejoining",
    reason: "Rejoining",
    message: "cp-2 rejoins the restored cluster: waiting for NIO to apply its configuration",
    backup: "prod/2026-06-01.db",
    safetySnapshot: "prod/safety.db",
    startedAt: "2026-06-01T12:00:00Z",
    nodes: [
      { name: "cp-1", state: "Restored" },
      { name: "cp-2", state: "Rejoining", message: "NIO to apply its configuration" },
      { name: "cp-3", state: "Waiting" },
    ],
  })).split("\n");
  const row = (start: string) => lines(out, start);
  assert.match(
    row("├─Restore/r1"),
    /Rejoining .*prod\/2026-06-01\.db: cp-2 rejoins .*; undo: restore prod\/safety\.db/,
  );
  assert.match(row("│ ├─cp-1"), /Restored/);
  assert.match(row("│ ├─cp-2"), /Rejoining .*NIO to apply/);
  assert.match(row("│ └─cp-3"), /Waiting/);
});

Deno.test("nico describe: a refused restore says why; no restore, no row", () => {
  const out = text(restoring({
    requestId: "r2",
    step: "Refused",
    reason: "HealthyQuorum",
    message: "etcd has a healthy quorum (3/3 voters healthy)",
    backup: "prod/2026-06-01.db",
    startedAt: "2026-06-01T12:00:00Z",
    finishedAt: "2026-06-01T12:00:01Z",
  })).split("\n");
  assert.match(lines(out, "├─Restore/r2"), /Refused .*healthy quorum/);
  const none = restoring(undefined as never);
  delete (none.status as { restore?: unknown }).restore;
  assert.ok(!text(none).includes("Restore/"));
});

function lines(out: string[], start: string): string {
  const l = out.find((x) => x.startsWith(start));
  assert.ok(l, `no line starting ${start} in\n${out.join("\n")}`);
  return l;
}
