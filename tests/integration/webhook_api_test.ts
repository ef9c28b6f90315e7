/**
 * The admission webhook behind a real kube-apiserver, driven by real
 * `kubectl apply`: refusals print our message and store nothing, defaults
 * are stored, warnings are printed, unsafe updates are refused. Tenants and
 * credentials: webhook_tenants_api_test.ts; NICO's own certificates:
 * webhook_certs_api_test.ts.
 */
import assert from "node:assert/strict";
import { MACHINES, NIXOS_CONFIGURATIONS } from "../../core/contract/nio.ts";
import { CLUSTER_LABEL, FINALIZER, ROLE_LABEL } from "../../core/contract/labels.ts";
import type { NixosConfiguration } from "../../core/contract/nio.ts";
import { configName } from "../../core/contract/names.ts";
import { eventually } from "../../testing/helpers.ts";
import { apply, clusterJson, DEFAULT_REPO, getCluster, machines, setup } from "../webhook_api_kit.ts";

Deno.test("kubectl apply: a cluster naming an undiscoverable Machine is refused with our message", async () => {
  const f = await setup();
  const ns = await f.cp.namespace("undiscoverable");
  await machines(f, ns, ["cp-01", "cp-02", "cp-03"], ["cp-01", "cp-03"]);
  const r = await apply(
    f.cp,
    clusterJson(ns, "prod", { gitRepo: DEFAULT_REPO, controlPlane: { machines: ["cp-01", "cp-02", "cp-03"] } }),
  );
  assert.notEqual(r.code, 0, r.stdout);
  assert.match(r.stderr, /admission webhook "validate\.kubernetescluster\.nico\.homystack\.com" denied the request/);
  assert.ok(
    r.stderr.includes(
      "spec.controlPlane.machines[1]: Machine cp-02 is not discoverable: NIO cannot reach it; fix the host or pick another Machine",
    ),
    r.stderr,
  );
  assert.equal(await getCluster(f, ns, "prod"), undefined, "nothing was stored");
});

Deno.test("kubectl apply: Machines already configured or targeted elsewhere are refused", async () => {
  const f = await setup();
  const ns = await f.cp.namespace("configured");
  await machines(f, ns, ["m-1", "m-2", "m-3"], ["m-1", "m-2", "m-3"], {
    "m-2": { hasConfiguration: true, appliedConfiguration: "hand-made" },
  });
  const foreign: NixosConfiguration = {
    metadata: { name: "someone-else", namespace: ns },
    spec: {
      machineRef: { name: "m-3" },
      gitRepo: "g",
      flake: "#x",
      onRemoveFlake: "#minimal",
      fullInstall: false,
      additionalFiles: [],
    },
  };
  await f.client.create(NIXOS_CONFIGURATIONS, foreign);
  await eventually("the informer to see the NixosConfiguration", () => f.informers.configs.get(ns, "someone-else"));

  const r = await apply(f.cp, clusterJson(ns, "prod", { controlPlane: { machines: ["m-1", "m-2", "m-3"] } }));
  assert.notEqual(r.code, 0);
  for (
    const line of [
      "spec.controlPlane.machines[1]: Machine m-2 is configured by NixosConfiguration hand-made; remove that configuration first or pick another Machine",
      "spec.controlPlane.machines[2]: Machine m-3 is already the target of NixosConfiguration someone-else; delete that NixosConfiguration first or pick another Machine",
    ]
  ) assert.ok(r.stderr.includes(line), r.stderr);
  assert.equal(await getCluster(f, ns, "prod"), undefined);
});

Deno.test("kubectl apply: a cluster without gitRepo is stored with the default and the finalizer; a valid one passes quietly", async () => {
  const f = await setup();
  const ns = await f.cp.namespace("defaults");
  await machines(f, ns, ["cp-1", "cp-2", "cp-3"]);
  const r = await apply(f.cp, clusterJson(ns, "prod", { controlPlane: { machines: ["cp-1", "cp-2", "cp-3"] } }));
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /kubernetescluster\.nico\.homystack\.com\/prod created/);
  assert.equal(r.stderr, "", "no warnings for a valid three-node cluster");
  const stored = await getCluster(f, ns, "prod");
  assert.equal(stored.spec.gitRepo, DEFAULT_REPO);
  assert.equal(stored.spec.fullInstall, false);
  // No reconciler runs here: the finalizer is there from the first write, added at admission.
  assert.deepEqual(stored.metadata.finalizers, [FINALIZER]);
  assert.equal(stored.metadata.generation, 1);

  const again = await apply(f.cp, clusterJson(ns, "prod", { controlPlane: { machines: ["cp-1", "cp-2", "cp-3"] } }));
  assert.equal(again.code, 0, again.stderr);
  assert.equal((await getCluster(f, ns, "prod")).spec.gitRepo, DEFAULT_REPO, "re-applying keeps the default");
});

Deno.test("kubectl apply: warnings are printed and the cluster is stored", async () => {
  const f = await setup();
  const ns = await f.cp.namespace("warnings");
  await machines(f, ns, ["cp-1", "cp-2"]);
  const r = await apply(
    f.cp,
    clusterJson(ns, "small", {
      gitRepo: DEFAULT_REPO,
      credentialsRef: { name: "git-creds" },
      controlPlane: { machineSelector: { matchLabels: { role: "cp" } }, count: 3 },
    }),
  );
  assert.equal(r.code, 0, r.stderr);
  for (
    const w of [
      `Warning: KubernetesCluster ${ns}/small: spec.controlPlane.count: 3 Machines wanted but only 2 (cp-1, cp-2) match role=cp and are available;`,
    ]
  ) assert.ok(r.stderr.includes(w), r.stderr);
  assert.ok(await getCluster(f, ns, "small"));

  const single = await apply(
    f.cp,
    clusterJson(ns, "single", { gitRepo: DEFAULT_REPO, controlPlane: { machines: ["cp-1"] } }),
  );
  assert.equal(single.code, 0, single.stderr);
  // Each warning names its cluster: a multi-document apply shows which object it is about.
  assert.match(
    single.stderr,
    new RegExp(
      `^Warning: KubernetesCluster ${ns}/single: spec\\.controlPlane\\.machines: a single-node control plane`,
      "m",
    ),
  );
});

Deno.test("kubectl apply: unsafe updates are refused, metadata changes always pass", async () => {
  const f = await setup();
  const ns = await f.cp.namespace("updates");
  await machines(f, ns, ["cp-1", "cp-2", "cp-3", "cp-4"]);
  const spec = { gitRepo: DEFAULT_REPO, controlPlane: { machines: ["cp-1", "cp-2", "cp-3"] } };
  assert.equal((await apply(f.cp, clusterJson(ns, "prod", spec))).code, 0);
  const stored = await getCluster(f, ns, "prod");
  // What the controller would have made: a NixosConfiguration per member, controlled by the cluster.
  for (const m of spec.controlPlane.machines) {
    await f.client.create<NixosConfiguration>(NIXOS_CONFIGURATIONS, {
      metadata: {
        name: configName("prod", m),
        namespace: ns,
        labels: { [CLUSTER_LABEL]: "prod", [ROLE_LABEL]: "control-plane" },
        ownerReferences: [{
          apiVersion: "nico.homystack.com/v1alpha1",
          kind: "KubernetesCluster",
          name: "prod",
          uid: stored.metadata.uid,
          controller: true,
        }],
      },
      spec: {
        machineRef: { name: m },
        gitRepo: DEFAULT_REPO,
        flake: `#${m}`,
        onRemoveFlake: "#minimal",
        fullInstall: false,
        additionalFiles: [],
      },
    });
  }
  await eventually("the informer to see the configurations", () => f.informers.configs.list(ns).length === 3);

  const wipe = await apply(f.cp, clusterJson(ns, "prod", { ...spec, fullInstall: true }));
  assert.notEqual(wipe.code, 0);
  assert.match(
    wipe.stderr,
    /spec\.fullInstall: cannot change to true on an existing cluster: NIO would reinstall NixOS and WIPE THE DISK/,
  );

  const shrink = await apply(f.cp, clusterJson(ns, "prod", { ...spec, controlPlane: { machines: ["cp-1"] } }));
  // Accepted: the rollout removes them one at a time; kubectl shows the warning.
  assert.equal(shrink.code, 0, shrink.stderr);
  assert.match(
    shrink.stderr,
    /Warning: KubernetesCluster [^/]+\/prod: spec\.controlPlane\.machines: this change removes 2 control-plane Machines \(cp-2, cp-3\); NICO adds/,
  );

  const replace = await apply(
    f.cp,
    clusterJson(ns, "prod", { ...spec, controlPlane: { machines: ["cp-1", "cp-2", "cp-4"] } }),
  );
  assert.equal(replace.code, 0, `one at a time is fine: ${replace.stderr}`);

  // A member becomes unreachable: its cluster's metadata can still change, and spec edits only warn about it.
  await f.client.mergePatch(MACHINES, "cp-2", ns, { status: { discoverable: false } }, "status");
  await eventually(
    "the informer to see cp-2 unreachable",
    () => f.informers.machines.get(ns, "cp-2")?.status?.discoverable === false,
  );
  const label = await f.cp.kubectl(["label", "-n", ns, "kubernetescluster", "prod", "team=infra"]);
  assert.equal(label.code, 0, label.stderr);
  assert.equal(label.stderr, "");
  const edit = await apply(
    f.cp,
    clusterJson(ns, "prod", { ...spec, controlPlane: { machines: ["cp-1", "cp-2", "cp-4"] }, ref: "v2" }),
  );
  assert.equal(edit.code, 0, edit.stderr);
  assert.match(
    edit.stderr,
    /Warning: KubernetesCluster [^/]+\/prod: spec\.controlPlane\.machines\[1\]: Machine cp-2 is not discoverable: NIO cannot reach it;.*\(it stays a member of this cluster/,
  );
});
