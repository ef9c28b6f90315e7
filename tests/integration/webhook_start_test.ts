/**
 * Finding 9: on a fresh install with leader election on, `nico run` issues
 * its webhook certificate as soon as it leads, `/readyz` turns true only
 * once the webhook serves a valid certificate, and the API server reaches
 * the webhook within seconds (it used to take 36 s).
 */
import { startNicoProcess } from "../../testing/nico_process.ts";
import assert from "node:assert/strict";
import { MUTATING_WEBHOOKS, SECRETS, VALIDATING_WEBHOOKS } from "../../lib/kube/resources.ts";
import { freePort } from "../../testing/envtest/process.ts";
import { eventually, ownControlPlane } from "../../testing/helpers.ts";
import { secretText, type TlsSecret } from "../../webhooks/tls.ts";

/** NICO registers its webhook configurations cluster-wide here: a control plane of its own. */
const env = ownControlPlane({});

Deno.test("finding 9: a fresh start with leader election serves the webhook and is ready within seconds", async () => {
  const cp = await env.get();
  const leaseNs = await cp.namespace("nico-fresh");
  const ns = await cp.namespace("start");
  const webhookPort = freePort();
  const healthPort = freePort();
  const started = performance.now();
  const nico = startNicoProcess(
    "nico",
    [
      `--kubeconfig=${cp.kubeconfigPath}`,
      "--identity=nico-fresh",
      "--leader-elect=true",
      `--lease-namespace=${leaseNs}`,
      "--resolve-refs=false",
      // No workload API servers here: NICO would wait for Nodes that never register.
      "--workload-connections=false",
      `--webhook-addr=127.0.0.1:${webhookPort}`,
      `--webhook-url=https://127.0.0.1:${webhookPort}`,
      `--metrics-addr=127.0.0.1:${freePort()}`,
      `--health-addr=127.0.0.1:${healthPort}`,
      "--default-git-repo=https://git.example.test/flake.git",
    ],
    `${cp.dir}/nico-fresh.log`,
  );
  try {
    // /readyz: never true before the webhook serves a certificate the API server can trust.
    const readyAfter = await eventually(
      "/readyz",
      async () => {
        const res = await fetch(`http://127.0.0.1:${healthPort}/readyz`).catch(() => undefined);
        await res?.body?.cancel();
        if (res?.status !== 200) return undefined;
        const at = (performance.now() - started) / 1000;
        const secret = await cp.client.get<TlsSecret>(SECRETS, "nico-webhook-tls", leaseNs);
        assert.ok(secret, "/readyz was true before the certificate Secret existed");
        const client = Deno.createHttpClient({ caCerts: [secretText(secret, "ca.crt")!] });
        try {
          const health = await fetch(`https://127.0.0.1:${webhookPort}/healthz`, { client });
          assert.equal(await health.text(), "ok", "/readyz was true but the webhook did not answer over TLS");
        } finally {
          client.close();
        }
        return at;
      },
      60_000,
      100,
    );

    const json = JSON.stringify({
      apiVersion: "nico.homystack.com/v1alpha1",
      kind: "KubernetesCluster",
      metadata: { name: "probe", namespace: ns },
      spec: { controlPlane: { machines: ["nowhere"] } },
    });
    const servingAfter = await eventually(
      "the API server to call the webhook",
      async () => {
        const r = await cp.kubectl(["apply", "--dry-run=server", "-f", "-"], { stdin: json });
        return r.stderr.includes("Machine nowhere does not exist") ? (performance.now() - started) / 1000 : undefined;
      },
      60_000,
      100,
    );
    console.log(
      `fresh start, leader election on: /readyz after ${readyAfter.toFixed(1)} s, ` +
        `the API server reaches the webhook after ${servingAfter.toFixed(1)} s (process start included)`,
    );
    // Before the fix: 36 s (the certificate loop slept 30 s when it asked before the election finished).
    assert.ok(readyAfter < 20, `/readyz took ${readyAfter} s`);
    assert.ok(servingAfter < 25, `the webhook took ${servingAfter} s to be reachable`);
  } finally {
    await nico.stop();
    await cp.client.delete(VALIDATING_WEBHOOKS, "nico");
    await cp.client.delete(MUTATING_WEBHOOKS, "nico");
  }
});
