/**
 * NICO's alerts and dashboard (deploy/monitoring/), checked by the pinned promtool (testing/promtool/go.mod):
 * `promtool check rules` on the PrometheusRule's spec, `promtool test rules` on tests/monitoring/alerts_test.yaml
 * (a case per alert where it fires and one where it does not), and every dashboard query parsed as the expression
 * of a recording rule. The kustomize install and the chart render the same two objects from those files, and
 * both apply to a real API server (stand-ins for the Prometheus Operator's CRD) with a server-side dry run.
 */
import assert from "node:assert/strict";
import { parseAllDocuments, stringify } from "yaml";
import { helm } from "../../testing/helm.ts";
import { sharedControlPlane } from "../../testing/helpers.ts";
import { crdsEstablished } from "../../lib/kube/crd.ts";
import { dashboard, dashboardQueries, recordingRulesOf, ruleFile } from "../../testing/monitoring.ts";
import { promtool } from "../../testing/promtool.ts";

const env = sharedControlPlane();
const ROOT = new URL("../../", import.meta.url).pathname;

/** A folder holding the rule file as `nico.rules.yaml` and the promtool tests beside it. */
async function ruleDir(): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "nico-rules-" });
  await Deno.writeTextFile(`${dir}/nico.rules.yaml`, stringify(await ruleFile()));
  await Deno.copyFile(`${ROOT}tests/monitoring/alerts_test.yaml`, `${dir}/alerts_test.yaml`);
  return dir;
}

Deno.test("promtool check rules: the alerts parse, and are what a rule file may hold", async () => {
  const dir = await ruleDir();
  try {
    const out = await promtool(["check", "rules", "nico.rules.yaml"], { cwd: dir });
    assert.equal(out.code, 0, out.stdout + out.stderr);
    const alerts = (await ruleFile()).groups.flatMap((g) => g.rules).length;
    assert.match(out.stdout, new RegExp(`SUCCESS: ${alerts} rules found`));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("promtool test rules: each alert fires where it should and nowhere else", async () => {
  const dir = await ruleDir();
  try {
    const out = await promtool(["test", "rules", "alerts_test.yaml"], { cwd: dir });
    assert.equal(out.code, 0, out.stdout + out.stderr);
    assert.match(out.stdout, /SUCCESS/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("promtool test rules can fail: an alert that fires too early is caught", async () => {
  const dir = await ruleDir();
  try {
    const rules = await ruleFile();
    const notReady = rules.groups.flatMap((g) => g.rules).find((r) => r.alert === "NicoClusterNotReady")!;
    notReady.for = "5m";
    await Deno.writeTextFile(`${dir}/nico.rules.yaml`, stringify(rules));
    const out = await promtool(["test", "rules", "alerts_test.yaml"], { cwd: dir });
    assert.notEqual(out.code, 0);
    assert.match(out.stdout + out.stderr, /alertname: NicoClusterNotReady/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("every query of the dashboard parses (promtool check rules on one recording rule per query)", async () => {
  const queries = dashboardQueries(await dashboard());
  const dir = await Deno.makeTempDir({ prefix: "nico-dashboard-" });
  try {
    const file = recordingRulesOf(queries.map((q) => ({ name: `${q.panel} ${q.refId}`, expr: q.expr })));
    await Deno.writeTextFile(`${dir}/dashboard.rules.yaml`, stringify(file));
    const out = await promtool(["check", "rules", "dashboard.rules.yaml"], { cwd: dir });
    assert.equal(out.code, 0, out.stdout + out.stderr);
    assert.match(out.stdout, new RegExp(`SUCCESS: ${queries.length} rules found`));
    // The check can fail: a variable left in a query does not parse.
    const broken = recordingRulesOf([{ name: "broken", expr: "rate(nico_webhook_requests_total[$interval])" }]);
    await Deno.writeTextFile(`${dir}/broken.rules.yaml`, stringify(broken));
    const bad = await promtool(["check", "rules", "broken.rules.yaml"], { cwd: dir });
    assert.notEqual(bad.code, 0);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

interface Obj {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  spec?: unknown;
  data?: Record<string, string>;
}

const docs = (text: string): Obj[] =>
  parseAllDocuments(text).map((d) => d.toJSON() as Obj | null).filter((o): o is Obj => o !== null && !!o.kind);

/** A stand-in for the Prometheus Operator's PrometheusRule CRD, so the API server knows the kind. */
const PROMETHEUS_RULE_CRD = JSON.stringify({
  apiVersion: "apiextensions.k8s.io/v1",
  kind: "CustomResourceDefinition",
  metadata: { name: "prometheusrules.monitoring.coreos.com" },
  spec: {
    group: "monitoring.coreos.com",
    scope: "Namespaced",
    names: {
      kind: "PrometheusRule",
      plural: "prometheusrules",
      singular: "prometheusrule",
      listKind: "PrometheusRuleList",
    },
    versions: [{
      name: "v1",
      served: true,
      storage: true,
      schema: { openAPIV3Schema: { type: "object", "x-kubernetes-preserve-unknown-fields": true } },
    }],
  },
});

Deno.test("kustomize and the chart render the same alerts and dashboard, and both apply", async () => {
  const cp = await env.get();
  const kz = await cp.kubectl(["kustomize", `${ROOT}deploy/monitoring/`]);
  assert.equal(kz.code, 0, kz.stderr);
  const fromKustomize = docs(kz.stdout);
  const chartOut = await helm([
    "template",
    "nico",
    `${ROOT}deploy/helm/nico`,
    "--namespace",
    "nico-system",
    "--set",
    "metrics.prometheusRule.enabled=true,metrics.grafanaDashboard.enabled=true",
  ]);
  assert.equal(chartOut.code, 0, chartOut.stderr);
  const fromChart = docs(chartOut.stdout);
  const pick = (objs: Obj[], kind: string) => objs.find((o) => o.kind === kind && o.metadata.name.startsWith("nico"));
  const [kRule, cRule] = [pick(fromKustomize, "PrometheusRule"), pick(fromChart, "PrometheusRule")];
  assert.deepEqual(cRule?.spec, kRule?.spec);
  assert.deepEqual(kRule?.spec, await ruleFile());
  const [kDash, cDash] = [pick(fromKustomize, "ConfigMap"), pick(fromChart, "ConfigMap")];
  assert.equal(kDash?.metadata.name, "nico-dashboard");
  assert.deepEqual(JSON.parse(cDash!.data!["nico.json"]!), JSON.parse(kDash!.data!["nico.json"]!));
  assert.deepEqual(JSON.parse(kDash!.data!["nico.json"]!), await dashboard());
  for (const o of [kDash!, cDash!]) assert.equal(o.metadata.labels?.grafana_dashboard, "1");

  const crd = await cp.kubectl(["apply", "--server-side", "-f", "-"], { stdin: PROMETHEUS_RULE_CRD });
  assert.equal(crd.code, 0, crd.stderr);
  await crdsEstablished(cp.client, ["prometheusrules.monitoring.coreos.com"], { timeoutMs: 60_000 });
  const ns = await cp.namespace("monitoring");
  for (const objs of [fromKustomize, [cRule!, cDash!]]) {
    const text = objs.map((o) => JSON.stringify({ ...o, metadata: { ...o.metadata, namespace: ns } })).join("\n");
    const out = await cp.kubectl(["apply", "--server-side", "--dry-run=server", "-f", "-"], { stdin: text });
    assert.equal(out.code, 0, out.stderr);
    assert.match(out.stdout, /prometheusrule\.monitoring\.coreos\.com\/nico serverside-applied \(server dry run\)/);
    assert.match(out.stdout, /configmap\/nico-dashboard serverside-applied \(server dry run\)/);
  }
});
