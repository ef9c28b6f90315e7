/** `nico describe` ends the Etcd subtree with the cluster's backups: the last one, or the failure newer than it. */
import assert from "node:assert/strict";
import { renderDescribe } from "../../cli/describe.ts";
import { clusterView } from "../../cli/observe.ts";
import type { KubernetesCluster } from "../../crds/kubernetescluster.ts";
import { machine, ownedConfig, UID } from "../../testing/objects.ts";

const NOW = new Date("2026-01-01T01:00:00Z");
const last = {
  key: "default/prod/prod-20260101T005000Z-schedule.db",
  size: 2 * 1024 * 1024,
  revision: "812",
  member: "42",
  time: "2026-01-01T00:50:00.000Z",
  reason: "schedule",
  sha256: "ab".repeat(32),
};

function text(backups: NonNullable<NonNullable<KubernetesCluster["status"]>["etcd"]>["backups"]): string[] {
  const cluster: KubernetesCluster = {
    apiVersion: "nico.homystack.com/v1alpha1",
    kind: "KubernetesCluster",
    metadata: { name: "prod", namespace: "default", uid: UID, creationTimestamp: "2026-01-01T00:00:00Z" },
    spec: { controlPlane: { machines: ["cp-1"] }, dataPlane: { machines: [] } } as never,
    status: {
      phase: "Ready",
      controlPlane: { ready: 1, total: 1, machines: ["cp-1"] },
      etcd: {
        members: [{ name: "cp-1", memberID: "42", healthy: true, leader: true, learner: false, node: "cp-1" }],
        voters: 1,
        healthyVoters: 1,
        quorum: 1,
        tolerance: 0,
        counted: "cp-1",
        ...(backups ? { backups } : {}),
      },
    },
  };
  const view = clusterView(cluster, [ownedConfig("prod", "cp-1", "control-plane")], [machine("cp-1")], NOW);
  return renderDescribe(view, { color: false, width: Infinity }, { showConditions: "problems", now: NOW }).split("\n");
}

Deno.test("describe: the last backup under Etcd, the member above it no longer last", () => {
  const lines = text({ last, since: "2026-01-01T00:00:00.000Z" });
  assert.ok(lines.some((l) => /├─Member\/cp-1/.test(l)), lines.join("\n"));
  const row = lines.find((l) => l.includes("└─Backups")) ?? "";
  assert.match(
    row,
    /BackedUp\s+last default\/prod\/prod-20260101T005000Z-schedule\.db at .* \(schedule, 2\.0 MiB, revision 812, member 42\)/,
  );
});

Deno.test("describe: a failure newer than the last backup is what the row says", () => {
  const lastFailure = {
    time: "2026-01-01T00:55:00.000Z",
    reason: "pre-change",
    message: "spec.etcd.backup.store.endpoint: down",
  };
  const row = text({ last, lastFailure, taking: "pre-change" }).find((l) => l.includes("└─Backups")) ?? "";
  assert.match(
    row,
    /Failing\s+pre-change backup failed at .*: spec\.etcd\.backup\.store\.endpoint: down; taking one now/,
  );
});

Deno.test("describe: no Backups row without spec.etcd.backup", () => {
  const lines = text(undefined);
  assert.ok(!lines.some((l) => l.includes("Backups")));
  assert.ok(lines.some((l) => /└─Member\/cp-1/.test(l)), lines.join("\n"));
});
