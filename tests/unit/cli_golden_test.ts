/**
 * `nico get`, `describe` and `plan` from fixture views, against golden files, in the pure suite: a change of what
 * the commands print fails here in seconds (tests/integration/cli_api_test.ts prints them from a live cluster).
 * The fixtures are three clusters of the older NIO, every node applied: one halted at a failed worker, one paused
 * mid-rollout, one up to date. UPDATE_GOLDEN=1 rewrites the files (tests/golden/fixture-*.txt: fixtures, not output
 * docs/cli.md quotes, which are the cli-*.txt of the live cluster).
 */
import { renderDescribe } from "../../cli/describe.ts";
import { renderGet } from "../../cli/get.ts";
import { clusterView } from "../../cli/observe.ts";
import { renderPlan } from "../../cli/plan.ts";
import type { NixosConfiguration } from "../../core/contract/nio.ts";
import { configName } from "../../core/contract/names.ts";
import type { KubernetesCluster, KubernetesClusterStatus } from "../../crds/kubernetescluster.ts";
import { machine, ownedConfig } from "../../testing/objects.ts";
import { assertGolden } from "../golden.ts";

const NOW = new Date("2026-01-01T01:00:00Z");
const T = "2026-01-01T00:10:00Z";
const STYLE = { color: false, width: Infinity };
const MEMBERS = ["cp-1", "w-1", "w-2"];
type Rollout = NonNullable<KubernetesClusterStatus["rollout"]>;

const cond = (type: string, status: string, reason: string, message: string) => ({
  type,
  status: status as "True" | "False",
  reason,
  message,
  lastTransitionTime: T,
});

function cluster(name: string, phase: "Ready" | "Updating" | "Failed", rollout: Rollout, paused = false) {
  const c: KubernetesCluster = {
    apiVersion: "nico.homystack.com/v1alpha1",
    kind: "KubernetesCluster",
    metadata: { name, namespace: "default", uid: `uid-${name}`, creationTimestamp: "2026-01-01T00:00:00Z" },
    spec: { controlPlane: { machines: ["cp-1"] }, dataPlane: { machines: ["w-1", "w-2"] }, paused } as never,
    status: {
      phase,
      bootstrapNode: "cp-1",
      kubeconfigSecret: `${name}-kubeconfig`,
      controlPlane: { ready: 1, total: 1, machines: ["cp-1"], summary: "1/1" },
      dataPlane: { ready: 2, total: 2, machines: ["w-1", "w-2"], summary: "2/2" },
      version: "1.31.4",
      rollout,
      conditions: rollout.halted
        ? [cond("RollingOut", "False", "RolloutStalled", `halted at ${rollout.halted.node} (${rollout.halted.detail})`)]
        : rollout.paused
        ? [cond("RollingOut", "False", "Paused", `paused with ${rollout.pending?.length} node(s) pending`)]
        : [cond("RollingOut", "False", "RolloutComplete", "3/3 nodes up to date")],
    } as never,
  };
  return c;
}

const HALTED = cluster("halted", "Failed", {
  upToDate: 1,
  total: 3,
  pending: ["w-2", "cp-1"],
  halted: { node: "w-1", detail: "ApplyFailed: nix build failed" },
});
const PAUSED = cluster(
  "paused",
  "Updating",
  { upToDate: 0, total: 3, pending: ["w-1", "w-2", "cp-1"], paused: true },
  true,
);
const READY = cluster("ready", "Ready", { upToDate: 3, total: 3, pending: [] });

/** The older NIO's configurations of `c`: applied, `failed` nodes Stalled with a failed build. */
function view(c: KubernetesCluster, failed: string[] = []) {
  const name = c.metadata.name;
  const config = (m: string): NixosConfiguration => {
    const cfg = ownedConfig(name, m, m === "cp-1" ? "control-plane" : "worker", c.metadata.uid);
    const stalled = failed.includes(m)
      ? [cond("Stalled", "True", "ApplyFailed", "nix build failed")]
      : [cond("Applied", "True", "Success", "applied")];
    return {
      ...cfg,
      metadata: { ...cfg.metadata, creationTimestamp: "2026-01-01T00:00:00Z" },
      status: { lastAppliedTime: T, conditions: stalled } as never,
    };
  };
  return clusterView(
    c,
    MEMBERS.map(config),
    MEMBERS.map((m) => machine(m, { claim: name, applied: configName(name, m) })),
    NOW,
    { nio: { generation: "older", source: "assumed" } as never, jobs: [] },
  );
}

Deno.test("nico get: halted, paused and up to date (golden)", async () => {
  await assertGolden("fixture-get.txt", renderGet([READY, PAUSED, HALTED], false, STYLE, NOW) + "\n");
});

Deno.test("nico describe and plan of a halted cluster (golden)", async () => {
  const v = view(HALTED, ["w-1"]);
  await assertGolden(
    "fixture-describe-halted.txt",
    renderDescribe(v, STYLE, { showConditions: "problems", now: NOW }) + "\n",
  );
  await assertGolden("fixture-plan-halted.txt", renderPlan(v, STYLE) + "\n");
});

Deno.test("nico describe and plan of a paused cluster (golden)", async () => {
  const v = view(PAUSED);
  await assertGolden(
    "fixture-describe-paused.txt",
    renderDescribe(v, STYLE, { showConditions: "problems", now: NOW }) + "\n",
  );
  await assertGolden("fixture-plan-paused.txt", renderPlan(v, STYLE) + "\n");
});
