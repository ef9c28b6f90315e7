/** `nico plan` and `nico describe` show a node the rollout holds for its drain, from status.rollout.draining. */
import assert from "node:assert/strict";
import { renderDescribe } from "../../cli/describe.ts";
import { clusterView } from "../../cli/observe.ts";
import { renderPlan } from "../../cli/plan.ts";
import type { NixosConfiguration } from "../../core/contract/nio.ts";
import type { KubernetesCluster, KubernetesClusterStatus } from "../../crds/kubernetescluster.ts";
import { machine, ownedConfig, UID } from "../../testing/objects.ts";
import { configName } from "../../core/contract/names.ts";
import { assertGolden } from "../golden.ts";

const NOW = new Date("2026-01-01T01:00:00Z");
const STYLE = { color: false, width: Infinity };
const WAIT = "draining w-1: eviction refused for apps/web-1 (PodDisruptionBudget apps/web: needs 1 healthy pods " +
  "and has 1 currently)";
const LATE = "draining w-1 took longer than 10m (spec.rollout.drain.timeout): eviction refused for apps/web-1 " +
  "(PodDisruptionBudget apps/web: needs 1 healthy pods and has 1 currently)";
const MEMBERS = ["cp-1", "w-1", "w-2"];

function cluster(draining: NonNullable<KubernetesClusterStatus["rollout"]>["draining"], onTimeout = "Halt") {
  const c: KubernetesCluster = {
    apiVersion: "nico.homystack.com/v1alpha1",
    kind: "KubernetesCluster",
    metadata: { name: "prod", namespace: "default", uid: UID, creationTimestamp: "2026-01-01T00:00:00Z" },
    spec: {
      controlPlane: { machines: ["cp-1"] },
      dataPlane: { machines: ["w-1", "w-2"] },
      rollout: { drain: { onTimeout } },
    } as never,
    status: {
      phase: "Updating",
      bootstrapNode: "cp-1",
      kubeconfigSecret: "prod-kubeconfig",
      controlPlane: { ready: 1, total: 1, machines: ["cp-1"] },
      dataPlane: { ready: 2, total: 2, machines: ["w-1", "w-2"] },
      rollout: { upToDate: 0, total: 3, pending: ["w-1", "w-2", "cp-1"], ...(draining ? { draining } : {}) },
    },
  };
  return c;
}

/** Every node applied the previous spec (older NIO): Ready, not up to date. */
function view(c: KubernetesCluster) {
  const applied = (m: string): NixosConfiguration => {
    const cfg = ownedConfig("prod", m, m === "cp-1" ? "control-plane" : "worker");
    return {
      ...cfg,
      metadata: { ...cfg.metadata, creationTimestamp: "2026-01-01T00:00:00Z" },
      status: {
        lastAppliedTime: "2026-01-01T00:10:00Z",
        conditions: [{
          type: "Applied",
          status: "True",
          reason: "Success",
          lastTransitionTime: "2026-01-01T00:10:00Z",
        }],
      } as never,
    };
  };
  return clusterView(
    c,
    MEMBERS.map(applied),
    MEMBERS.map((m) => machine(m, { claim: "prod", applied: configName("prod", m) })),
    NOW,
    { nio: { generation: "older", source: "assumed" } as never, jobs: [] },
  );
}

Deno.test("nico plan: a node held by its drain is named with what the drain waits for (golden)", async () => {
  const text = renderPlan(view(cluster([{ node: "w-1", state: "Draining", message: WAIT }])), STYLE);
  await assertGolden("cli-plan-draining.txt", `${text}\n`);
  assert.match(text, /^w-1 held: draining w-1: eviction refused for apps\/web-1 \(PodDisruptionBudget apps\/web/m);
  const rows = text.split("\n").filter((l) => /^\d+ +update/.test(l));
  assert.match(rows[0]!, /^1 +update +w-1 +w-1 \(drain\) +draining w-1: eviction refused/);
  assert.equal(rows.length, 3, "then w-2 and cp-1, as without the drain");
  const without = renderPlan(view(cluster(undefined)), STYLE);
  assert.doesNotMatch(without, /held/);
  assert.match(without, /^now +update +w-1 /m);
});

Deno.test("nico plan: a drain past its timeout with onTimeout Halt halts the plan; with Proceed it does not", () => {
  const late = [{ node: "w-1", state: "TimedOut" as const, message: LATE }];
  const halted = renderPlan(view(cluster(late)), STYLE);
  assert.match(halted, /^Halted at w-1 \(DrainTimeout: draining w-1 took longer than 10m/m);
  assert.match(halted, /^Held, in order: w-1, w-2, cp-1$/m);
  const proceeds = renderPlan(view(cluster(late, "Proceed")), STYLE);
  assert.doesNotMatch(proceeds, /Halted|held:/);
  assert.match(proceeds, /^now +update +w-1 /m);
});

Deno.test("nico describe: the held node says so, and why", () => {
  const text = renderDescribe(view(cluster([{ node: "w-1", state: "Draining", message: WAIT }])), STYLE, {
    showConditions: "problems",
    now: NOW,
  });
  const row = (m: string) => text.split("\n").find((l) => l.includes(`Machine/${m}`)) ?? "";
  assert.match(row("w-1"), /held #1 .*held: draining w-1: eviction refused for apps\/web-1/);
  assert.match(row("w-2"), /pending #2/);
  assert.doesNotMatch(row("w-2"), /held/);
});
