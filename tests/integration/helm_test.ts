/**
 * The Helm chart (deploy/helm/nico): lint, render with default and other
 * values, apply the result to a real API server with a server-side dry run,
 * and check it grants exactly the RBAC the kustomize install does.
 */
import assert from "node:assert/strict";
import { parseAllDocuments } from "yaml";
import { helm } from "../../testing/helm.ts";
import { sharedControlPlane } from "../../testing/helpers.ts";
import { crdsEstablished } from "../../lib/kube/crd.ts";
import { ruleFile } from "../../testing/monitoring.ts";

const env = sharedControlPlane();
const ROOT = new URL("../../", import.meta.url).pathname;
const CHART = `${ROOT}deploy/helm/nico`;

interface Obj {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; annotations?: Record<string, string> };
  [k: string]: unknown;
}

const docs = (text: string): Obj[] =>
  parseAllDocuments(text).map((d) => d.toJSON() as Obj | null).filter((o): o is Obj => o !== null && !!o.kind);
const key = (o: Obj) => `${o.kind}/${o.metadata.name}`;

async function render(args: string[] = []): Promise<Obj[]> {
  const out = await helm(["template", "nico", CHART, "--namespace", "nico-system", ...args]);
  assert.equal(out.code, 0, out.stderr);
  return docs(out.stdout);
}

/** Stand-ins for cert-manager's and the Prometheus Operator's CRDs, so the API server knows their kinds. */
function stubCrd(group: string, kind: string, plural: string): string {
  return JSON.stringify({
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: `${plural}.${group}` },
    spec: {
      group,
      scope: "Namespaced",
      names: { kind, plural, singular: kind.toLowerCase(), listKind: `${kind}List` },
      versions: [{
        name: "v1",
        served: true,
        storage: true,
        schema: { openAPIV3Schema: { type: "object", "x-kubernetes-preserve-unknown-fields": true } },
      }],
    },
  });
}

const OTHER_VALUES = [
  "--set",
  "replicas=1,leaderElection.enabled=false,logFormat=text,logLevel=debug,watchNamespace=infra",
  "--set",
  "defaultGitRepo=https://git.example.test/infra.git,webhook.certMode=cert-manager",
  "--set",
  "metrics.serviceMonitor.enabled=true,metrics.prometheusRule.enabled=true",
  "--set",
  "image.repository=registry.example.test/nico,image.tag=9.9.9,resources.limits.memory=1Gi",
  "--set",
  "podDisruptionBudget.enabled=false",
  "--set",
  "gitAllowedHosts=*\\,git.infra.example.test\\,127.0.0.1,webhook.clientCASecret=apiserver-client-ca",
  "--set",
  "argocd.namespace=argocd",
];

Deno.test("helm lint passes with default and other values", async () => {
  for (const extra of [[], OTHER_VALUES]) {
    const out = await helm(["lint", "--strict", CHART, ...extra]);
    assert.equal(out.code, 0, out.stdout + out.stderr);
    assert.match(out.stdout, /1 chart\(s\) linted, 0 chart\(s\) failed/);
  }
});

Deno.test("the chart renders the objects the kustomize install does, and applies with a server-side dry run", async () => {
  const cp = await env.get();
  const chart = await render(["--include-crds"]);
  const kz = await cp.kubectl(["kustomize", `${ROOT}deploy/`]);
  assert.equal(kz.code, 0, kz.stderr);
  const kustomize = docs(kz.stdout).filter((o) => o.kind !== "Namespace");
  assert.deepEqual(chart.map(key).sort(), kustomize.map(key).sort());
  const ns = await cp.kubectl(["create", "namespace", "nico-system"]);
  assert.ok(ns.code === 0 || /AlreadyExists/.test(ns.stderr), ns.stderr);
  const text = chart.map((o) => JSON.stringify(o)).join("\n");
  const out = await cp.kubectl(["apply", "--server-side", "--force-conflicts", "--dry-run=server", "-f", "-"], {
    stdin: text,
  });
  assert.equal(out.code, 0, out.stderr);
  for (
    const k of ["deployment.apps/nico", "clusterrole.rbac.authorization.k8s.io/nico", "poddisruptionbudget.policy/nico"]
  ) {
    assert.match(out.stdout, new RegExp(`${k.replaceAll(".", "\\.")} serverside-applied \\(server dry run\\)`));
  }
});

Deno.test("other values: cert-manager, monitoring, namespace scope, image, logs; applies with a server-side dry run", async () => {
  const cp = await env.get();
  const objs = await render(OTHER_VALUES);
  const byKey = new Map(objs.map((o) => [key(o), o]));
  const deployment = byKey.get("Deployment/nico") as Obj & {
    spec: {
      replicas: number;
      template: {
        spec: { containers: { image: string; env: { name: string; value?: string }[]; resources: unknown }[] };
      };
    };
  };
  assert.equal(deployment.spec.replicas, 1);
  const c = deployment.spec.template.spec.containers[0]!;
  assert.equal(c.image, "registry.example.test/nico:9.9.9");
  const envOf = (n: string) => c.env.find((e) => e.name === n)?.value;
  assert.deepEqual(
    [
      "NICO_LOG_FORMAT",
      "NICO_LOG_LEVEL",
      "NICO_LEADER_ELECT",
      "NICO_NAMESPACE",
      "NICO_DEFAULT_GIT_REPO",
      "NICO_WEBHOOK_CERT_MODE",
    ]
      .map(envOf),
    ["text", "debug", "false", "infra", "https://git.example.test/infra.git", "cert-manager"],
  );
  assert.equal(envOf("NICO_GIT_ALLOWED_HOSTS"), "*,git.infra.example.test,127.0.0.1");
  assert.equal(envOf("NICO_WEBHOOK_CLIENT_CA"), "/etc/nico/webhook-client-ca/ca.crt");
  const pod = deployment.spec.template.spec as unknown as {
    volumes: { name: string; secret?: { secretName: string } }[];
    containers: { volumeMounts: { name: string; mountPath: string }[] }[];
  };
  assert.equal(pod.volumes.find((v) => v.name === "webhook-client-ca")?.secret?.secretName, "apiserver-client-ca");
  assert.ok(pod.containers[0]!.volumeMounts.some((m) => m.mountPath === "/etc/nico/webhook-client-ca"));
  assert.deepEqual(c.resources, { requests: { cpu: "50m", memory: "128Mi" }, limits: { memory: "1Gi" } });
  assert.equal(byKey.has("PodDisruptionBudget/nico"), false);
  assert.ok(byKey.has("Certificate/nico-webhook") && byKey.has("Issuer/nico-selfsigned"));
  for (const k of ["ValidatingWebhookConfiguration/nico", "MutatingWebhookConfiguration/nico"]) {
    assert.equal(byKey.get(k)!.metadata.annotations?.["cert-manager.io/inject-ca-from"], "nico-system/nico-webhook");
  }
  // The alerts of deploy/monitoring/ (tested by promtool in monitoring_rules_test.ts), as they stand there.
  const rule = byKey.get("PrometheusRule/nico") as Obj & { spec: unknown };
  assert.deepEqual(rule.spec, await ruleFile());
  assert.ok(byKey.has("ServiceMonitor/nico"));

  for (
    const [group, kind, plural] of [
      ["cert-manager.io", "Issuer", "issuers"],
      ["cert-manager.io", "Certificate", "certificates"],
      ["monitoring.coreos.com", "ServiceMonitor", "servicemonitors"],
      ["monitoring.coreos.com", "PrometheusRule", "prometheusrules"],
    ]
  ) {
    const r = await cp.kubectl(["apply", "--server-side", "-f", "-"], { stdin: stubCrd(group!, kind!, plural!) });
    assert.equal(r.code, 0, r.stderr);
    await crdsEstablished(cp.client, [`${plural}.${group}`], { timeoutMs: 60_000 });
  }
  await cp.kubectl(["create", "namespace", "nico-system"]);
  // The watched namespace is the user's; the chart binds NICO's rights there.
  await cp.kubectl(["create", "namespace", "infra"]);
  await cp.kubectl(["create", "namespace", "argocd"]);
  const binding = byKey.get("RoleBinding/nico") as Obj & { roleRef: { name: string } };
  assert.deepEqual([binding.metadata.namespace, binding.roleRef.name], ["infra", "nico"]);
  assert.equal(byKey.has("ClusterRoleBinding/nico"), false, "no cluster-wide binding when one namespace is watched");
  const out = await cp.kubectl(["apply", "--server-side", "--force-conflicts", "--dry-run=server", "-f", "-"], {
    stdin: objs.map((o) => JSON.stringify(o)).join("\n"),
  });
  assert.equal(out.code, 0, out.stderr);
  assert.match(out.stdout, /prometheusrule\.monitoring\.coreos\.com\/nico serverside-applied \(server dry run\)/);
});

Deno.test("argocd.namespace: NICO_ARGOCD_NAMESPACE, and with one watched namespace a Role in Argo CD's", async () => {
  const objs = await render(OTHER_VALUES);
  const byKey = new Map(objs.map((o) => [key(o), o]));
  const container = (byKey.get("Deployment/nico") as unknown as {
    spec: { template: { spec: { containers: { env: { name: string; value?: string }[] }[] } } };
  }).spec.template.spec.containers[0]!;
  assert.equal(container.env.find((e) => e.name === "NICO_ARGOCD_NAMESPACE")?.value, "argocd");
  const role = byKey.get("Role/nico-argocd-clusters") as Obj & { rules: unknown };
  assert.deepEqual([role.metadata.namespace, role.rules], ["argocd", [
    { apiGroups: [""], resources: ["secrets"], verbs: ["get", "list", "create", "update", "delete"] },
  ]]);
  assert.ok(byKey.has("RoleBinding/nico-argocd-clusters"));
  // Watching every namespace, ClusterRole nico covers Argo CD's namespace already: no Role of its own.
  const wide = await render(["--set", "argocd.namespace=argocd"]);
  assert.ok(!wide.some((o) => key(o) === "Role/nico-argocd-clusters"));
});

type Pods = Obj & {
  spec: {
    selector: { matchLabels: Record<string, string>; matchExpressions?: unknown[] };
    template?: { metadata: { labels: Record<string, string> }; spec: { containers: { env: { name: string }[] }[] } };
  };
};
const envOfPods = (d: Pods) => d.spec.template!.spec.containers[0]!.env.map((e) => JSON.stringify(e));

Deno.test("shards: a Deployment and a budget per shard besides the default's, as deploy/sharded/ has them", async () => {
  const cp = await env.get();
  const objs = await render(["--set", "shards={edge-1,edge-2}"]);
  const byKey = new Map(objs.map((o) => [key(o), o as Pods]));
  const deployments = objs.filter((o) => o.kind === "Deployment").map((o) => o.metadata.name);
  assert.deepEqual(deployments, ["nico", "nico-edge-1", "nico-edge-2"]);
  const base = byKey.get("Deployment/nico")!;
  for (const shard of ["edge-1", "edge-2"]) {
    const d = byKey.get(`Deployment/nico-${shard}`)!;
    const label = { "app.kubernetes.io/name": "nico", "nico.homystack.com/shard": shard };
    assert.deepEqual(d.spec.selector.matchLabels, label);
    assert.equal(d.spec.template!.metadata.labels["nico.homystack.com/shard"], shard);
    // The default's container but for NICO_SHARD.
    const shardEnv = JSON.stringify({ name: "NICO_SHARD", value: shard });
    assert.deepEqual(envOfPods(d).filter((e) => e !== shardEnv), envOfPods(base));
    assert.ok(envOfPods(d).includes(shardEnv));
    assert.deepEqual(byKey.get(`PodDisruptionBudget/nico-${shard}`)!.spec.selector.matchLabels, label);
  }
  // The Services select every pod: each shard serves the webhook. The default's budget counts its own pods only.
  const webhook = byKey.get("Service/nico-webhook") as unknown as { spec: { selector: Record<string, string> } };
  assert.deepEqual(webhook.spec.selector, { "app.kubernetes.io/name": "nico" });
  assert.deepEqual(byKey.get("PodDisruptionBudget/nico")!.spec.selector.matchExpressions, [
    { key: "nico.homystack.com/shard", operator: "DoesNotExist" },
  ]);
  // The kustomize overlay's shard is the chart's.
  const kz = await cp.kubectl(["kustomize", `${ROOT}deploy/sharded/`]);
  assert.equal(kz.code, 0, kz.stderr);
  const overlay = new Map(docs(kz.stdout).map((o) => [key(o), o as Pods]));
  const fromChart = byKey.get("Deployment/nico-edge-1")!;
  assert.deepEqual(overlay.get("Deployment/nico-edge-1")!.spec.selector, fromChart.spec.selector);
  const shardEnv = JSON.stringify({ name: "NICO_SHARD", value: "edge-1" });
  const overlayShard = envOfPods(overlay.get("Deployment/nico-edge-1")!);
  assert.deepEqual(overlayShard.filter((e) => e !== shardEnv), envOfPods(overlay.get("Deployment/nico")!));
  assert.ok(overlayShard.includes(shardEnv));
  assert.deepEqual(
    overlay.get("PodDisruptionBudget/nico")!.spec.selector,
    byKey.get("PodDisruptionBudget/nico")!.spec.selector,
  );
  await cp.kubectl(["create", "namespace", "nico-system"]);
  const out = await cp.kubectl(["apply", "--server-side", "--force-conflicts", "--dry-run=server", "-f", "-"], {
    stdin: objs.map((o) => JSON.stringify(o)).join("\n"),
  });
  assert.equal(out.code, 0, out.stderr);
  assert.match(out.stdout, /deployment\.apps\/nico-edge-2 serverside-applied \(server dry run\)/);
});

Deno.test("a bad value is refused with the value's name", async () => {
  const bad = await helm(["template", "nico", CHART, "--set", "webhook.certMode=vault"]);
  assert.notEqual(bad.code, 0);
  assert.match(bad.stderr, /webhook\.certMode must be one of self-signed, cert-manager; got "vault"/);
  const twoLeaders = await helm(["template", "nico", CHART, "--set", "leaderElection.enabled=false"]);
  assert.notEqual(twoLeaders.code, 0);
  assert.match(twoLeaders.stderr, /leaderElection\.enabled=false needs replicas: 1/);
  for (
    const [shards, why] of [["{default}", /shards: default is not a shard name/], ["{a,a}", /named twice/]] as const
  ) {
    const r = await helm(["template", "nico", CHART, "--set", `shards=${shards}`]);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, why);
  }
});

Deno.test("the webhook-configuration policy names the ServiceAccount of the release's namespace", async () => {
  const objs = await render(["--namespace", "ops"]);
  const policy = objs.find((o) => o.kind === "ValidatingAdmissionPolicy") as Obj & {
    spec: { matchConditions: { expression: string }[] };
  };
  assert.deepEqual(policy.spec.matchConditions.map((c) => c.expression), [
    'request.userInfo.username == "system:serviceaccount:ops:nico"',
  ]);
  assert.ok(objs.some((o) => o.kind === "ValidatingAdmissionPolicyBinding"), "the policy has its binding");
});

Deno.test("the chart and kustomize grant the same RBAC", async () => {
  const cp = await env.get();
  const kz = await cp.kubectl(["kustomize", `${ROOT}deploy/`]);
  assert.equal(kz.code, 0, kz.stderr);
  const rbacKinds = new Set(["ServiceAccount", "ClusterRole", "Role", "ClusterRoleBinding", "RoleBinding"]);
  const pick = (objs: Obj[]) =>
    Object.fromEntries(
      objs.filter((o) => rbacKinds.has(o.kind)).map((o) => [
        `${key(o)} in ${o.metadata.namespace ?? "(cluster)"}`,
        { rules: o.rules, roleRef: o.roleRef, subjects: o.subjects },
      ]),
    );
  const fromKustomize = pick(docs(kz.stdout));
  assert.ok(Object.keys(fromKustomize).length >= 3, "kustomize rendered no RBAC");
  assert.deepEqual(pick(await render([])), fromKustomize);
  // One watched namespace: the chart grants what deploy/namespaced/ grants (its namespace is `clusters`).
  const nz = await cp.kubectl(["kustomize", `${ROOT}deploy/namespaced/`]);
  assert.equal(nz.code, 0, nz.stderr);
  const namespaced = docs(nz.stdout);
  const chart = await render(["--set", "watchNamespace=clusters"]);
  assert.deepEqual(pick(chart), pick(namespaced));
  assert.ok(!("ClusterRoleBinding/nico in (cluster)" in pick(chart)), "no cluster-wide binding of ClusterRole nico");
  // ...and its webhooks see only that namespace, as the overlay's do.
  const selectors = (objs: Obj[]) =>
    objs.filter((o) => o.kind.endsWith("WebhookConfiguration")).map((o) => [
      o.kind,
      (o as unknown as { webhooks: { namespaceSelector?: unknown }[] }).webhooks.map((w) => w.namespaceSelector),
    ]).sort();
  assert.deepEqual(selectors(chart), selectors(namespaced));
  assert.ok(JSON.stringify(selectors(chart)).includes('"kubernetes.io/metadata.name":"clusters"'));
});
