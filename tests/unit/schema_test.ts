import assert from "node:assert/strict";
import { KubernetesClusterSpec } from "../../crds/kubernetescluster.ts";

Deno.test("spec schema: defaults and refusals", async (t) => {
  await t.step("defaults fullInstall and dataPlane", () => {
    const spec = KubernetesClusterSpec.parse({ controlPlane: { machines: ["cp-1"] } });
    assert.equal(spec.fullInstall, false);
    assert.deepEqual(spec.dataPlane, {});
  });
  await t.step("defaults the endpoint port", () => {
    const spec = KubernetesClusterSpec.parse({
      controlPlane: { count: 1 },
      controlPlaneEndpoint: { host: "api.example" },
    });
    assert.equal(spec.controlPlaneEndpoint?.port, 6443);
  });
  const bad: { name: string; spec: unknown; path: string }[] = [
    {
      name: "machine name with capitals",
      spec: { controlPlane: { machines: ["CP-1"] } },
      path: "controlPlane.machines.0",
    },
    { name: "negative count", spec: { controlPlane: { count: -1 } }, path: "controlPlane.count" },
    { name: "missing controlPlane", spec: {}, path: "controlPlane" },
    {
      name: "bad selector operator",
      spec: { controlPlane: { count: 1, machineSelector: { matchExpressions: [{ key: "a", operator: "Has" }] } } },
      path: "controlPlane.machineSelector.matchExpressions.0.operator",
    },
    {
      name: "port out of range",
      spec: { controlPlane: { count: 1 }, controlPlaneEndpoint: { host: "h", port: 70000 } },
      path: "controlPlaneEndpoint.port",
    },
  ];
  for (const c of bad) {
    await t.step(`refuses ${c.name}`, () => {
      const r = KubernetesClusterSpec.safeParse(c.spec);
      assert.equal(r.success, false);
      assert.ok(r.error!.issues.some((i) => i.path.join(".") === c.path), JSON.stringify(r.error!.issues));
    });
  }
});
