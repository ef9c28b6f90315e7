/**
 * The simulated control-plane node's API server (testing/front.ts) against a
 * real kube-apiserver: `/version` as the node runs it, to anyone; every other
 * request passed on as the caller (client certificate checked, identity
 * carried by front-proxy headers a caller cannot forge), watches streamed.
 */
import assert from "node:assert/strict";
import { startControlPlane } from "../../testing/envtest/controlplane.ts";
import { kubeconfigYaml } from "../../testing/envtest/controlplane.ts";
import { freePort } from "../../testing/envtest/process.ts";
import { frontProxyArgs, frontProxyTrust, startFront } from "../../testing/front.ts";
import { createCa, issueCert } from "../../lib/pki.ts";
import { KubeClient } from "../../lib/kube/client.ts";
import { NAMESPACES, SECRETS } from "../../lib/kube/resources.ts";

/** GET `path` at the front with only the cluster CA trusted (no client certificate), or with `cert`. */
async function fetchAt(url: string, caPem: string, cert?: { certPem: string; keyPem: string }, headers = {}) {
  const client = Deno.createHttpClient({ caCerts: [caPem], ...(cert ? { cert: cert.certPem, key: cert.keyPem } : {}) });
  try {
    const res = await fetch(url, { client, headers });
    return { status: res.status, body: await res.json() };
  } finally {
    client.close();
  }
}

Deno.test("a node's API server front: its own /version, the real API server behind it, as the caller", async () => {
  const dir = await Deno.makeTempDir({ prefix: "nico-front-" });
  const clusterCa = await createCa({ commonName: "cluster-ca" });
  const trust = await frontProxyTrust(`${dir}/trust`);
  await using cp = await startControlPlane({ ca: clusterCa, crds: [], apiserverArgs: frontProxyArgs(trust) });
  const host = "127.0.0.1";
  const port = freePort();
  const front = await startFront({
    host,
    port,
    clusterCa,
    upstream: cp.server,
    upstreamCa: clusterCa,
    trust,
    version: "v1.30.4+k3s1",
    dir: `${dir}/front`,
  });
  try {
    const base = `https://${host}:${port}`;
    const version = await fetchAt(`${base}/version`, clusterCa.certPem);
    assert.equal(version.status, 200);
    assert.equal(version.body.gitVersion, "v1.30.4+k3s1");
    assert.deepEqual([version.body.major, version.body.minor], ["1", "30"]);
    await front.setVersion("1.31.0");
    assert.equal((await fetchAt(`${base}/version`, clusterCa.certPem)).body.gitVersion, "v1.31.0");
    await front.setVersion(undefined);
    assert.equal((await fetchAt(`${base}/version`, clusterCa.certPem)).status, 503, "no version: not running");

    assert.equal((await fetchAt(`${base}/api/v1/namespaces`, clusterCa.certPem)).status, 401, "no certificate");

    // An admin through the front: lists, and a watch streams an event as it happens.
    const admin = await issueCert(clusterCa, {
      commonName: "kubernetes-admin",
      organizations: ["system:masters"],
      usage: "client",
      days: 1,
    });
    const path = `${dir}/admin.kubeconfig`;
    await Deno.writeTextFile(path, kubeconfigYaml(base, clusterCa.certPem, "admin", admin));
    const client = KubeClient.load(path);
    try {
      const names = (await client.list(NAMESPACES)).items.map((n) => n.metadata.name);
      assert.ok(names.includes("default"), `namespaces through the front: ${names}`);
      const abort = new AbortController();
      const { resourceVersion } = await client.list(SECRETS, { namespace: "default" });
      const seen = (async () => {
        const from = { namespace: "default", resourceVersion, signal: abort.signal };
        for await (const e of client.watch(SECRETS, from)) {
          if (e.type === "ADDED" && e.object.metadata.name === "through-the-front") return true;
        }
        return false;
      })();
      await client.create(SECRETS, { metadata: { name: "through-the-front", namespace: "default" } });
      assert.equal(await seen, true);
      abort.abort();
    } finally {
      await client.close();
    }

    // Someone else is themselves behind the front, whatever headers they send.
    const alice = await issueCert(clusterCa, { commonName: "alice", usage: "client", days: 1 });
    const forged = { "X-Remote-User": "admin", "X-Remote-Group": "system:masters", "Impersonate-User": "admin" };
    const denied = await fetchAt(`${base}/api/v1/namespaces`, clusterCa.certPem, alice, forged);
    assert.equal(denied.status, 403);
    assert.match(denied.body.message, /User "alice" cannot list resource "namespaces"/);
  } finally {
    await front.stop();
    await Deno.remove(dir, { recursive: true });
  }
});
