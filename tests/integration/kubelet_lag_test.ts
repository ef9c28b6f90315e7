/**
 * A node's step ends on evidence from after its apply, with kubelets that
 * post their new version and Ready a few seconds after the switch (as a
 * restarted kubelet does; testing/workload.ts): a commit that brings newer
 * kubelets to the workers under `WorkersFirst` halts at the first worker
 * with nothing else changed and a phase that is not `Ready`, on both NIO
 * generations, where the flake names the configuration a node runs and where
 * it does not. Meanwhile the status names what NICO waits for.
 */
import assert from "node:assert/strict";
import { KUBERNETES_CLUSTERS, type KubernetesCluster } from "../../crds/kubernetescluster.ts";
import { NIXOS_CONFIGURATIONS, type NixosConfiguration } from "../../core/contract/nio.ts";
import type { NioGeneration } from "../../core/contract/nio.ts";
import { configName } from "../../core/contract/names.ts";
import { sharedControlPlane } from "../../testing/helpers.ts";
import { condition, type Scenario, startScenario } from "../../testing/scenario.ts";

const env = sharedControlPlane();
const V1 = "https://git.example.test/v1.git";
const V2 = "https://git.example.test/v2.git";

const repoOf = async (s: Scenario, m: string) =>
  (await s.client.get<NixosConfiguration>(NIXOS_CONFIGURATIONS, configName("c", m), s.ns))!.spec.gitRepo;

const CASES: { generation: NioGeneration; report: boolean; block: number }[] = [
  { generation: "v1", report: false, block: 152 },
  { generation: "older", report: false, block: 153 },
  { generation: "v1", report: true, block: 154 },
  { generation: "older", report: true, block: 155 },
];

for (const { generation, report, block } of CASES) {
  Deno.test({
    name: `NIO ${generation}, ${report ? "with" : "without"} the Node report, lagging kubelets: newer kubelets ` +
      "halt at the first worker, nothing else changed, the phase Failed",
    sanitizeResources: false,
    sanitizeOps: false,
    fn: async () => {
      await using s = await startScenario(await env.get(), `lag-${generation}-${report}`, {
        hostBlock: block,
        generation,
        reportConfiguration: report,
        // Long enough that a status written while w-1's kubelet is silent goes out (progress may wait 10 s).
        kubeletLagMs: report ? 2_000 : 14_000,
        carriedVersion: (cfg) => (cfg.spec.gitRepo === V2 ? "1.32.0" : "1.31.0"),
      });
      await s.createCluster({
        gitRepo: V1,
        controlPlane: { machines: ["cp-1"] },
        dataPlane: { machines: ["w-1", "w-2"] },
      });
      await s.until(
        "Ready at 1.31.0",
        (c) =>
          c.status?.observedGeneration === c.metadata.generation && c.status?.phase === "Ready" &&
          condition(c, "UpToDate")?.status === "True" && c.status?.version === "1.31.0",
      );
      // Every status NICO writes from now on, to see what it said while w-1's kubelet was silent.
      const seen: KubernetesCluster[] = [];
      const watching = s.until("Stalled VersionSkew", (c) => {
        seen.push(c);
        return condition(c, "Stalled")?.reason === "VersionSkew";
      });
      await s.client.mergePatch(KUBERNETES_CLUSTERS, "c", s.ns, { spec: { gitRepo: V2 } });
      const halted = await watching;
      assert.match(condition(halted, "Stalled")!.message, /^VersionSkew: w-1's kubelet 1\.32\.0 is newer than cp-1's/);
      assert.equal(halted.status?.phase, "Failed", "a halted rollout is Failed, never Ready");
      assert.equal(condition(halted, "Ready")?.status, "False");
      if (!report) {
        const waited = seen.flatMap((c) => (c.status?.conditions ?? []).map((x) => x.message ?? ""));
        assert.ok(
          waited.some((m) => m.includes("w-1's kubelet has posted nothing since its switch")),
          `NICO said what it waits for: ${[...new Set(waited)].join(" | ")}`,
        );
      }
      // Nothing else changes, even in later passes.
      await s.settled();
      assert.deepEqual([await repoOf(s, "w-1"), await repoOf(s, "w-2"), await repoOf(s, "cp-1")], [V2, V1, V1]);
      const c = await s.cluster();
      assert.equal(c?.status?.phase, "Failed");
      assert.equal(condition(c, "Stalled")?.reason, "VersionSkew");
    },
  });
}
