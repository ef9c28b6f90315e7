/** How NICO writes its CA bundle into its webhook configurations: only the bundle, unless they point elsewhere. */
import assert from "node:assert/strict";
import { caBundlePatch, webhookConfigurations } from "../../webhooks/configurations.ts";

const url = "https://127.0.0.1:9443";

Deno.test("an existing configuration gets a JSON patch of its caBundle alone, guarded by the entry's name", () => {
  const shipped = webhookConfigurations({ url }).mutating;
  shipped.webhooks[0]!.timeoutSeconds = 10; // an operator's own edit stays
  const desired = webhookConfigurations({ url, caBundlePem: "CA PEM" }).mutating;
  const ops = caBundlePatch(shipped, desired);
  assert.deepEqual(ops, [
    { op: "test", path: "/webhooks/0/name", value: "default.kubernetescluster.nico.homystack.com" },
    { op: "add", path: "/webhooks/0/clientConfig/caBundle", value: btoa("CA PEM") },
  ]);
  assert.deepEqual(caBundlePatch(desired, desired), [], "nothing to write when the bundle is there");
});

Deno.test("a configuration that points elsewhere or lacks NICO's webhook is applied whole", () => {
  const desired = webhookConfigurations({ url, caBundlePem: "CA" }).validating;
  assert.equal(caBundlePatch(webhookConfigurations({ url: "https://127.0.0.1:1" }).validating, desired), "apply");
  const service = webhookConfigurations({ service: { namespace: "nico-system", name: "nico-webhook" } }).validating;
  assert.equal(caBundlePatch(service, desired), "apply");
  assert.equal(caBundlePatch({ ...desired, webhooks: [] }, desired), "apply");
});
