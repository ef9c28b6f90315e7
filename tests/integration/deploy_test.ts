/**
 * deploy/ on a real API server: the generated files are current and the
 * manifests of both install variants are valid (server-side dry run).
 * tests/integration/rbac_test.ts runs NICO as its ServiceAccount under that RBAC.
 */
import assert from "node:assert/strict";
import { sharedControlPlane } from "../../testing/helpers.ts";
import { generatedDeployFiles } from "../../scripts/deploy.ts";

const env = sharedControlPlane();
const ROOT = new URL("../../", import.meta.url).pathname;

Deno.test("generated deploy files equal what the code renders (run `deno task crds`)", async () => {
  for (const [name, text] of Object.entries(generatedDeployFiles())) {
    assert.equal(await Deno.readTextFile(`${ROOT}deploy/base/${name}`), text, `deploy/base/${name} is stale`);
  }
});

Deno.test("deploy/ applies cleanly with a server-side dry run", async () => {
  const cp = await env.get();
  const ns = await cp.kubectl(["apply", "--server-side", "-f", `${ROOT}deploy/base/namespace.yaml`]);
  assert.equal(ns.code, 0, ns.stderr);
  const out = await cp.kubectl([
    "apply",
    "--server-side",
    "--force-conflicts",
    "--dry-run=server",
    "-k",
    `${ROOT}deploy/`,
  ]);
  assert.equal(out.code, 0, out.stderr);
  for (
    const kind of [
      "deployment.apps/nico",
      "clusterrole.rbac.authorization.k8s.io/nico",
      "service/nico-webhook",
      "validatingwebhookconfiguration.admissionregistration.k8s.io/nico",
      "validatingadmissionpolicy.admissionregistration.k8s.io/nico-webhook-configurations",
      "validatingadmissionpolicybinding.admissionregistration.k8s.io/nico-webhook-configurations",
    ]
  ) {
    assert.match(out.stdout, new RegExp(`${kind.replaceAll(".", "\\.")} serverside-applied \\(server dry run\\)`));
  }
  const namespaced = await cp.kubectl(["create", "namespace", "clusters"]);
  assert.ok(namespaced.code === 0 || /AlreadyExists/.test(namespaced.stderr), namespaced.stderr);
  const confined = await cp.kubectl([
    "apply",
    "--server-side",
    "--force-conflicts",
    "--dry-run=server",
    "-k",
    `${ROOT}deploy/namespaced/`,
  ]);
  assert.equal(confined.code, 0, confined.stderr);
  assert.match(confined.stdout, /rolebinding\.rbac\.authorization\.k8s\.io\/nico serverside-applied/);
  assert.match(confined.stdout, /networkpolicy\.networking\.k8s\.io\/nico serverside-applied/);
  assert.doesNotMatch(confined.stdout, /clusterrolebinding\.rbac\.authorization\.k8s\.io\/nico serverside/);
  const overlay = await cp.kubectl(["kustomize", `${ROOT}deploy/cert-manager/`]);
  assert.equal(overlay.code, 0, overlay.stderr);
  assert.match(overlay.stdout, /cert-manager\.io\/inject-ca-from: nico-system\/nico-webhook/);
  assert.match(overlay.stdout, /NICO_WEBHOOK_CERT_MODE/);
  // Two shards: the default's Deployment and nico-edge-1 (with its budget), every pod behind the webhook Service.
  const sharded = await cp.kubectl([
    "apply",
    "--server-side",
    "--force-conflicts",
    "--dry-run=server",
    "-k",
    `${ROOT}deploy/sharded/`,
  ]);
  assert.equal(sharded.code, 0, sharded.stderr);
  for (const k of ["deployment.apps/nico", "deployment.apps/nico-edge-1", "poddisruptionbudget.policy/nico-edge-1"]) {
    assert.match(sharded.stdout, new RegExp(`${k.replaceAll(".", "\\.")} serverside-applied \\(server dry run\\)`));
  }
});
