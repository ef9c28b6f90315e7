/**
 * NICO's alerts and dashboard (deploy/monitoring/) against NICO itself, without Prometheus: every metric they read
 * is one NICO declares, every condition type and reason they name is in the registry (crds/conditions/), every
 * alert is documented and has a promtool test that fires it, and the dashboard holds together. promtool parses and
 * runs them in tests/integration/monitoring_rules_test.ts; a running NICO is scraped in monitoring_scrape_test.ts.
 */
import assert from "node:assert/strict";
import { parse } from "yaml";
import { CONDITIONS, reasonSpec, typeSpec } from "../../crds/conditions/mod.ts";
import { Metrics } from "../../lib/metrics.ts";
import { alertRules, dashboard, dashboardQueries, metricsRead, VARIABLE_VALUES } from "../../testing/monitoring.ts";

const ROOT = new URL("../../", import.meta.url);
const declared = new Set(new Metrics().registry.names());

Deno.test("every metric the alerts and the dashboard read is one NICO serves", async () => {
  const exprs = [
    ...(await alertRules()).map((r) => ({ where: r.alert, expr: r.expr })),
    ...dashboardQueries(await dashboard()).map((q) => ({ where: `${q.panel} ${q.refId}`, expr: q.expr })),
  ];
  const unknown = exprs.flatMap((e) =>
    metricsRead(e.expr).filter((m) => !declared.has(m)).map((m) => `${e.where}: ${m}`)
  );
  assert.deepEqual(unknown, []);
  const read = new Set(exprs.flatMap((e) => metricsRead(e.expr)));
  for (const m of ["nico_cluster_condition", "nico_cluster_kubeconfig_expiry_timestamp_seconds", "nico_nodes"]) {
    assert.ok(read.has(m), `nothing reads ${m}`);
  }
});

/** The matchers of every `nico_cluster_condition{…}` selector of `expr`. */
function conditionSelectors(expr: string): Map<string, { op: string; value: string }>[] {
  return [...expr.matchAll(/nico_cluster_condition\{([^}]*)\}/g)].map((m) =>
    new Map([...m[1]!.matchAll(/(\w+)\s*(=~|!~|!=|=)\s*"([^"]*)"/g)].map((x) => [x[1]!, { op: x[2]!, value: x[3]! }]))
  );
}

Deno.test("every condition type, status and reason an alert or a query names is in the registry", async () => {
  const exprs = [...(await alertRules()).map((r) => r.expr), ...dashboardQueries(await dashboard()).map((q) => q.expr)];
  const wrong: string[] = [];
  for (const sel of exprs.flatMap(conditionSelectors)) {
    const type = sel.get("type");
    assert.ok(type, "every condition selector names its type");
    const types = type.op === "=" ? [type.value] : type.value.split("|");
    for (const t of types) if (!typeSpec(t)) wrong.push(`type ${t}`);
    const reason = sel.get("reason");
    for (const r of reason?.value.split("|") ?? []) {
      const known = types.some((t) => Object.hasOwn(CONDITIONS[t as keyof typeof CONDITIONS]?.reasons ?? {}, r));
      if (!known) wrong.push(`reason ${r} of ${types.join("|")}`);
    }
    const status = sel.get("status");
    for (const s of status?.value.split("|") ?? []) if (!["True", "False", "Unknown"].includes(s)) wrong.push(s);
  }
  assert.deepEqual(wrong, []);
});

Deno.test("each alert that names reasons of a status names reasons written with that status", async () => {
  for (const rule of await alertRules()) {
    for (const sel of conditionSelectors(rule.expr)) {
      const [type, status, reason] = ["type", "status", "reason"].map((k) => sel.get(k));
      if (!type || type.op !== "=" || status?.op !== "=" || !reason || reason.op.startsWith("!")) continue;
      for (const r of reason.value.split("|")) {
        assert.ok(reasonSpec(type.value, status.value, r), `${rule.alert}: ${type.value}=${status.value} ${r}`);
      }
    }
  }
});

Deno.test("every alert has a severity, a summary, a description and a for", async () => {
  for (const r of await alertRules()) {
    assert.ok(["warning", "critical"].includes(r.labels?.severity ?? ""), `${r.alert}: severity`);
    assert.ok(r.annotations?.summary && r.annotations.description, `${r.alert}: annotations`);
    assert.match(r.for ?? "", /^\d+[mh]$/, `${r.alert}: for`);
  }
});

interface PromtoolTests {
  rule_files: string[];
  tests: { name: string; alert_rule_test?: { alertname: string; exp_alerts: unknown[] }[] }[];
}

Deno.test("every alert has a promtool test where it fires and one where it does not, and no test names another", async () => {
  const file = parse(await Deno.readTextFile(new URL("tests/monitoring/alerts_test.yaml", ROOT))) as PromtoolTests;
  const checks = file.tests.flatMap((t) => t.alert_rule_test ?? []);
  const alerts = (await alertRules()).map((r) => r.alert);
  for (const a of alerts) {
    assert.ok(checks.some((c) => c.alertname === a && c.exp_alerts.length > 0), `${a}: no case where it fires`);
    assert.ok(checks.some((c) => c.alertname === a && c.exp_alerts.length === 0), `${a}: no case where it is quiet`);
  }
  assert.deepEqual(checks.map((c) => c.alertname).filter((a) => !alerts.includes(a)), []);
  assert.deepEqual(new Set(alerts).size, alerts.length, "alert names are unique");
});

Deno.test("docs/operations.md lists every alert", async () => {
  const ops = await Deno.readTextFile(new URL("docs/operations.md", ROOT));
  for (const r of await alertRules()) assert.ok(ops.includes(`\`${r.alert}\``), r.alert);
});

Deno.test("the dashboard: unique panel ids, the datasource variable, known variables only, on a 24-column grid", async () => {
  const d = await dashboard();
  const panels = d.panels.flatMap((p) => [p, ...p.panels ?? []]);
  assert.equal(new Set(panels.map((p) => p.id)).size, panels.length, "panel ids are unique");
  const variables = new Set(d.templating.list.map((v) => v.name));
  assert.ok(variables.has("datasource") && variables.has("namespace"));
  for (const p of panels) {
    assert.ok(p.gridPos.x >= 0 && p.gridPos.x + p.gridPos.w <= 24, `${p.title}: gridPos`);
    if (p.type === "row") continue;
    assert.deepEqual(p.datasource, { type: "prometheus", uid: "${datasource}" }, p.title);
    assert.ok(p.targets?.length, `${p.title}: no query`);
    for (const t of p.targets ?? []) {
      assert.deepEqual(t.datasource, p.datasource, `${p.title} ${t.refId}`);
      for (const [, name] of t.expr.matchAll(/\$\{?(\w+)\}?/g)) {
        assert.ok(variables.has(name!) || name === "__rate_interval", `${p.title}: $${name} is no variable`);
        assert.ok(name! in VARIABLE_VALUES, `${p.title}: $${name} has no value to check the query with`);
      }
    }
  }
  assert.equal(new Set(panels.flatMap((p) => p.targets ?? []).map((t) => t.expr)).size > 10, true);
});

Deno.test("the chart's files are links to deploy/monitoring/: one source for both installs", async () => {
  for (const f of ["prometheusrule.yaml", "dashboard.json"]) {
    const link = await Deno.readLink(new URL(`deploy/helm/nico/files/${f}`, ROOT));
    assert.equal(link, `../../../monitoring/${f}`);
  }
});

Deno.test("a latency alert's threshold lies below the histogram's last bound (else its quantile never passes it)", async () => {
  const metrics = new Metrics();
  metrics.webhookLatency.observe({ path: "/validate-kubernetescluster" }, 0.001);
  const bounds = [
    ...(await metrics.text()).matchAll(/nico_webhook_request_duration_seconds_bucket\{[^}]*le="([^"]+)"/g),
  ]
    .map((m) => Number(m[1])).filter(Number.isFinite);
  const slow = (await alertRules()).find((r) => r.alert === "NicoWebhookSlow")!;
  const threshold = Number(/>\s*([\d.]+)\s*$/.exec(slow.expr.trim())?.[1]);
  assert.ok(threshold > 0, slow.expr);
  assert.ok(Math.max(...bounds) > threshold, `buckets ${bounds.join(", ")} end at or below ${threshold} s`);
});
