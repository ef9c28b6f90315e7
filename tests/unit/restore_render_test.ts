/** A restore in the nodes' configurations (core/render/restore.ts): the `restore` block and the URL file. */
import assert from "node:assert/strict";
import { stringify } from "yaml";
import { askedRestore, clusterNixOf } from "../../core/render/clusternix.ts";
import { desiredConfigurations, resolveEndpoint } from "../../core/render/desired.ts";
import type { DesiredRestore } from "../../core/render/restore.ts";
import { selectMachines } from "../../core/machines/selection.ts";
import { cluster, machine } from "../../testing/objects.ts";
import { assertGolden } from "../golden.ts";

const SHA = "0f".repeat(32);

function render(restore?: DesiredRestore) {
  const machines = [
    ...["cp-1", "cp-2", "cp-3"].map((n, i) => machine(n, { host: `127.0.0.${i + 1}` })),
    machine("w-1", { host: "127.0.0.11" }),
  ];
  const c = cluster({ controlPlane: { machines: ["cp-1", "cp-2", "cp-3"] }, dataPlane: { machines: ["w-1"] } });
  const selection = selectMachines({ cluster: c, machines, configurations: [] });
  const endpoint = resolveEndpoint(c.spec, machines[0], "cp-1");
  const configs = desiredConfigurations({
    cluster: c,
    selection,
    machines,
    bootstrap: "cp-1",
    endpoint,
    gitRepo: "https://127.0.0.1/flake.git",
    nio: "v1",
    etcd: { clientPort: 2379 },
    restore,
  });
  return new Map(configs.map((cfg) => [cfg.spec.machineRef.name, cfg]));
}

const restoring = (roles: [string, "restore" | "rejoin"][]): DesiredRestore => ({
  requestId: "r1",
  backup: "prod/2026-06-01T12-00-00Z.db",
  sha256: SHA,
  roles: new Map(roles),
});

Deno.test("the bootstrap node restores: its cluster.nix says so, the URL comes from a Secret, no other node changes", async () => {
  const before = render();
  const during = render(restoring([["cp-1", "restore"]]));
  const cp1 = during.get("cp-1")!;
  assert.deepEqual(askedRestore(clusterNixOf(cp1)), { requestId: "r1", role: "restore" });
  const url = cp1.spec.additionalFiles.find((f) => f.path === "etcd-restore-url");
  assert.deepEqual(url, {
    path: "etcd-restore-url",
    valueType: "SecretRef",
    secretRef: { name: "prod-etcd-restore", key: "url" },
  });
  for (const other of ["cp-2", "cp-3", "w-1"]) {
    assert.deepEqual(during.get(other), before.get(other), `${other} unchanged`);
  }
  await assertGolden("restore-bootstrap-cluster.nix", clusterNixOf(cp1)!);
});

Deno.test("a rejoining node's cluster.nix carries its part, without the member list or the URL", () => {
  const during = render(restoring([["cp-1", "restore"], ["cp-2", "rejoin"]]));
  const cp2 = during.get("cp-2")!;
  assert.deepEqual(askedRestore(clusterNixOf(cp2)), { requestId: "r1", role: "rejoin" });
  assert.ok(!clusterNixOf(cp2)!.includes("members ="));
  assert.ok(!cp2.spec.additionalFiles.some((f) => f.path === "etcd-restore-url"));
  assert.equal(askedRestore(clusterNixOf(during.get("cp-3")!)), undefined);
  assert.notEqual(
    cp2.metadata.annotations?.["nico.homystack.com/configuration"],
    render().get("cp-2")!.metadata.annotations?.["nico.homystack.com/configuration"],
    "the part changes the node's configuration id, so NIO applies it",
  );
  assert.ok(stringify(cp2).length > 0);
});
