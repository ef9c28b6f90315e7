/**
 * A new controlPlaneEndpoint reaches the published kubeconfig only once the
 * control plane serves it: while the rollout is under way (or halted), the
 * kubeconfig keeps the server it names and status says why, whichever plane
 * goes first (with the control plane first, the bootstrap node is the one
 * applying the new configuration: the condition stays all the while).
 */
import assert from "node:assert/strict";
import type { KubernetesCluster } from "../../crds/kubernetescluster.ts";
import { SECRETS } from "../../lib/kube/resources.ts";
import { KUBERNETES_CLUSTERS } from "../../crds/kubernetescluster.ts";
import { NIXOS_CONFIGURATIONS, type NixosConfiguration } from "../../core/contract/nio.ts";
import { configName, kubeconfigSecret } from "../../core/contract/names.ts";
import { readKubeconfig } from "../../core/render/kubeconfig.ts";
import { NEVER_FINISH_ANNOTATION } from "../../testing/sim-nio.ts";
import { eventually } from "../../testing/helpers.ts";
import { createMachines, machinesDiscovered, settled } from "../../testing/nico.ts";
import { world } from "../../testing/world.ts";
import { type Secret, secretValue } from "../../controllers/cluster/secrets.ts";

for (const order of ["WorkersFirst", "ControlPlaneFirst"] as const) {
  Deno.test(`the kubeconfig moves to a new endpoint only when the control plane serves it (${order})`, async () => {
    await using w = await world("move", { nio: { applyDelayMs: 150 } });
    const { cp, ns, nico } = w;
    await createMachines(cp.client, ns, ["cp-1", "w-1"]);
    await machinesDiscovered(cp.client, ns, ["cp-1", "w-1"]);
    await cp.client.create(KUBERNETES_CLUSTERS, {
      metadata: { name: "c", namespace: ns },
      spec: { controlPlane: { machines: ["cp-1"] }, dataPlane: { machines: ["w-1"] }, rollout: { order } },
    });
    const get = () => cp.client.get<KubernetesCluster>(KUBERNETES_CLUSTERS, "c", ns);
    const server = async () =>
      readKubeconfig(secretValue(await cp.client.get<Secret>(SECRETS, kubeconfigSecret("c"), ns), "value") ?? "")
        ?.server;
    const up = await eventually("Ready", async () => {
      const c = await get();
      return c?.status?.phase === "Ready" ? c : undefined;
    }, 30_000);
    const old = up.status!.endpoint!;
    assert.equal(await server(), old);

    // cp-1 will not finish its next apply: the rollout to the new endpoint halts there.
    await cp.client.mergePatch(NIXOS_CONFIGURATIONS, configName("c", "cp-1"), ns, {
      metadata: { annotations: { [NEVER_FINISH_ANNOTATION]: "true" } },
    });
    await cp.client.mergePatch(KUBERNETES_CLUSTERS, "c", ns, {
      spec: { controlPlaneEndpoint: { host: "127.0.0.2", port: 6443 } },
    });
    const waiting = await eventually("KubeconfigCurrent=False", async () => {
      const k = (await get())?.status?.conditions?.find((x) => x.type === "KubeconfigCurrent");
      return k?.status === "False" ? k : undefined;
    }, 30_000);
    assert.equal(waiting.reason, "WaitingForControlPlane");
    assert.match(waiting.message, new RegExp(`keeps ${old.replaceAll(".", "\\.")} until every control-plane node`));
    // The halt: cp-1, the bootstrap node, is applying the configuration with the new endpoint (and never finishes).
    await eventually("cp-1's configuration to carry the new endpoint", async () => {
      const cfg = await cp.client.get<NixosConfiguration>(NIXOS_CONFIGURATIONS, configName("c", "cp-1"), ns);
      return cfg?.spec.additionalFiles.some((f) => f.valueType === "Inline" && /127\.0\.0\.2/.test(f.inline));
    }, 60_000);
    await settled(cp.client, nico, ns, "c"); // another pass, with nothing new: it keeps the kubeconfig too
    assert.equal(await server(), old, "the kubeconfig still names the endpoint that serves");
    const still = (await get())?.status?.conditions?.find((x) => x.type === "KubeconfigCurrent");
    assert.deepEqual([still?.status, still?.reason], ["False", "WaitingForControlPlane"], "while cp-1 applies too");

    await cp.client.mergePatch(NIXOS_CONFIGURATIONS, configName("c", "cp-1"), ns, {
      metadata: { annotations: { [NEVER_FINISH_ANNOTATION]: null } },
    });
    await eventually(
      "the kubeconfig names the new endpoint",
      async () => (await server()) === "https://127.0.0.2:6443",
    );
    const done = await eventually("Ready again", async () => {
      const c = await get();
      return c?.status?.phase === "Ready" ? c : undefined;
    }, 30_000);
    assert.equal(done.status!.conditions!.find((x) => x.type === "KubeconfigCurrent")!.status, "True");
  });
}
