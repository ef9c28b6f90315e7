/**
 * Every kind of kubeconfig authentication NICO's own loader supports, against
 * a real kube-apiserver: the API server's SelfSubjectReview says who the
 * request authenticated as, so each case proves the credential was used.
 * Client certificates (files and data), static bearer tokens (token file
 * auth on the server), token files re-read after rotation, exec plugins
 * (token and client certificate, cached until expiry), the in-cluster
 * service account (TokenRequest tokens, rotated in place), context choice,
 * and the refusals (insecure-skip-tls-verify, a wrong CA).
 */
import assert from "node:assert/strict";
import { KubeClient, loadKubeConfig } from "../../lib/kube/client.ts";
import { issueCert } from "../../lib/pki.ts";
import type { ControlPlane } from "../../testing/envtest/controlplane.ts";
import { eventually, ownControlPlane } from "../../testing/helpers.ts";

const tokens = await Deno.makeTempFile({ prefix: "nico-tokens-" });
await Deno.writeTextFile(
  tokens,
  ["tok-bob,bob,uid-bob", "tok-carol,carol,uid-carol", "tok-dave,dave,uid-dave", "tok-erin,erin,uid-erin"].join("\n") +
    "\n",
);
globalThis.addEventListener("unload", () => Deno.removeSync(tokens));
/** Static tokens need the API server's --token-auth-file: this file has a control plane of its own. */
const controlPlane = ownControlPlane({ apiserverArgs: [`--token-auth-file=${tokens}`] }).get;

/** Who the API server says this client is. */
async function whoami(client: KubeClient): Promise<string> {
  const review = await client.request<{ status: { userInfo: { username: string } } }>(
    "POST",
    "/apis/authentication.k8s.io/v1/selfsubjectreviews",
    { body: { apiVersion: "authentication.k8s.io/v1", kind: "SelfSubjectReview" } },
  );
  return review.status.userInfo.username;
}

async function withClient<T>(client: KubeClient, f: (c: KubeClient) => Promise<T>): Promise<T> {
  try {
    return await f(client);
  } finally {
    await client.close();
  }
}

/** A kubeconfig for the control plane with this `user` section (and optional cluster fields). */
async function kubeconfig(cp: ControlPlane, user: Record<string, unknown>, cluster: Record<string, unknown> = {}) {
  const dir = await Deno.makeTempDir({ dir: cp.dir, prefix: "kc-" });
  const path = `${dir}/config`;
  await Deno.writeTextFile(`${dir}/ca.crt`, cp.ca.certPem);
  await Deno.writeTextFile(
    path,
    JSON.stringify({
      apiVersion: "v1",
      kind: "Config",
      "current-context": "main",
      clusters: [{ name: "c", cluster: { server: cp.server, "certificate-authority": "ca.crt", ...cluster } }],
      users: [{ name: "u", user }, { name: "other", user: { token: "tok-erin" } }],
      contexts: [{ name: "main", context: { cluster: "c", user: "u" } }, {
        name: "second",
        context: { cluster: "c", user: "other" },
      }],
    }),
  );
  return { dir, path };
}

Deno.test("client certificate from files (relative to the kubeconfig) and from data", async () => {
  const cp = await controlPlane();
  const cert = await issueCert(cp.ca, { commonName: "alice", organizations: [], usage: "client", days: 1 });
  const { dir, path } = await kubeconfig(cp, { "client-certificate": "alice.crt", "client-key": "alice.key" });
  await Deno.writeTextFile(`${dir}/alice.crt`, cert.certPem);
  await Deno.writeTextFile(`${dir}/alice.key`, cert.keyPem);
  assert.equal(await withClient(KubeClient.load(path), whoami), "alice");
  const data = await kubeconfig(cp, {
    "client-certificate-data": btoa(cert.certPem),
    "client-key-data": btoa(cert.keyPem),
  });
  assert.equal(await withClient(KubeClient.load(data.path), whoami), "alice");
});

Deno.test("static bearer token, and --context picks another user", async () => {
  const cp = await controlPlane();
  const { path } = await kubeconfig(cp, { token: "tok-bob" });
  assert.equal(await withClient(KubeClient.load(path), whoami), "bob");
  assert.equal(await withClient(KubeClient.load(path, { context: "second" }), whoami), "erin");
  assert.throws(() => KubeClient.load(path, { context: "nope" }), /context "nope" is not defined/);
});

Deno.test("token file: re-read after rotation", async () => {
  const cp = await controlPlane();
  const { dir, path } = await kubeconfig(cp, { tokenFile: "token" });
  await Deno.writeTextFile(`${dir}/token`, "tok-carol\n");
  await withClient(KubeClient.load(path, { tokenRefreshMs: 50 }), async (client) => {
    assert.equal(await whoami(client), "carol");
    await Deno.writeTextFile(`${dir}/token`, "tok-dave\n");
    // Re-read every 50 ms: the next requests soon go as dave (never as anyone else).
    await eventually(
      "requests as dave",
      async () => {
        const who = await whoami(client);
        assert.ok(who === "carol" || who === "dave", who);
        return who === "dave";
      },
      5_000,
      20,
    );
  });
});

/** An exec plugin script printing `status` as an ExecCredential; counts its runs in `<dir>/runs`. */
async function execPlugin(dir: string, status: Record<string, unknown>): Promise<string> {
  const script = `${dir}/plugin.sh`;
  await Deno.writeTextFile(
    script,
    `#!/bin/sh\necho run >> "${dir}/runs"\n` +
      `case "$KUBERNETES_EXEC_INFO" in *ExecCredential*) ;; *) echo "no exec info" >&2; exit 3;; esac\n` +
      `cat <<'EOF'\n${
        JSON.stringify({ apiVersion: "client.authentication.k8s.io/v1", kind: "ExecCredential", status })
      }\nEOF\n`,
  );
  await Deno.chmod(script, 0o755);
  return script;
}

const runs = async (dir: string) => (await Deno.readTextFile(`${dir}/runs`).catch(() => "")).split("\n").length - 1;

Deno.test("exec plugin: token cached until its expiry, client certificate from the plugin", async () => {
  const cp = await controlPlane();
  const dir = await Deno.makeTempDir({ dir: cp.dir, prefix: "exec-" });
  const later = new Date(Date.now() + 3600_000).toISOString();
  const script = await execPlugin(dir, { token: "tok-erin", expirationTimestamp: later });
  const { path } = await kubeconfig(cp, {
    exec: { apiVersion: "client.authentication.k8s.io/v1", command: script, interactiveMode: "Never" },
  });
  await withClient(KubeClient.load(path), async (client) => {
    assert.equal(await whoami(client), "erin");
    assert.equal(await whoami(client), "erin");
    assert.equal(await runs(dir), 1, "a token valid for an hour is reused");
  });

  // An already expired credential is fetched again for every request.
  const dir2 = await Deno.makeTempDir({ dir: cp.dir, prefix: "exec-" });
  const past = new Date(Date.now() - 1000).toISOString();
  const script2 = await execPlugin(dir2, { token: "tok-erin", expirationTimestamp: past });
  const k2 = await kubeconfig(cp, { exec: { apiVersion: "client.authentication.k8s.io/v1", command: script2 } });
  await withClient(KubeClient.load(k2.path), async (client) => {
    await whoami(client);
    await whoami(client);
    assert.equal(await runs(dir2), 2);
  });

  const cert = await issueCert(cp.ca, { commonName: "frank", organizations: [], usage: "client", days: 1 });
  const dir3 = await Deno.makeTempDir({ dir: cp.dir, prefix: "exec-" });
  const script3 = await execPlugin(dir3, { clientCertificateData: cert.certPem, clientKeyData: cert.keyPem });
  const k3 = await kubeconfig(cp, { exec: { apiVersion: "client.authentication.k8s.io/v1", command: script3 } });
  assert.equal(await withClient(KubeClient.load(k3.path), whoami), "frank");

  const k4 = await kubeconfig(cp, { exec: { apiVersion: "client.authentication.k8s.io/v1", command: "/bin/false" } });
  await assert.rejects(withClient(KubeClient.load(k4.path), whoami), /user "u": exec: \/bin\/false exited with code 1/);
});

Deno.test("exec plugin: a 401 runs the plugin again once, and the fresh token is used", async () => {
  const cp = await controlPlane();
  const dir = await Deno.makeTempDir({ dir: cp.dir, prefix: "exec-" });
  // First run: a token the server does not know; later runs: a good one. No expiry, so only the 401 renews it.
  const script = `${dir}/plugin.sh`;
  const cred = (token: string) =>
    JSON.stringify({ apiVersion: "client.authentication.k8s.io/v1", kind: "ExecCredential", status: { token } });
  await Deno.writeTextFile(
    script,
    `#!/bin/sh\necho run >> "${dir}/runs"\n` +
      `if [ "$(wc -l < "${dir}/runs")" -eq 1 ]; then echo '${cred("revoked")}'; else echo '${cred("tok-erin")}'; fi\n`,
  );
  await Deno.chmod(script, 0o755);
  const { path } = await kubeconfig(cp, { exec: { apiVersion: "client.authentication.k8s.io/v1", command: script } });
  await withClient(KubeClient.load(path), async (client) => {
    assert.equal(await whoami(client), "erin");
    assert.equal(await whoami(client), "erin");
  });
  assert.equal(await runs(dir), 2);
});

Deno.test("KUBECONFIG with several files: the first to define a name or current-context wins", async () => {
  const cp = await controlPlane();
  const dir = await Deno.makeTempDir({ dir: cp.dir, prefix: "merge-" });
  await Deno.writeTextFile(`${dir}/ca.crt`, cp.ca.certPem);
  await Deno.writeTextFile(
    `${dir}/a`,
    JSON.stringify({
      "current-context": "main",
      clusters: [{ name: "c", cluster: { server: cp.server, "certificate-authority": "ca.crt" } }],
      contexts: [{ name: "main", context: { cluster: "c", user: "u" } }],
    }),
  );
  await Deno.writeTextFile(
    `${dir}/b`,
    JSON.stringify({
      "current-context": "other",
      users: [{ name: "u", user: { token: "tok-bob" } }],
      contexts: [{ name: "main", context: { cluster: "c", user: "nobody" } }],
    }),
  );
  const env: Record<string, string> = { KUBECONFIG: `${dir}/a:${dir}/missing:${dir}/b` };
  const kc = loadKubeConfig({ env: (n) => env[n] });
  assert.equal(kc.context, "main");
  assert.equal(await withClient(new KubeClient(kc), whoami), "bob");
});

Deno.test("in-cluster: service-account token from TokenRequest, CA, KUBERNETES_SERVICE_HOST/PORT, rotation", async () => {
  const cp = await controlPlane();
  const ns = await cp.namespace("sa");
  const token = async (sa: string) => {
    await cp.client.request("POST", `/api/v1/namespaces/${ns}/serviceaccounts`, {
      body: { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: sa } },
    });
    const r = await cp.client.request<{ status: { token: string } }>(
      "POST",
      `/api/v1/namespaces/${ns}/serviceaccounts/${sa}/token`,
      { body: { apiVersion: "authentication.k8s.io/v1", kind: "TokenRequest", spec: { expirationSeconds: 600 } } },
    );
    return r.status.token;
  };
  const dir = await Deno.makeTempDir({ dir: cp.dir, prefix: "sa-" });
  await Deno.writeTextFile(`${dir}/token`, await token("first"));
  await Deno.writeTextFile(`${dir}/ca.crt`, cp.ca.certPem);
  await Deno.writeTextFile(`${dir}/namespace`, ns);
  const url = new URL(cp.server);
  const env: Record<string, string> = { KUBERNETES_SERVICE_HOST: url.hostname, KUBERNETES_SERVICE_PORT: url.port };
  const kc = loadKubeConfig({ env: (n) => env[n], serviceAccountDir: dir, tokenRefreshMs: 50 });
  assert.equal(kc.context, "in-cluster");
  assert.equal(kc.namespace, ns);
  await withClient(new KubeClient(kc), async (client) => {
    assert.equal(await whoami(client), `system:serviceaccount:${ns}:first`);
    await Deno.writeTextFile(`${dir}/token`, await token("second"));
    await eventually(
      "requests as the rotated token's account",
      async () => {
        return await whoami(client) === `system:serviceaccount:${ns}:second`;
      },
      5_000,
      20,
    );
  });
});

Deno.test("refusals: insecure-skip-tls-verify unless allowed, a CA that did not sign the server", async () => {
  const cp = await controlPlane();
  const { path } = await kubeconfig(cp, { token: "tok-bob" }, { "insecure-skip-tls-verify": true });
  assert.throws(() => KubeClient.load(path), /cluster "c": insecure-skip-tls-verify is true.*certificate-authority/);
  assert.doesNotThrow(() => KubeClient.load(path, { allowInsecure: true }));

  const other = await issueCert(cp.ca, { commonName: "not-a-ca", organizations: [], usage: "client", days: 1 });
  const wrong = await kubeconfig(cp, { token: "tok-bob" }, { "certificate-authority-data": btoa(other.certPem) });
  await assert.rejects(withClient(KubeClient.load(wrong.path), whoami));
  assert.throws(() => KubeClient.load(`${wrong.dir}/missing`), /kubeconfig .*missing: cannot read it/);
});
