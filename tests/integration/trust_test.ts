/**
 * Trust boundaries (issue 41), the connections: tried as a tenant would on loopback against the real API server, a
 * tenant reads its own cluster's CAs from its namespace (as it may), serves a fake etcd and a fake API server on its
 * own Machine's address with certificates from them, and answers every request with a redirect to a fake internal
 * service holding a secret. NICO follows no redirect, so the internal service is never asked and nothing of it
 * reaches the tenant's status or Events; Deno's public roots are measured; by default NICO reaches no loopback
 * address at all (what production does), and asks etcd only on the nodes. The tenants' side: trust_tenants_test.ts.
 */
import assert from "node:assert/strict";
import { KUBERNETES_CLUSTERS, type KubernetesCluster } from "../../crds/kubernetescluster.ts";
import { caKeySecret, caSecret, etcdCaKeySecret, etcdCaSecret } from "../../core/contract/names.ts";
import type { Secret } from "../../controllers/cluster/secrets.ts";
import { argoCdSecretName } from "../../core/render/argocd.ts";
import { createCa, issueCert, type KeyPair } from "../../lib/pki.ts";
import { EVENTS, SECRETS } from "../../lib/kube/resources.ts";
import type { KubeClient, KubeObject } from "../../lib/kube/client.ts";
import { eventually } from "../../testing/helpers.ts";
import { createMachines } from "../../testing/nico.ts";
import { type World, world } from "../../testing/world.ts";
import { condition } from "../../testing/scenario.ts";
import { EtcdObserver } from "../../controllers/cluster/etcd/observer.ts";
import { silentLogger } from "../../lib/runtime/log.ts";

const SECRET = "AWS_SECRET=hunter2-from-the-internal-service";

/** A fake internal service on loopback: it answers the secret and counts who asked (any connection counts). */
function internalService(hostname: string) {
  let asked = 0;
  const server = Deno.serve({ hostname, port: 0, onListen() {} }, () => {
    asked++;
    return new Response(`ROLE=admin ${SECRET}`, { headers: { "content-type": "text/plain" } });
  });
  return {
    url: `http://${hostname}:${(server.addr as Deno.NetAddr).port}/latest/meta-data`,
    asked: () => asked,
    stop: () => server.shutdown(),
  };
}

/** A TLS server on the tenant's node with a certificate from the tenant's CA, redirecting everything to `to`. */
async function redirector(ca: KeyPair, hostname: string, port: number, to: string) {
  const cert = await issueCert(ca, { commonName: hostname, ipAddresses: [hostname], usage: "server", days: 1 });
  const paths: string[] = [];
  const server = Deno.serve({ hostname, port, cert: cert.certPem, key: cert.keyPem, onListen() {} }, (req) => {
    paths.push(new URL(req.url).pathname);
    return new Response(null, { status: 303, headers: { location: to } });
  });
  return { paths, stop: () => server.shutdown() };
}

/** The CA pair in `<cert>` (tls.crt) and `<key>` (tls.key) of the tenant's namespace. */
async function tenantCa(client: KubeClient, ns: string, cert: string, key: string): Promise<KeyPair> {
  const read = async (name: string, k: string) => {
    const s = await eventually(`Secret ${name}`, () => client.get<Secret>(SECRETS, name, ns), 60_000);
    return atob(s.data![k]!);
  };
  return { certPem: await read(cert, "tls.crt"), keyPem: await read(key, "tls.key") };
}

/** Every Event message of the namespace. */
async function eventMessages(w: World): Promise<string[]> {
  const { items } = await w.client.list<KubeObject & { note?: string }>(EVENTS, { namespace: w.ns });
  return items.map((e) => e.note ?? "");
}

Deno.test({
  name: "finding 1: etcd, /version and the workload API follow no redirect; nothing of the answer reaches status",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await using w = await world("trust-redirect", { nico: { workloadProbeMs: 500, etcdIntervalMs: 500 } });
    const host = "127.0.160.2";
    const internal = internalService("127.0.160.9");
    w.defer(internal.stop);
    await createMachines(w.client, w.ns, ["cp-1"], {}, 160);
    await w.client.create(KUBERNETES_CLUSTERS, {
      metadata: { name: "c", namespace: w.ns },
      spec: { controlPlane: { machines: ["cp-1"] } },
    });
    const etcdCa = await tenantCa(w.client, w.ns, etcdCaSecret("c"), etcdCaKeySecret("c"));
    const clusterCa = await tenantCa(w.client, w.ns, caSecret("c"), caKeySecret("c"));
    const etcd = await redirector(etcdCa, host, 2379, internal.url);
    w.defer(etcd.stop);
    const api = await redirector(clusterCa, host, 6443, internal.url);
    w.defer(api.stop);

    const seen = await w.until(
      "EtcdHealthy and WorkloadAPIAvailable name the redirects",
      (c) =>
        /127\.0\.160\.2:2379.*HTTP 303/.test(condition(c, "EtcdHealthy")?.message ?? "") &&
        condition(c, "WorkloadAPIAvailable")?.status === "False" &&
        etcd.paths.includes("/v3/cluster/member/list") && api.paths.includes("/version"),
      90_000,
    );
    await w.settled();
    const after = (await w.cluster())!;
    for (const c of [seen, after]) {
      const status = JSON.stringify(c.status);
      assert.ok(!status.includes("hunter2") && !status.includes("ROLE="), status);
    }
    for (const m of await eventMessages(w)) assert.ok(!m.includes("hunter2") && !m.includes("ROLE="), m);
    assert.equal(internal.asked(), 0, "NICO followed a redirect to the internal service");
    console.log(`EtcdHealthy: ${condition(after, "EtcdHealthy")?.message}`);
  },
});

/** A child Deno asks `url` for etcd's member list trusting `caPem` only, under `env`; answers what it saw. */
async function childAsks(url: string, ca: KeyPair, env: Record<string, string>): Promise<string> {
  const me = await issueCert(ca, { commonName: "nico", usage: "client", days: 1 });
  const client = new URL("../../lib/etcd/client.ts", import.meta.url).href;
  const script = await Deno.makeTempFile({ suffix: ".ts" });
  try {
    await Deno.writeTextFile(
      script,
      `import { EtcdClient } from ${JSON.stringify(client)};
const e = (k: string) => Deno.env.get(k)!;
const c = new EtcdClient({ caPem: e("CA_PEM"), certPem: e("CERT_PEM"), keyPem: e("KEY_PEM"), timeoutMs: 5_000 });
try { await c.members(${JSON.stringify(url)}); console.log("connected"); }
catch (e) { console.log("refused: " + (e as Error).message); }
c.close();`,
    );
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--allow-all", "--no-config", "--no-lock", "--quiet", script],
      env: { ...env, CA_PEM: ca.certPem, CERT_PEM: me.certPem, KEY_PEM: me.keyPem },
      stdout: "piped",
      stderr: "inherit",
    }).output();
    return new TextDecoder().decode(out.stdout).trim();
  } finally {
    await Deno.remove(script);
  }
}

Deno.test({
  name: "finding 1: Deno trusts public roots beside a cluster's CA; the Deployment's empty DENO_TLS_CA_STORE does not",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    // A "public" root (what a tenant's host with a publicly trusted certificate chains to), as the system store
    // holds it (SSL_CERT_FILE is where Deno's system store reads on Linux), and the cluster's own etcd CA.
    const publicRoot = await createCa({ commonName: "a public root", days: 1 });
    const clusterCa = await createCa({ commonName: "c-etcd-ca", days: 1 });
    const host = "127.0.164.2";
    const cert = await issueCert(publicRoot, { commonName: host, ipAddresses: [host], usage: "server", days: 1 });
    const server = Deno.serve(
      { hostname: host, port: 0, cert: cert.certPem, key: cert.keyPem, onListen() {} },
      () => Response.json({ members: [] }),
    );
    const dir = await Deno.makeTempDir({ prefix: "nico-roots-" });
    try {
      const rootFile = `${dir}/roots.pem`;
      await Deno.writeTextFile(rootFile, publicRoot.certPem);
      const url = `https://${host}:${(server.addr as Deno.NetAddr).port}`;
      const withRoots = await childAsks(url, clusterCa, {
        DENO_TLS_CA_STORE: "system",
        SSL_CERT_FILE: rootFile,
      });
      assert.equal(withRoots, "connected", "caCerts adds to the root store: a public certificate passes");
      const deployment = await Deno.readTextFile(new URL("../../deploy/base/deployment.yaml", import.meta.url));
      const store = /- name: DENO_TLS_CA_STORE\s+value: "(.*)"/.exec(deployment)?.[1];
      assert.equal(store, "", "the Deployment loads no root store");
      const without = await childAsks(url, clusterCa, { DENO_TLS_CA_STORE: store!, SSL_CERT_FILE: rootFile });
      assert.match(without, /^refused: etcd https:\/\/127\.0\.164\.2:\d+ cluster\/member\/list: /);
    } finally {
      await server.shutdown();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "finding 4: etcd is asked only on the nodes' own endpoints, never on a client URL a member advertises",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const ca = await createCa({ commonName: "c-etcd-ca", days: 1 });
    const node = "127.0.165.2";
    let internal = 0;
    const listener = Deno.listen({ hostname: "127.0.165.9", port: 0 });
    const accepting = (async () => {
      for await (const conn of listener) {
        internal++;
        conn.close();
      }
    })().catch(() => {});
    const advertised = `https://127.0.165.9:${(listener.addr as Deno.NetAddr).port}`;
    const cert = await issueCert(ca, { commonName: node, ipAddresses: [node], usage: "server", days: 1 });
    const members = [
      { ID: "1", name: "cp-1", peerURLs: [`https://${node}:2380`], clientURLs: [`https://${node}:2379`] },
      { ID: "2", name: "elsewhere", peerURLs: ["https://127.0.165.8:2380"], clientURLs: [advertised] },
    ];
    const server = Deno.serve({ hostname: node, port: 0, cert: cert.certPem, key: cert.keyPem, onListen() {} }, (r) => {
      const path = new URL(r.url).pathname;
      if (path.endsWith("member/list")) return Response.json({ members });
      if (path.endsWith("maintenance/status")) return Response.json({ header: { member_id: "1" }, leader: "1" });
      return Response.json({});
    });
    const me = await issueCert(ca, { commonName: "nico", usage: "client", days: 1 });
    const opts = { intervalMs: 3_600_000, timeoutMs: 1_000, policy: "loopback" as const, onChange: () => {} };
    const obs = new EtcdObserver(ca, me, { ...opts, key: "test/c", log: silentLogger });
    try {
      obs.watch([{ host: node, url: `https://${node}:${(server.addr as Deno.NetAddr).port}` }]);
      const snap = await obs.look();
      assert.equal(snap.members?.length, 2);
      assert.ok(snap.statuses.has("1"), "the node's own member is asked on the node's endpoint");
      assert.match(snap.statusErrors.get("2") ?? "", /^not asked: its peer URL names no node of the cluster/);
      assert.equal(internal, 0, "NICO connected to a client URL the member advertised");
    } finally {
      await obs.close();
      await server.shutdown();
      listener.close();
      await accepting;
    }
  },
});

Deno.test({
  name: "finding 4: by default NICO connects to no loopback address of a tenant's cluster, and says why",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    // What production does: no --workload-allowed-cidrs (loopbackOnly keeps the test kit's own guard).
    const targets = { loopbackOnly: true, allow: undefined, deny: undefined };
    await using w = await world("trust-refused", { nico: false });
    const argo = await w.cp.namespace("trust-refused-argocd");
    await w.startNico({ workloadProbeMs: 500, etcdIntervalMs: 500, targets, argoCdNamespace: argo });
    let connections = 0;
    const listeners = [2379, 6443].map((port) => Deno.listen({ hostname: "127.0.161.2", port }));
    for (const l of listeners) {
      void (async () => {
        for await (const conn of l) {
          connections++;
          conn.close();
        }
      })().catch(() => {});
      w.defer(() => l.close());
    }
    await createMachines(w.client, w.ns, ["cp-1"], {}, 161);
    await w.client.create(KUBERNETES_CLUSTERS, {
      metadata: { name: "c", namespace: w.ns },
      spec: { controlPlane: { machines: ["cp-1"] } },
    });
    const refusal =
      /refusing to connect to 127\.0\.161\.2: a loopback address, which NICO reaches only when --workload-allowed-cidrs lists it/;
    await w.until(
      "EtcdHealthy and WorkloadAPIAvailable say NICO refuses the address",
      (c: KubernetesCluster) =>
        refusal.test(condition(c, "EtcdHealthy")?.message ?? "") &&
        refusal.test(condition(c, "WorkloadAPIAvailable")?.message ?? ""),
      90_000,
    );
    await w.until(
      "Argo CD is not handed the refused server",
      (c) =>
        condition(c, "ArgoCDRegistered")?.reason === "RegistrationFailed" &&
        refusal.test(condition(c, "ArgoCDRegistered")?.message ?? ""),
    );
    await w.settled();
    assert.equal(connections, 0, "NICO connected to a refused address");
    assert.equal(await w.client.get<Secret>(SECRETS, argoCdSecretName(w.ns, "c"), argo), undefined);
  },
});
