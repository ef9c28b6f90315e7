/**
 * NICO's monitoring files as the tests read them: the alerts of deploy/monitoring/prometheusrule.yaml, the queries
 * of deploy/monitoring/dashboard.json (with the dashboard's variables filled in), and the metric names a PromQL
 * expression reads.
 *
 * @module
 */
import { parse } from "yaml";

const MONITORING = new URL("../deploy/monitoring/", import.meta.url);

/** One rule of a rule group, as Prometheus reads it. */
export interface AlertRule {
  alert?: string;
  record?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

/** A PrometheusRule's spec: a Prometheus rule file as it stands. */
export interface RuleFile {
  groups: { name: string; rules: AlertRule[] }[];
}

/** The spec of NICO's PrometheusRule (deploy/monitoring/prometheusrule.yaml). */
export async function ruleFile(): Promise<RuleFile> {
  const doc = parse(await Deno.readTextFile(new URL("prometheusrule.yaml", MONITORING))) as { spec: RuleFile };
  return doc.spec;
}

/** Every alerting rule of NICO's PrometheusRule. */
export async function alertRules(): Promise<(AlertRule & { alert: string })[]> {
  return (await ruleFile()).groups.flatMap((g) => g.rules).filter((r): r is AlertRule & { alert: string } =>
    r.alert !== undefined
  );
}

/** A Grafana panel of the dashboard, as far as the tests read it. */
export interface Panel {
  id: number;
  type: string;
  title: string;
  datasource?: { type: string; uid: string };
  gridPos: { x: number; y: number; w: number; h: number };
  targets?: { expr: string; refId: string; datasource?: { type: string; uid: string } }[];
  panels?: Panel[];
}

/** The dashboard JSON (deploy/monitoring/dashboard.json). */
export interface Dashboard {
  title: string;
  uid: string;
  schemaVersion: number;
  templating: { list: { name: string; type: string; allValue?: string }[] };
  panels: Panel[];
}

/** NICO's Grafana dashboard. */
export async function dashboard(): Promise<Dashboard> {
  return JSON.parse(await Deno.readTextFile(new URL("dashboard.json", MONITORING)));
}

/** What a dashboard variable stands for when its queries are checked: every namespace, a 5-minute rate window. */
export const VARIABLE_VALUES: Readonly<Record<string, string>> = { namespace: ".*", __rate_interval: "5m" };

/**
 * Every query of `d`, by panel title and refId, with its variables (`$name`, `${name}`) replaced by
 * {@link VARIABLE_VALUES}; an unknown variable is left as it is, so the expression no longer parses.
 */
export function dashboardQueries(d: Dashboard): { panel: string; refId: string; expr: string }[] {
  const fill = (expr: string) =>
    expr.replace(/\$\{?(\w+)\}?/g, (whole, name: string) => VARIABLE_VALUES[name] ?? whole);
  const all = d.panels.flatMap((p) => [p, ...p.panels ?? []]);
  return all.flatMap((p) => (p.targets ?? []).map((t) => ({ panel: p.title, refId: t.refId, expr: fill(t.expr) })));
}

/** The prefixes of the metrics NICO serves: its own, and controller-runtime's names it keeps. */
const NICO_METRIC = /\b(?:nico|controller_runtime|workqueue|leader_election)_[a-zA-Z0-9_:]*/g;

/**
 * The metric names `expr` reads among NICO's (quoted strings left out), a histogram's series
 * (`_bucket`, `_sum`, `_count`) named by the histogram.
 */
export function metricsRead(expr: string): string[] {
  const unquoted = expr.replace(/"(?:[^"\\]|\\.)*"/g, '""');
  const names = [...unquoted.matchAll(NICO_METRIC)].map((m) => m[0].replace(/_(bucket|sum|count)$/, ""));
  return [...new Set(names)].sort();
}

/** A rule file with one recording rule per expression: `promtool check rules` then parses each of them. */
export function recordingRulesOf(exprs: { name: string; expr: string }[]): RuleFile {
  return {
    groups: [{
      name: "parsed",
      rules: exprs.map((e, i) => ({ record: `nico_check:query_${i}`, expr: e.expr, labels: { query: e.name } })),
    }],
  };
}
