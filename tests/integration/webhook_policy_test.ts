/**
 * The ValidatingAdmissionPolicy of deploy/ on a real API server (issue 21):
 * as NICO's ServiceAccount, every change to its webhook configurations but
 * the caBundle is refused by the API server (server dry runs of what an
 * attacker holding NICO's token would send), creates and deletes too; the
 * caBundle change NICO makes still passes, and an administrator is not
 * affected.
 */
import assert from "node:assert/strict";
import { KubeClient } from "../../lib/kube/client.ts";
import { ApiError } from "../../lib/kube/errors.ts";
import { MUTATING_WEBHOOKS, type Resource, resourcePath, VALIDATING_WEBHOOKS } from "../../lib/kube/resources.ts";
import { eventually, sharedControlPlane } from "../../testing/helpers.ts";
import { applyRbac, serviceAccountKubeconfig } from "../../testing/deploy.ts";
import { type WebhookConfiguration, webhookConfigurations } from "../../webhooks/configurations.ts";
import { reconcileWebhookCertificates } from "../../webhooks/certificates.ts";

const env = sharedControlPlane();

/** A JSON patch as a server dry run: "allowed", or the API server's refusal. */
async function dryPatch(client: KubeClient, r: Resource, ops: unknown[]): Promise<string> {
  try {
    await client.request("PATCH", resourcePath(r, undefined, "nico"), {
      body: ops,
      contentType: "application/json-patch+json",
      query: { dryRun: "All", fieldManager: "nico" },
    });
    return "allowed";
  } catch (err) {
    if (err instanceof ApiError) return `refused ${err.status}: ${err.message}`;
    throw err;
  }
}

const ATTACKS: [string, Resource, unknown[]][] = [
  ["re-point the mutating webhook at a URL of the attacker's choosing", MUTATING_WEBHOOKS, [
    { op: "replace", path: "/webhooks/0/clientConfig/url", value: "https://127.0.0.1:1/steal" },
  ]],
  ["send it every Pod and Secret", MUTATING_WEBHOOKS, [
    {
      op: "replace",
      path: "/webhooks/0/rules",
      value: [{
        apiGroups: [""],
        apiVersions: ["v1"],
        operations: ["CREATE", "UPDATE"],
        resources: ["pods", "secrets"],
        scope: "*",
      }],
    },
  ]],
  ["turn the validating webhook fail-open", VALIDATING_WEBHOOKS, [
    { op: "replace", path: "/webhooks/0/failurePolicy", value: "Ignore" },
  ]],
  ["narrow it with an object selector", VALIDATING_WEBHOOKS, [
    { op: "add", path: "/webhooks/0/objectSelector", value: { matchLabels: { never: "x" } } },
  ]],
  ["change the timeout", VALIDATING_WEBHOOKS, [{ op: "replace", path: "/webhooks/0/timeoutSeconds", value: 30 }]],
  ["change the reinvocation policy", MUTATING_WEBHOOKS, [
    { op: "replace", path: "/webhooks/0/reinvocationPolicy", value: "IfNeeded" },
  ]],
  ["add a second webhook", VALIDATING_WEBHOOKS, [
    {
      op: "add",
      path: "/webhooks/-",
      value: {
        name: "second.evil.example.test",
        admissionReviewVersions: ["v1"],
        sideEffects: "None",
        clientConfig: { url: "https://127.0.0.1:1/x" },
      },
    },
  ]],
  ["add a label", VALIDATING_WEBHOOKS, [{ op: "add", path: "/metadata/labels/x", value: "y" }]],
];

Deno.test("as NICO's ServiceAccount only the caBundle of its webhook configurations may change", async () => {
  const cp = await env.get();
  await applyRbac(cp, "cluster-wide");
  const { validating, mutating } = webhookConfigurations({ url: "https://127.0.0.1:9443" });
  // The control plane is shared and nothing serves 127.0.0.1:9443: these webhooks must call nothing, or every
  // other test's KubernetesCluster write would be refused while this test runs (failurePolicy Fail).
  const callingNothing = (c: typeof validating) => ({
    ...c,
    webhooks: c.webhooks.map((w) => ({
      ...w,
      namespaceSelector: { matchLabels: { "nico.homystack.com/never": "x" } },
    })),
  });
  await cp.client.apply(VALIDATING_WEBHOOKS, callingNothing(validating));
  await cp.client.apply(MUTATING_WEBHOOKS, callingNothing(mutating));
  const sa = KubeClient.load(await serviceAccountKubeconfig(cp), { fieldManager: "nico" });
  try {
    // The API server loads a new policy within a second or so.
    await eventually("the policy refuses the first attack", async () => {
      const [, r, ops] = ATTACKS[0]!;
      return (await dryPatch(sa, r, ops)).startsWith("refused 403");
    }, 30_000);
    const allowed: string[] = [];
    for (const [what, r, ops] of ATTACKS) {
      const answer = await dryPatch(sa, r, ops);
      if (!answer.startsWith("refused 403")) allowed.push(`${what}: ${answer}`);
      else assert.match(answer, /may change only the caBundle/, what);
    }
    assert.deepEqual(allowed, [], "NICO's ServiceAccount could make these changes");
    await assert.rejects(sa.delete(VALIDATING_WEBHOOKS, "nico"), (e) => e instanceof ApiError && e.status === 403);

    // The change NICO makes passes: its certificate loop, as its ServiceAccount, writes both bundles.
    const r = await reconcileWebhookCertificates({
      client: sa,
      namespace: "nico-system",
      ipAddresses: ["127.0.0.1"],
      webhook: { url: "https://127.0.0.1:9443" },
    });
    for (const res of [VALIDATING_WEBHOOKS, MUTATING_WEBHOOKS]) {
      const got = await cp.client.get<WebhookConfiguration>(res, "nico");
      assert.equal(atob(got!.webhooks[0]!.clientConfig.caBundle ?? ""), r.caBundlePem, res.plural);
      assert.equal(got!.webhooks[0]!.clientConfig.url?.startsWith("https://127.0.0.1:9443/"), true);
    }
    // An administrator is not bound by it.
    assert.equal(await dryPatch(cp.client, MUTATING_WEBHOOKS, ATTACKS[0]![2]), "allowed");
  } finally {
    await cp.client.delete(VALIDATING_WEBHOOKS, "nico");
    await cp.client.delete(MUTATING_WEBHOOKS, "nico");
  }
});
