/**
 * Self-healing control planes stop where quorum would be lost (real API
 * servers, a kube-apiserver per workload cluster, simulated kubelets, the
 * simulated NIO): with two of three members dead nothing is touched and the
 * condition says quorum is lost and what to do.
 */
import assert from "node:assert/strict";
import { CLUSTER_LABEL, REMEDIATED_ANNOTATION } from "../../core/contract/labels.ts";
import { KUBERNETES_CLUSTERS } from "../../crds/kubernetescluster.ts";
import { sharedControlPlane } from "../../testing/helpers.ts";
import { condition, startScenario } from "../../testing/scenario.ts";
import { controlPlaneCluster, killKubelet, machineOf, remediationEvents } from "../remediation_kit.ts";

const env = sharedControlPlane();

Deno.test({
  name: "two of three control-plane members dead: nothing is remediated, the condition says quorum is lost",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const cp = await env.get();
    await using s = await startScenario(cp, "heal-quorum", { hostBlock: 58 });
    await controlPlaneCluster(s);
    // Both die while the cluster is paused, so NICO's first look after sees both dead: killed one after the other on
    // a busy machine, the first can pass its 4 s timeout alone and be replaced (right, but another test).
    await s.client.mergePatch(KUBERNETES_CLUSTERS, "c", s.ns, { spec: { paused: true } });
    await Promise.all([killKubelet(s, "cp-2"), killKubelet(s, "cp-3")]);
    await s.until("both NotReady past their timeout", (c) => {
      const m = condition(c, "Remediating")?.message ?? "";
      return /cp-2 \(NodeNotReady/.test(m) && /cp-3 \(NodeNotReady/.test(m);
    }, 60_000);
    await s.client.mergePatch(KUBERNETES_CLUSTERS, "c", s.ns, { spec: { paused: false } });
    const named =
      /cp-2 \(NodeNotReady: .*\), cp-3 \(NodeNotReady: .*\): 1 of 3 control-plane members are healthy and etcd needs 2 for quorum: NICO replaces none.*bring a member back.*restore etcd from a backup/;
    // Quorum is lost as soon as one is past its timeout while the other is down; both are named once both are.
    await s.until(
      "QuorumWouldBeLost, naming both",
      (c) =>
        condition(c, "Remediating")?.reason === "QuorumWouldBeLost" &&
        named.test(condition(c, "Remediating")!.message),
      60_000,
    );
    await s.settled();
    for (const m of ["cp-1", "cp-2", "cp-3", "cp-4"]) {
      assert.equal((await machineOf(s, m)).metadata.annotations?.[REMEDIATED_ANNOTATION], undefined, m);
    }
    assert.equal((await machineOf(s, "cp-4")).metadata.labels?.[CLUSTER_LABEL], undefined, "the spare stays free");
    const c = await s.cluster();
    assert.deepEqual(c?.status?.controlPlane?.machines, ["cp-1", "cp-2", "cp-3"]);
    assert.ok(
      (await remediationEvents(s)).some((e) => e.reason === "RemediationRefused" && /quorum/.test(e.message)),
    );
  },
});
