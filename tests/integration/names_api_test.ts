/**
 * Child names on the real API server: two clusters whose old-style names
 * collided both come up; children made under the old names are adopted, never
 * renamed; a cluster name with a dot is refused by the CRD.
 */
import assert from "node:assert/strict";
import type { KubernetesCluster } from "../../crds/kubernetescluster.ts";
import { KUBERNETES_CLUSTERS } from "../../crds/kubernetescluster.ts";
import { NIXOS_CONFIGURATIONS } from "../../core/contract/nio.ts";
import { CLUSTER_LABEL, FINALIZER, ROLE_LABEL } from "../../core/contract/labels.ts";
import type { NixosConfiguration } from "../../core/contract/nio.ts";
import { configName, joinTokenSecret, legacyConfigName } from "../../core/contract/names.ts";
import { SECRETS } from "../../lib/kube/resources.ts";
import { eventually, sharedControlPlane } from "../../testing/helpers.ts";
import { createMachines } from "../../testing/nico.ts";
import { type World, world } from "../../testing/world.ts";
import { isUnprocessable } from "../../lib/kube/errors.ts";

const env = sharedControlPlane();
const REPO = "https://git.example.test/flake.git";

const ready = (w: World, name: string) =>
  w.until(`cluster ${name} Ready`, (c) => c.status?.phase === "Ready", 30_000, name);

Deno.test("clusters x (Machine y-z) and x-y (Machine z) both come up: their children's names differ", async () => {
  await using w = await world("names", { nio: { applyDelayMs: 100 } });
  const { cp, ns } = w;
  await createMachines(cp.client, ns, ["y-z", "z"]);
  await cp.client.create(KUBERNETES_CLUSTERS, {
    metadata: { name: "x", namespace: ns },
    spec: { gitRepo: REPO, controlPlane: { machines: ["y-z"] } },
  });
  await cp.client.create(KUBERNETES_CLUSTERS, {
    metadata: { name: "x-y", namespace: ns },
    spec: { gitRepo: REPO, controlPlane: { machines: ["z"] } },
  });
  await ready(w, "x");
  await ready(w, "x-y");
  const cfgs = (await cp.client.list<NixosConfiguration>(NIXOS_CONFIGURATIONS, { namespace: ns })).items;
  const owners = Object.fromEntries(cfgs.map((c) => [c.metadata.name, c.metadata.labels?.[CLUSTER_LABEL]]));
  assert.deepEqual(owners, { "x.y-z": "x", "x-y.z": "x-y" });
});

Deno.test("an upgrade keeps children made under the old <cluster>-<machine> names: adopted, not renamed", async () => {
  await using w = await world("adopt", { nio: false, nico: false });
  const { cp, ns } = w;
  await createMachines(cp.client, ns, ["cp-1", "w-1"]);
  // The cluster as an older NICO left it: finalizer in place, one child under the old name.
  const c = await cp.client.create<KubernetesCluster>(KUBERNETES_CLUSTERS, {
    metadata: { name: "old", namespace: ns, finalizers: [FINALIZER] },
    spec: { gitRepo: REPO, controlPlane: { machines: ["cp-1"] }, dataPlane: { machines: ["w-1"] } },
  } as unknown as KubernetesCluster);
  const legacy = legacyConfigName("old", "cp-1");
  await cp.client.create<NixosConfiguration>(NIXOS_CONFIGURATIONS, {
    metadata: {
      name: legacy,
      namespace: ns,
      labels: { [CLUSTER_LABEL]: "old", [ROLE_LABEL]: "control-plane" },
      ownerReferences: [{
        apiVersion: "nico.homystack.com/v1alpha1",
        kind: "KubernetesCluster",
        name: "old",
        uid: c.metadata.uid!,
        controller: true,
      }],
    },
    spec: {
      machineRef: { name: "cp-1" },
      gitRepo: REPO,
      flake: "#cp-1",
      onRemoveFlake: "#minimal",
      fullInstall: false,
      additionalFiles: [],
    },
  });
  // NICO first: it adopts the child and makes the cluster's identity before NIO applies anything. The other way
  // round, NIO may apply the old child first, and then the cluster looks brought up, with no identity Secrets (which
  // the older NICO would have left beside it): NICO rightly stops with IdentityLost.
  await w.startNico();
  await eventually(
    "NICO made the identity of the cluster it adopted",
    () => cp.client.get(SECRETS, joinTokenSecret("old"), ns).then((x) => x !== undefined),
    30_000,
  );
  await w.startNio({ applyDelayMs: 100 });
  const up = await ready(w, "old");
  const names = (await cp.client.list<NixosConfiguration>(NIXOS_CONFIGURATIONS, { namespace: ns })).items.map((x) =>
    x.metadata.name
  )
    .sort();
  assert.deepEqual(names, [legacy, configName("old", "w-1")], "the old child is kept; the new one has the new name");
  const kept = (await cp.client.get<NixosConfiguration>(NIXOS_CONFIGURATIONS, legacy, ns))!;
  assert.equal(kept.metadata.uid !== undefined && kept.metadata.deletionTimestamp, undefined);
  assert.ok(kept.spec.additionalFiles.some((f) => f.path === "cluster.nix"), "the adopted child got NICO's spec");
  assert.deepEqual(up.status!.controlPlane!.readyMachines, ["cp-1"]);
});

Deno.test("the CRD refuses a cluster name with a dot, and says why", async () => {
  const cp = await env.get();
  const ns = await cp.namespace("dots");
  const err = await cp.client.create(KUBERNETES_CLUSTERS, {
    metadata: { name: "a.b", namespace: ns },
    spec: { controlPlane: { machines: ["m"] } },
  }).then(() => undefined, (e) => e);
  assert.ok(isUnprocessable(err), String(err));
  assert.match(String(err), /must not contain '\.'/);
});
