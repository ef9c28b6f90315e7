// deno-lint-ignore-file no-explicit-any
/**
 * NICO's own webhook certificates behind a real kube-apiserver: the Secret,
 * the CA bundle in both configurations, renewal and CA rotation with the
 * serving replica reloading, and what the lookup and the TLS loader say
 * before they can answer.
 */
import assert from "node:assert/strict";
import { MUTATING_WEBHOOKS, SECRETS, VALIDATING_WEBHOOKS } from "../../lib/kube/resources.ts";
import { MACHINES } from "../../core/contract/nio.ts";
import type { Machine } from "../../core/contract/nio.ts";
import { signedBy } from "../../lib/pki.ts";
import { Informer } from "../../lib/runtime/informer.ts";
import { silentLogger } from "../../lib/runtime/log.ts";
import { base64 } from "../../webhooks/admission.ts";
import { webhookApp } from "../../webhooks/app.ts";
import { subjectAccessReviews } from "../../webhooks/authorize.ts";
import { reconcileWebhookCertificates } from "../../webhooks/certificates.ts";
import { informerLookup, type LookupInformers, LookupNotReady } from "../../webhooks/lookup.ts";
import { startWebhookServer, type WebhookServer } from "../../webhooks/server.ts";
import { secretText, secretTls, type TlsSecret } from "../../webhooks/tls.ts";
import { freePort } from "../../testing/envtest/process.ts";
import { eventually } from "../../testing/helpers.ts";
import { apply, clusterJson, DEFAULT_REPO, setup } from "../webhook_api_kit.ts";

Deno.test("NICO's own certificates: Secret, CA bundle, renewal and reload", async () => {
  const f = await setup();
  const ns = await f.cp.namespace("nico-system");
  const port = freePort();
  const name = "nico-own-ca";
  const certOpts = {
    client: f.client,
    namespace: ns,
    ipAddresses: ["127.0.0.1"],
    webhook: { name, url: `https://127.0.0.1:${port}` },
  };
  let hits = 0;
  const inner = webhookApp({
    lookup: informerLookup(f.informers),
    access: subjectAccessReviews(f.client),
    defaultGitRepo: DEFAULT_REPO,
  });
  const counting = { fetch: (req: Request) => (hits++, inner.fetch(req)) };
  let server: WebhookServer | undefined;
  const readSecret = async () => (await f.client.get<TlsSecret>(SECRETS, "nico-webhook-tls", ns))!;
  const bundleOf = async (kind: typeof VALIDATING_WEBHOOKS) =>
    (await f.client.get<any>(kind, name))!.webhooks[0].clientConfig.caBundle as string;
  const probe = async () => {
    const before = hits;
    const r = await apply(f.cp, clusterJson(ns, "probe", { controlPlane: { machines: ["nowhere"] } }), [
      "--dry-run=server",
    ]);
    return r.stderr.includes("Machine nowhere does not exist") && hits > before;
  };
  try {
    const first = await reconcileWebhookCertificates(certOpts);
    assert.equal(first.issued, true);
    assert.equal(first.caCreated, true);
    const secret = await readSecret();
    assert.equal(secret.type, "kubernetes.io/tls");
    assert.deepEqual(Object.keys(secret.data ?? {}).sort(), ["ca.crt", "ca.key", "tls.crt", "tls.key"]);
    const caPem = secretText(secret, "ca.crt")!;
    assert.ok(await signedBy(secretText(secret, "tls.crt")!, caPem));
    assert.equal(await bundleOf(VALIDATING_WEBHOOKS), base64(caPem));
    assert.equal(await bundleOf(MUTATING_WEBHOOKS), base64(caPem));

    server = await startWebhookServer({
      app: counting,
      hostname: "127.0.0.1",
      port,
      tls: secretTls(f.client, ns),
      reloadIntervalMs: 0,
    });
    await eventually("the API server to call the server using NICO's own certificate", probe, 30_000, 250);

    const again = await reconcileWebhookCertificates(certOpts);
    assert.equal(again.issued, false, "a valid certificate is kept");
    assert.equal(secretText(await readSecret(), "tls.crt"), secretText(secret, "tls.crt"));

    // Renewal: inside the renewal window the serving certificate is reissued by the same CA.
    const renewed = await reconcileWebhookCertificates({ ...certOpts, renewBeforeDays: 400 });
    assert.equal(renewed.issued, true);
    assert.equal(renewed.caCreated, false);
    const after = await readSecret();
    assert.notEqual(secretText(after, "tls.crt"), secretText(secret, "tls.crt"));
    assert.equal(secretText(after, "ca.crt"), caPem, "the CA bundle is unchanged");
    assert.equal(await server.reload(), true, "the replica picks the renewed certificate up");
    assert.equal(await server.reload(), false);
    assert.ok(await probe(), "the API server trusts the renewed certificate at once");

    // CA rotation: the old CA stays in the bundle beside the new one.
    const rotated = await reconcileWebhookCertificates({ ...certOpts, renewBeforeDays: 4000 });
    assert.equal(rotated.caCreated, true);
    const bundle = secretText(await readSecret(), "ca.crt")!;
    assert.equal(bundle.match(/BEGIN CERTIFICATE/g)?.length, 2);
    assert.ok(bundle.endsWith(caPem), "the previous CA is kept in the bundle");
    assert.equal(await bundleOf(VALIDATING_WEBHOOKS), base64(bundle));
    assert.equal(await server.reload(), true);
    await eventually("the API server to trust the new CA", probe, 30_000, 250);
  } finally {
    await server?.stop();
    await f.client.delete(VALIDATING_WEBHOOKS, name);
    await f.client.delete(MUTATING_WEBHOOKS, name);
  }
});

Deno.test("informerLookup refuses to answer before its caches sync; secretTls says what is missing", async () => {
  const f = await setup();
  const cold: LookupInformers = {
    machines: new Informer<Machine>(f.client, MACHINES, { logger: silentLogger }),
    configs: f.informers.configs,
    clusters: f.informers.clusters,
  };
  const lookup = informerLookup(cold);
  assert.throws(
    () => lookup.unclaimedMachines("default"),
    (err) => err instanceof LookupNotReady && /cache of machines is still loading/.test(err.message),
  );
  assert.deepEqual(lookup.configurationsOf("no-such-namespace", "m"), []);
  await assert.rejects(
    secretTls(f.client, "default", "no-such-secret").load(),
    /Secret default\/no-such-secret does not exist yet; the leader creates it/,
  );
});
