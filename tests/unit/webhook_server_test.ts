/** Admission webhook: configurations (golden) and the TLS server on loopback. */
import { assertGolden } from "../golden.ts";
import assert from "node:assert/strict";
import { stringify } from "yaml";
import { createCa, issueCert } from "../../lib/pki.ts";
import { webhookConfigurations } from "../../webhooks/configurations.ts";
import { VALIDATE_PATH } from "../../webhooks/paths.ts";
import { startWebhookServer } from "../../webhooks/server.ts";
import type { TlsProvider } from "../../webhooks/tls.ts";
import { app, cluster, fleet, reviewBody, three, withRepo } from "../webhook_kit.ts";

Deno.test("webhook configurations: golden", async (t) => {
  const render = (o: Parameters<typeof webhookConfigurations>[0]) => {
    const { validating, mutating } = webhookConfigurations(o);
    return `${stringify(validating)}---\n${stringify(mutating)}`;
  };
  await t.step("in-cluster Service with NICO's CA bundle", async () => {
    await assertGolden(
      "webhook-configurations-service.yaml",
      render({ service: { namespace: "nico-system", name: "nico-webhook" }, caBundlePem: "CA PEM" }),
    );
  });
  await t.step("URL and cert-manager's inject-ca-from", () => {
    const { validating, mutating } = webhookConfigurations({
      url: "https://127.0.0.1:9443/",
      injectCaFrom: "nico-system/nico-webhook",
    });
    assert.deepEqual(validating.webhooks[0]!.clientConfig, {
      url: "https://127.0.0.1:9443/validate-kubernetescluster",
    });
    assert.deepEqual(mutating.webhooks[0]!.clientConfig, { url: "https://127.0.0.1:9443/mutate-kubernetescluster" });
    assert.deepEqual(validating.metadata.annotations, { "cert-manager.io/inject-ca-from": "nico-system/nico-webhook" });
    assert.equal(validating.webhooks[0]!.timeoutSeconds, 5);
  });
  await t.step("exactly one of service and url", () => {
    assert.throws(() => webhookConfigurations({}), /exactly one of service and url/);
    assert.throws(
      () => webhookConfigurations({ url: "https://x", service: { namespace: "a", name: "b" } }),
      /exactly one of service and url/,
    );
  });
});

// ---------------------------------------------------------------- TLS server

Deno.test("the TLS server serves the app on loopback and reloads a renewed certificate", async () => {
  const ca1 = await createCa({ commonName: "ca-one" });
  const ca2 = await createCa({ commonName: "ca-two" });
  const leaf = (ca: typeof ca1) =>
    issueCert(ca, { commonName: "127.0.0.1", ipAddresses: ["127.0.0.1"], usage: "server", days: 1 });
  let current = await leaf(ca1);
  const provider: TlsProvider = { load: () => Promise.resolve(current), describe: () => "test" };
  const server = await startWebhookServer({
    app: app({ machines: fleet(3) }),
    hostname: "127.0.0.1",
    port: 0,
    tls: provider,
    reloadIntervalMs: 0,
  });
  const trusting = (ca: typeof ca1) => Deno.createHttpClient({ caCerts: [ca.certPem] });
  const c1 = trusting(ca1);
  const c2 = trusting(ca2);
  const call = async (client: Deno.HttpClient) => {
    const res = await fetch(`https://127.0.0.1:${server.port}${VALIDATE_PATH}`, {
      method: "POST",
      body: JSON.stringify(reviewBody("CREATE", cluster(withRepo(three)))),
      client,
    });
    return (await res.json()).response.allowed as boolean;
  };
  try {
    assert.ok(server.port > 0);
    assert.equal(await call(c1), true);
    await assert.rejects(call(c2), "a client that trusts only the other CA is refused");
    assert.equal(await server.reload(), false, "same certificate: nothing to do");

    const good = current;
    current = { certPem: good.certPem, keyPem: (await leaf(ca1)).keyPem };
    await assert.rejects(server.reload(), /the renewed webhook certificate is unusable: .*KeyMismatch/);
    current = { certPem: "not a certificate", keyPem: good.keyPem };
    await assert.rejects(server.reload(), /unusable/);
    assert.equal(await call(c1), true, "a bad certificate leaves the old one serving");

    current = await leaf(ca2);
    assert.equal(await server.reload(), true);
    assert.equal(await call(c2), true, "the renewed certificate is served on the same port");
    const c1b = trusting(ca1);
    await assert.rejects(call(c1b), "the old certificate is gone");
    c1b.close();
  } finally {
    c1.close();
    c2.close();
    await server.stop();
  }
});
