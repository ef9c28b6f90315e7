/**
 * The Flux recipes of deploy/gitops/ against Flux's own schemas: the Kustomization and HelmRelease CRDs of the
 * Flux controllers pinned in testing/flux/go.mod (kustomize-controller v1.7.3, helm-controller v1.4.0, as their
 * modules ship them), installed on a real API server, which then checks each recipe with a server-side dry run and
 * strict field validation (an unknown or misspelt field is an error, as are a bad duration and a missing field).
 * The deploy-into-a-cluster recipe names NICO's kubeconfig Secret and key.
 */
import assert from "node:assert/strict";
import { parseAllDocuments } from "yaml";
import { kubeconfigSecret } from "../../core/contract/names.ts";
import { sharedControlPlane } from "../../testing/helpers.ts";
import { crdsEstablished } from "../../lib/kube/crd.ts";
import { fluxCrdsPath } from "../../testing/flux.ts";

const env = sharedControlPlane();
const GITOPS = new URL("../../deploy/gitops/", import.meta.url).pathname;

interface Obj {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
  spec: Record<string, unknown> & { kubeConfig?: { secretRef: { name: string; key?: string } } };
}

const recipe = async (file: string): Promise<Obj[]> =>
  parseAllDocuments(await Deno.readTextFile(`${GITOPS}${file}`)).map((d) => d.toJSON() as Obj);

/** Installs Flux's CRDs once per control plane. */
async function fluxCrds(): Promise<void> {
  const cp = await env.get();
  const dir = await fluxCrdsPath();
  const out = await cp.kubectl(["apply", "--server-side", "--force-conflicts", "-f", dir]);
  assert.equal(out.code, 0, out.stderr);
  await crdsEstablished(cp.client, [
    "kustomizations.kustomize.toolkit.fluxcd.io",
    "helmreleases.helm.toolkit.fluxcd.io",
  ], {
    timeoutMs: 60_000,
  });
}

/** A server-side dry run with strict field validation, in namespace `ns`. */
async function dryRun(objs: Obj[], ns: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const cp = await env.get();
  const text = objs.map((o) => JSON.stringify({ ...o, metadata: { ...o.metadata, namespace: ns } })).join("\n");
  return await cp.kubectl(["apply", "--server-side", "--dry-run=server", "--validate=strict", "-f", "-"], {
    stdin: text,
  });
}

Deno.test("the recipes pass Flux's own CRD schemas (strict field validation, server-side dry run)", async () => {
  const cp = await env.get();
  await fluxCrds();
  const ns = await cp.namespace("flux");
  for (const file of ["flux-workload.yaml", "flux-kustomization.yaml"]) {
    const objs = await recipe(file);
    const out = await dryRun(objs, ns);
    assert.equal(out.code, 0, `${file}: ${out.stderr}`);
    for (const o of objs) {
      const kind = o.kind.toLowerCase();
      assert.match(out.stdout, new RegExp(`${kind}\\.\\S+/${o.metadata.name} serverside-applied \\(server dry run\\)`));
    }
  }
});

Deno.test("the schemas refuse what Flux would not read: the check can fail", async (t) => {
  const cp = await env.get();
  await fluxCrds();
  const ns = await cp.namespace("flux-bad");
  const [kustomization, release] = await recipe("flux-workload.yaml") as [Obj, Obj];
  const cases: [string, Obj, RegExp][] = [
    [
      "a misspelt field",
      {
        ...kustomization,
        spec: { ...kustomization.spec, kubeConfig: { secretRef: { name: "x", kye: "value" } } },
      } as Obj,
      /\.spec\.kubeConfig\.secretRef\.kye: field not declared in schema/,
    ],
    ["a bad duration", { ...kustomization, spec: { ...kustomization.spec, interval: "ten minutes" } }, /interval/],
    ["no chart", { ...release, spec: { ...release.spec, chart: undefined } }, /chart|chartRef/],
  ];
  for (const [name, obj, want] of cases) {
    await t.step(name, async () => {
      const out = await dryRun([JSON.parse(JSON.stringify(obj))], ns);
      assert.notEqual(out.code, 0, `${name} passed: ${out.stdout}`);
      assert.match(out.stderr, want);
    });
  }
});

Deno.test("the deploy recipe reads NICO's kubeconfig Secret of the cluster, key value, in the cluster's namespace", async () => {
  for (const o of await recipe("flux-workload.yaml")) {
    assert.deepEqual(o.spec.kubeConfig?.secretRef, { name: kubeconfigSecret("prod"), key: "value" }, o.kind);
    assert.equal(o.metadata.namespace, "infra", `${o.kind}: Flux reads the Secret from the object's own namespace`);
  }
});
