/**
 * `kubernetesVersion` in `cluster.nix` (core/render/): each node's file asks for the version the chain asks it
 * for, read back by the one parser next to the renderer; a cluster asked for none renders as before.
 */
import assert from "node:assert/strict";
import { askedVersion, clusterNixOf } from "../../core/render/clusternix.ts";
import { desiredConfigurations, resolveEndpoint } from "../../core/render/desired.ts";
import { selectMachines } from "../../core/machines/selection.ts";
import { CONFIGURATION_ANNOTATION } from "../../core/contract/labels.ts";
import { cluster, machine } from "../../testing/objects.ts";

function render(versions?: ReadonlyMap<string, string>) {
  const c = cluster({ controlPlane: { machines: ["cp-1", "cp-2"] }, dataPlane: { machines: ["w-1"] } });
  const machines = [machine("cp-1"), machine("cp-2"), machine("w-1")];
  const selection = selectMachines({ cluster: c, machines, configurations: [] });
  return desiredConfigurations({
    cluster: c,
    selection,
    machines,
    bootstrap: "cp-1",
    endpoint: resolveEndpoint(c.spec, machines[0], "cp-1"),
    gitRepo: "https://git.example.test/flake.git",
    nio: "v1",
    versions,
  });
}

const byMachine = (configs: ReturnType<typeof render>) =>
  Object.fromEntries(configs.map((c) => [c.spec.machineRef.name, c]));

Deno.test("cluster.nix asks each node for its version; nodes at one version share one configuration id", () => {
  const out = byMachine(render(new Map([["cp-1", "1.31"], ["cp-2", "1.31"], ["w-1", "1.30.4"]])));
  const asked = (m: string) => askedVersion(clusterNixOf(out[m]!));
  assert.deepEqual([asked("cp-1"), asked("cp-2"), asked("w-1")], ["1.31", "1.31", "1.30.4"]);
  const id = (m: string) => out[m]!.metadata.annotations![CONFIGURATION_ANNOTATION];
  assert.equal(id("cp-1"), id("cp-2"));
  assert.notEqual(id("cp-1"), id("w-1"), "the configuration id covers the version asked");
  assert.match(clusterNixOf(out["w-1"]!)!, /\n {2}kubernetesVersion = "1\.30\.4";\n {2}configuration = "/);
});

Deno.test("no version asked: no kubernetesVersion, and every node's cluster.nix is what it was", () => {
  const none = byMachine(render());
  const empty = byMachine(render(new Map()));
  for (const m of ["cp-1", "cp-2", "w-1"]) {
    assert.equal(askedVersion(clusterNixOf(none[m]!)), undefined);
    assert.equal(clusterNixOf(none[m]!), clusterNixOf(empty[m]!));
    assert.doesNotMatch(clusterNixOf(none[m]!)!, /kubernetesVersion/);
  }
  // A node left out of the map is asked for nothing, like a cluster without spec.version.
  const some = byMachine(render(new Map([["cp-1", "1.31"]])));
  assert.equal(clusterNixOf(some["w-1"]!), clusterNixOf(none["w-1"]!));
});
