// deno-lint-ignore-file no-explicit-any
/**
 * The admission webhook behind a real kube-apiserver, driven by real
 * `kubectl apply`: refusals print our message and store nothing, defaults
 * are stored, warnings are printed, unsafe updates are refused, and NICO's
 * own certificates (Secret, CA bundle, renewal) work end to end. The lookup
 * reads NICO's informers, as in production.
 */
import assert from "node:assert/strict";
import type { KubernetesCluster } from "../../crds/kubernetescluster.ts";
import type { KubeClient } from "../../lib/kube/client.ts";
import { MUTATING_WEBHOOKS, SECRETS, VALIDATING_WEBHOOKS } from "../../lib/kube/resources.ts";
import { KUBERNETES_CLUSTERS } from "../../crds/kubernetescluster.ts";
import { MACHINES, NIXOS_CONFIGURATIONS } from "../../core/contract/nio.ts";
import { CLUSTER_LABEL, FINALIZER, ROLE_LABEL } from "../../core/contract/labels.ts";
import type { Machine, NixosConfiguration } from "../../core/contract/nio.ts";
import { createCa, issueCert, signedBy } from "../../lib/pki.ts";
import { Informer } from "../../lib/runtime/informer.ts";
import { silentLogger } from "../../lib/runtime/log.ts";
import { base64 } from "../../webhooks/admission.ts";
import { webhookApp } from "../../webhooks/app.ts";
import { subjectAccessReviews } from "../../webhooks/authorize.ts";
import { reconcileWebhookCertificates } from "../../webhooks/certificates.ts";
import { webhookConfigurations } from "../../webhooks/configurations.ts";
import { informerLookup, type LookupInformers, LookupNotReady } from "../../webhooks/lookup.ts";
import { startWebhookServer, type WebhookServer } from "../../webhooks/server.ts";
import { secretText, secretTls, type TlsSecret } from "../../webhooks/tls.ts";
import { configName } from "../../core/contract/names.ts";
import { freePort } from "../../testing/envtest/process.ts";
import type { ControlPlane } from "../../testing/envtest/controlplane.ts";
import { eventually, ownControlPlane } from "../../testing/helpers.ts";
import { createMachines } from "../../testing/nico.ts";

/** Its webhook configurations are cluster-wide (every KubernetesCluster write goes through them): a control plane of its own. */
const env = ownControlPlane({});
const DEFAULT_REPO = "https://git.example.test/default-flake.git";
const CONFIG_NAME = "nico-test";

interface Fixture {
  cp: ControlPlane;
  client: KubeClient;
  informers: LookupInformers;
  server: WebhookServer;
}

let fixture: Promise<Fixture> | undefined;

/** Informers, the webhook server on loopback TLS, and both configurations pointing at it by URL. */
function setup(): Promise<Fixture> {
  fixture ??= (async () => {
    const cp = await env.get();
    const client = cp.client;
    const opts = { logger: silentLogger, resyncMs: 0 };
    const informers: LookupInformers = {
      machines: new Informer<Machine>(client, MACHINES, opts),
      configs: new Informer<NixosConfiguration>(client, NIXOS_CONFIGURATIONS, opts),
      clusters: new Informer<KubernetesCluster>(client, KUBERNETES_CLUSTERS, opts),
    };
    for (const i of Object.values(informers)) i.start();
    await Promise.all(Object.values(informers).map((i) => i.synced()));

    const ca = await createCa({ commonName: "webhook-test-ca" });
    const serving = await issueCert(ca, {
      commonName: "127.0.0.1",
      ipAddresses: ["127.0.0.1"],
      usage: "server",
      days: 1,
    });
    const app = webhookApp({
      lookup: informerLookup(informers),
      access: subjectAccessReviews(client),
      defaultGitRepo: DEFAULT_REPO,
    });
    const server = await startWebhookServer({ app, hostname: "127.0.0.1", port: 0, tls: serving });
    const { validating, mutating } = webhookConfigurations({
      name: CONFIG_NAME,
      url: `https://127.0.0.1:${server.port}`,
      caBundlePem: ca.certPem,
    });
    await client.apply(VALIDATING_WEBHOOKS, validating);
    await client.apply(MUTATING_WEBHOOKS, mutating);

    // The API server picks webhook configurations up asynchronously: wait until ours answers.
    const probeNs = await cp.namespace("probe");
    await eventually(
      "the webhook to be called",
      async () => {
        const r = await apply(cp, clusterJson(probeNs, "probe", { controlPlane: { machines: ["nowhere"] } }), [
          "--dry-run=server",
        ]);
        return r.code !== 0 && r.stderr.includes("Machine nowhere does not exist");
      },
      30_000,
      250,
    );
    return { cp, client, informers, server };
  })();
  return fixture;
}

function clusterJson(ns: string, name: string, spec: unknown): string {
  return JSON.stringify({
    apiVersion: "nico.homystack.com/v1alpha1",
    kind: "KubernetesCluster",
    metadata: { name, namespace: ns },
    spec,
  });
}

function apply(cp: ControlPlane, json: string, extra: string[] = []) {
  return cp.kubectl(["apply", "-f", "-", ...extra], { stdin: json });
}

/** Creates Machines and marks the given ones discoverable; waits until the informer has seen it all. */
async function machines(
  f: Fixture,
  ns: string,
  names: string[],
  discoverable: string[] = names,
  status: Record<string, unknown> = {},
) {
  await createMachines(f.client, ns, names, { role: "cp" });
  for (const n of names) {
    const s = { discoverable: discoverable.includes(n), ...(status[n] as object ?? {}) };
    await f.client.mergePatch(MACHINES, n, ns, { status: s }, "status");
  }
  await eventually("the informer to see the Machines", () =>
    names.every((n) => {
      const m = f.informers.machines.get(ns, n);
      return m?.status?.discoverable === discoverable.includes(n) &&
        Object.entries((status[n] ?? {}) as Record<string, unknown>).every(([k, v]) => (m.status as any)?.[k] === v);
    }));
}

async function getCluster(f: Fixture, ns: string, name: string): Promise<any> {
  return await f.client.get<any>(KUBERNETES_CLUSTERS, name, ns);
}

Deno.test("kubectl apply: a cluster naming an undiscoverable Machine is refused with our message", async () => {
  const f = await setup();
  const ns = await f.cp.namespace("undiscoverable");
  await machines(f, ns, ["cp-01", "cp-02", "cp-03"], ["cp-01", "cp-03"]);
  const r = await apply(
    f.cp,
    clusterJson(ns, "prod", { gitRepo: DEFAULT_REPO, controlPlane: { machines: ["cp-01", "cp-02", "cp-03"] } }),
  );
  assert.notEqual(r.code, 0, r.stdout);
  assert.match(r.stderr, /admission webhook "validate\.kubernetescluster\.nico\.homystack\.com" denied the request/);
  assert.ok(
    r.stderr.includes(
      "spec.controlPlane.machines[1]: Machine cp-02 is not discoverable: NIO cannot reach it; fix the host or pick another Machine",
    ),
    r.stderr,
  );
  assert.equal(await getCluster(f, ns, "prod"), undefined, "nothing was stored");
});

Deno.test("kubectl apply: Machines already configured or targeted elsewhere are refused", async () => {
  const f = await setup();
  const ns = await f.cp.namespace("configured");
  await machines(f, ns, ["m-1", "m-2", "m-3"], ["m-1", "m-2", "m-3"], {
    "m-2": { hasConfiguration: true, appliedConfiguration: "hand-made" },
  });
  const foreign: NixosConfiguration = {
    metadata: { name: "someone-else", namespace: ns },
    spec: {
      machineRef: { name: "m-3" },
      gitRepo: "g",
      flake: "#x",
      onRemoveFlake: "#minimal",
      fullInstall: false,
      additionalFiles: [],
    },
  };
  await f.client.create(NIXOS_CONFIGURATIONS, foreign);
  await eventually("the informer to see the NixosConfiguration", () => f.informers.configs.get(ns, "someone-else"));

  const r = await apply(f.cp, clusterJson(ns, "prod", { controlPlane: { machines: ["m-1", "m-2", "m-3"] } }));
  assert.notEqual(r.code, 0);
  for (
    const line of [
      "spec.controlPlane.machines[1]: Machine m-2 is configured by NixosConfiguration hand-made; remove that configuration first or pick another Machine",
      "spec.controlPlane.machines[2]: Machine m-3 is already the target of NixosConfiguration someone-else; delete that NixosConfiguration first or pick another Machine",
    ]
  ) assert.ok(r.stderr.includes(line), r.stderr);
  assert.equal(await getCluster(f, ns, "prod"), undefined);
});

Deno.test("kubectl apply: a cluster without gitRepo is stored with the default and the finalizer; a valid one passes quietly", async () => {
  const f = await setup();
  const ns = await f.cp.namespace("defaults");
  await machines(f, ns, ["cp-1", "cp-2", "cp-3"]);
  const r = await apply(f.cp, clusterJson(ns, "prod", { controlPlane: { machines: ["cp-1", "cp-2", "cp-3"] } }));
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /kubernetescluster\.nico\.homystack\.com\/prod created/);
  assert.equal(r.stderr, "", "no warnings for a valid three-node cluster");
  const stored = await getCluster(f, ns, "prod");
  assert.equal(stored.spec.gitRepo, DEFAULT_REPO);
  assert.equal(stored.spec.fullInstall, false);
  // No reconciler runs here: the finalizer is there from the first write, added at admission.
  assert.deepEqual(stored.metadata.finalizers, [FINALIZER]);
  assert.equal(stored.metadata.generation, 1);

  const again = await apply(f.cp, clusterJson(ns, "prod", { controlPlane: { machines: ["cp-1", "cp-2", "cp-3"] } }));
  assert.equal(again.code, 0, again.stderr);
  assert.equal((await getCluster(f, ns, "prod")).spec.gitRepo, DEFAULT_REPO, "re-applying keeps the default");
});

Deno.test("kubectl apply: warnings are printed and the cluster is stored", async () => {
  const f = await setup();
  const ns = await f.cp.namespace("warnings");
  await machines(f, ns, ["cp-1", "cp-2"]);
  const r = await apply(
    f.cp,
    clusterJson(ns, "small", {
      gitRepo: DEFAULT_REPO,
      credentialsRef: { name: "git-creds" },
      controlPlane: { machineSelector: { matchLabels: { role: "cp" } }, count: 3 },
    }),
  );
  assert.equal(r.code, 0, r.stderr);
  for (
    const w of [
      `Warning: KubernetesCluster ${ns}/small: spec.controlPlane.count: 3 Machines wanted but only 2 (cp-1, cp-2) match role=cp and are available;`,
    ]
  ) assert.ok(r.stderr.includes(w), r.stderr);
  assert.ok(await getCluster(f, ns, "small"));

  const single = await apply(
    f.cp,
    clusterJson(ns, "single", { gitRepo: DEFAULT_REPO, controlPlane: { machines: ["cp-1"] } }),
  );
  assert.equal(single.code, 0, single.stderr);
  // Each warning names its cluster: a multi-document apply shows which object it is about.
  assert.match(
    single.stderr,
    new RegExp(
      `^Warning: KubernetesCluster ${ns}/single: spec\\.controlPlane\\.machines: a single-node control plane`,
      "m",
    ),
  );
});

Deno.test("kubectl apply: unsafe updates are refused, metadata changes always pass", async () => {
  const f = await setup();
  const ns = await f.cp.namespace("updates");
  await machines(f, ns, ["cp-1", "cp-2", "cp-3", "cp-4"]);
  const spec = { gitRepo: DEFAULT_REPO, controlPlane: { machines: ["cp-1", "cp-2", "cp-3"] } };
  assert.equal((await apply(f.cp, clusterJson(ns, "prod", spec))).code, 0);
  const stored = await getCluster(f, ns, "prod");
  // What the controller would have made: a NixosConfiguration per member, controlled by the cluster.
  for (const m of spec.controlPlane.machines) {
    await f.client.create<NixosConfiguration>(NIXOS_CONFIGURATIONS, {
      metadata: {
        name: configName("prod", m),
        namespace: ns,
        labels: { [CLUSTER_LABEL]: "prod", [ROLE_LABEL]: "control-plane" },
        ownerReferences: [{
          apiVersion: "nico.homystack.com/v1alpha1",
          kind: "KubernetesCluster",
          name: "prod",
          uid: stored.metadata.uid,
          controller: true,
        }],
      },
      spec: {
        machineRef: { name: m },
        gitRepo: DEFAULT_REPO,
        flake: `#${m}`,
        onRemoveFlake: "#minimal",
        fullInstall: false,
        additionalFiles: [],
      },
    });
  }
  await eventually("the informer to see the configurations", () => f.informers.configs.list(ns).length === 3);

  const wipe = await apply(f.cp, clusterJson(ns, "prod", { ...spec, fullInstall: true }));
  assert.notEqual(wipe.code, 0);
  assert.match(
    wipe.stderr,
    /spec\.fullInstall: cannot change to true on an existing cluster: NIO would reinstall NixOS and WIPE THE DISK/,
  );

  const shrink = await apply(f.cp, clusterJson(ns, "prod", { ...spec, controlPlane: { machines: ["cp-1"] } }));
  // Accepted: the rollout removes them one at a time; kubectl shows the warning.
  assert.equal(shrink.code, 0, shrink.stderr);
  assert.match(
    shrink.stderr,
    /Warning: KubernetesCluster [^/]+\/prod: spec\.controlPlane\.machines: this change removes 2 control-plane Machines \(cp-2, cp-3\); NICO adds/,
  );

  const replace = await apply(
    f.cp,
    clusterJson(ns, "prod", { ...spec, controlPlane: { machines: ["cp-1", "cp-2", "cp-4"] } }),
  );
  assert.equal(replace.code, 0, `one at a time is fine: ${replace.stderr}`);

  // A member becomes unreachable: its cluster's metadata can still change, and spec edits only warn about it.
  await f.client.mergePatch(MACHINES, "cp-2", ns, { status: { discoverable: false } }, "status");
  await eventually(
    "the informer to see cp-2 unreachable",
    () => f.informers.machines.get(ns, "cp-2")?.status?.discoverable === false,
  );
  const label = await f.cp.kubectl(["label", "-n", ns, "kubernetescluster", "prod", "team=infra"]);
  assert.equal(label.code, 0, label.stderr);
  assert.equal(label.stderr, "");
  const edit = await apply(
    f.cp,
    clusterJson(ns, "prod", { ...spec, controlPlane: { machines: ["cp-1", "cp-2", "cp-4"] }, ref: "v2" }),
  );
  assert.equal(edit.code, 0, edit.stderr);
  assert.match(
    edit.stderr,
    /Warning: KubernetesCluster [^/]+\/prod: spec\.controlPlane\.machines\[1\]: Machine cp-2 is not discoverable: NIO cannot reach it;.*\(it stays a member of this cluster/,
  );
});

Deno.test("finding 1: a tenant who may edit clusters but not read Secrets cannot point credentialsRef at one", async () => {
  const f = await setup();
  const ns = await f.cp.namespace("tenant");
  await machines(f, ns, ["cp-1", "cp-2"]);
  const user = "tenant-alice";
  const rbac = [
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "Role",
      metadata: { name: "cluster-editor", namespace: ns },
      rules: [
        { apiGroups: ["nico.homystack.com"], resources: ["kubernetesclusters"], verbs: ["*"] },
        { apiGroups: [""], resources: ["secrets"], resourceNames: ["own-token"], verbs: ["get"] },
      ],
    },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: { name: "cluster-editor", namespace: ns },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "cluster-editor" },
      subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: user }],
    },
  ];
  for (const obj of rbac) {
    const r = await apply(f.cp, JSON.stringify(obj));
    assert.equal(r.code, 0, r.stderr);
  }
  for (const name of ["deploy-token", "own-token"]) {
    await f.client.create(SECRETS, {
      metadata: { name, namespace: ns },
      data: { token: base64(`${name}-value`) },
    } as any);
  }
  const kubeconfig = await f.cp.userKubeconfig(user, ["tenants"]);
  const asTenant = (json: string) => f.cp.kubectl(["apply", "-f", "-"], { stdin: json, kubeconfig });
  const spec = (credentials: string, gitRepo = "https://git.example.test/tenant.git", machine = "cp-1") => ({
    gitRepo,
    credentialsRef: { name: credentials },
    controlPlane: { machines: [machine] },
  });

  // The user really cannot read the Secret: the API server says so itself.
  const direct = await f.cp.kubectl(["get", "secret", "deploy-token", "-n", ns], { kubeconfig });
  assert.notEqual(direct.code, 0);
  assert.match(direct.stderr, /forbidden/);

  const stolen = await asTenant(clusterJson(ns, "steal", spec("deploy-token", "https://attacker.example/x.git")));
  assert.notEqual(stolen.code, 0, "the exfiltration attempt was admitted");
  assert.ok(
    stolen.stderr.includes(
      `spec.credentialsRef.name: user ${user} may not get Secret deploy-token in namespace ${ns}, so it cannot make NICO send that Secret to a Git server; ask for get access to that Secret, or have someone who has it set spec.credentialsRef`,
    ),
    stolen.stderr,
  );
  assert.equal(await getCluster(f, ns, "steal"), undefined);

  const own = await asTenant(clusterJson(ns, "mine", spec("own-token")));
  assert.equal(own.code, 0, own.stderr);

  // A cluster an admin set up with a Secret the tenant cannot read: the tenant may edit other fields,
  // but not send that Secret elsewhere by changing gitRepo.
  const admin = await apply(f.cp, clusterJson(ns, "shared", spec("deploy-token", undefined, "cp-2")));
  assert.equal(admin.code, 0, admin.stderr);
  await eventually("the informer to see cluster shared", () => f.informers.clusters.get(ns, "shared"));
  const moved = await f.cp.kubectl(
    [
      "patch",
      "kubernetesclusters",
      "shared",
      "-n",
      ns,
      "--type=merge",
      "-p",
      '{"spec":{"gitRepo":"https://attacker.example/y.git"}}',
    ],
    { kubeconfig },
  );
  assert.notEqual(moved.code, 0, "a new gitRepo for someone else's Secret was admitted");
  assert.match(moved.stderr, /spec\.credentialsRef\.name: user tenant-alice may not get Secret deploy-token/);
  const paused = await f.cp.kubectl(
    ["patch", "kubernetesclusters", "shared", "-n", ns, "--type=merge", "-p", '{"spec":{"paused":true}}'],
    { kubeconfig },
  );
  assert.equal(paused.code, 0, paused.stderr);
  assert.equal((await getCluster(f, ns, "shared")).spec.gitRepo, "https://git.example.test/tenant.git");
});

Deno.test("finding 5: the webhook answers the same whether or not a credentialsRef Secret exists", async () => {
  const f = await setup();
  const ns = await f.cp.namespace("probe-secret");
  await machines(f, ns, ["cp-1"]);
  await f.client.create(SECRETS, { metadata: { name: "exists", namespace: ns }, data: { token: "eA==" } } as any);
  const answers: string[] = [];
  for (const name of ["exists", "does-not-exist"]) {
    const r = await apply(
      f.cp,
      clusterJson(ns, "c", { credentialsRef: { name }, controlPlane: { machines: ["cp-1"] } }),
      [
        "--dry-run=server",
      ],
    );
    assert.equal(r.code, 0, r.stderr);
    answers.push(r.stderr.replaceAll(name, "<name>"));
  }
  assert.equal(answers[0], answers[1], "the answer depends on whether the Secret exists");
});

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
    () => lookup.machines("default"),
    (err) => err instanceof LookupNotReady && /cache of machines is still loading/.test(err.message),
  );
  assert.deepEqual(lookup.configurations("no-such-namespace"), []);
  await assert.rejects(
    secretTls(f.client, "default", "no-such-secret").load(),
    /Secret default\/no-such-secret does not exist yet; the leader creates it/,
  );
});
