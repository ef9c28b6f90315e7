/**
 * The Argo CD cluster Secret NICO renders (core/render/argocd.ts) against the fields Argo CD documents
 * (testing/argocd.ts), and the checker itself: it refuses what Argo CD would not read.
 */
import assert from "node:assert/strict";
import { argoCdClusterSecret } from "../../core/render/argocd.ts";
import { issueKubeconfig, parseIssuedKubeconfig } from "../../core/render/kubeconfig.ts";
import { createCa } from "../../lib/pki.ts";
import { argoCdSecretProblems } from "../../testing/argocd.ts";

const ca = await createCa({ commonName: "prod-ca" });
const kubeconfig = parseIssuedKubeconfig(await issueKubeconfig("prod", "https://[fd00::10]:6443", ca));
const secret = argoCdClusterSecret({
  cluster: {
    namespace: "infra",
    name: "prod",
    labels: { env: "prod", "argocd.argoproj.io/secret-type": "repository" },
  },
  argoCdNamespace: "argocd",
  kubeconfig,
});

Deno.test("the Secret has the fields Argo CD documents for a cluster, and nothing else", () => {
  assert.deepEqual(argoCdSecretProblems(secret), []);
  assert.equal(secret.metadata.namespace, "argocd");
  assert.equal(secret.metadata.name, "nico.prod.infra");
  assert.deepEqual(Object.keys(secret.data).sort(), ["config", "name", "server"]);
  assert.equal(atob(secret.data.name!), "infra/prod");
  assert.equal(atob(secret.data.server!), "https://[fd00::10]:6443");
  const config = JSON.parse(atob(secret.data.config!));
  assert.deepEqual(Object.keys(config), ["tlsClientConfig"]);
  assert.equal(config.tlsClientConfig.insecure, false);
  assert.equal(atob(config.tlsClientConfig.caData), ca.certPem);
  assert.equal(atob(config.tlsClientConfig.certData), kubeconfig.certPem);
  assert.equal(atob(config.tlsClientConfig.keyData), kubeconfig.keyPem);
});

Deno.test("no label of the cluster is copied by default: a tenant's env=production joins no ApplicationSet", () => {
  assert.equal(secret.metadata.labels.env, undefined);
  assert.equal(secret.metadata.labels["argocd.argoproj.io/secret-type"], "cluster");
});

Deno.test("only the label keys the operator lists are copied; Argo CD's own keys stay NICO's; the project is set", () => {
  const listed = argoCdClusterSecret({
    cluster: {
      namespace: "infra",
      name: "prod",
      labels: { env: "prod", team: "a", "example.com/tier": "1", "argocd.argoproj.io/secret-type": "repository" },
    },
    argoCdNamespace: "argocd",
    kubeconfig,
    labelKeys: ["team", "example.com/", "argocd.argoproj.io/*"],
    project: "tenant-a",
  });
  assert.deepEqual(argoCdSecretProblems(listed), []);
  assert.equal(listed.metadata.labels.team, "a");
  assert.equal(listed.metadata.labels["example.com/tier"], "1");
  assert.equal(listed.metadata.labels.env, undefined);
  assert.equal(atob(listed.data.project!), "tenant-a");
  assert.equal(listed.metadata.labels["argocd.argoproj.io/secret-type"], "cluster");
  assert.equal(secret.metadata.labels["nico.homystack.com/cluster-namespace"], "infra");
  assert.equal(secret.metadata.labels["nico.homystack.com/cluster-name"], "prod");
});

Deno.test("the checker refuses what Argo CD would not read", async (t) => {
  const withData = (patch: Record<string, string | undefined>) => ({
    ...secret,
    data: Object.fromEntries(
      Object.entries({ ...secret.data, ...patch }).filter((e): e is [string, string] => e[1] !== undefined),
    ),
  });
  const config = (c: unknown) => withData({ config: btoa(JSON.stringify(c)) });
  const tls = JSON.parse(atob(secret.data.config!)).tlsClientConfig;
  const cases: [string, Parameters<typeof argoCdSecretProblems>[0], RegExp][] = [
    ["no type label", { ...secret, metadata: { labels: {} } }, /label argocd\.argoproj\.io\/secret-type/],
    ["no server", withData({ server: undefined }), /data\.server is missing/],
    ["a server that is no URL", withData({ server: btoa("10.0.0.1:6443") }), /no https URL/],
    ["an unknown data key", withData({ kubeconfig: btoa("x") }), /data\.kubeconfig is no field/],
    ["config not JSON", withData({ config: btoa("{") }), /not JSON/],
    ["an unknown config field", config({ tlsClientConfig: tls, clientCertificate: "x" }), /config\.clientCertificate/],
    ["insecure as a string", config({ tlsClientConfig: { ...tls, insecure: "false" } }), /insecure should be boolean/],
    ["PEM not base64", config({ tlsClientConfig: { ...tls, caData: ca.certPem } }), /caData is not base64/],
    ["key data of a certificate", config({ tlsClientConfig: { ...tls, keyData: tls.certData } }), /keyData/],
    ["clusterResources as yes", withData({ clusterResources: btoa("yes") }), /clusterResources/],
  ];
  for (const [name, s, want] of cases) {
    await t.step(name, () => assert.match(argoCdSecretProblems(s).join("\n"), want));
  }
});
