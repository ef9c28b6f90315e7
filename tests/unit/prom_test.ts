/**
 * lib/prom.ts writes Prometheus' text format: HELP and TYPE lines, label values escaped, a counter or gauge without
 * labels at 0 before any sample, histograms with cumulative buckets, +Inf, _sum and _count; and refuses what the
 * format cannot say (a counter going down, a label the metric does not declare, one name twice).
 * tests/integration/monitoring_scrape_test.ts has `promtool check metrics` read NICO's whole answer.
 */
import assert from "node:assert/strict";
import { Counter, formatValue, Gauge, Histogram, Registry, TEXT_FORMAT } from "../../lib/prom.ts";

Deno.test("the text format, metric by metric, in the order they were made", async () => {
  const r = new Registry();
  const c = new Counter({ name: "a_total", help: "As.\nSecond line \\ here.", labelNames: ["k", "v"], registers: [r] });
  const g = new Gauge({ name: "b", help: "B.", registers: [r] });
  const h = new Histogram({ name: "c_seconds", help: "C.", labelNames: ["path"], buckets: [1, 0.1], registers: [r] });
  let scraped = 0;
  new Gauge({
    name: "d",
    help: "D.",
    labelNames: ["kind"],
    registers: [r],
    collect() {
      this.set({ kind: "scrape" }, ++scraped);
    },
  });
  c.inc({ k: "x", v: 'say "hi"\n\\' });
  c.inc({ k: "x", v: 'say "hi"\n\\' }, 2);
  c.inc({ k: "y" }, 0);
  h.observe({ path: "/p" }, 0.05);
  h.observe({ path: "/p" }, 0.5);
  h.observe({ path: "/p" }, 5);
  assert.equal(
    await r.metrics(),
    [
      "# HELP a_total As.\\nSecond line \\\\ here.",
      "# TYPE a_total counter",
      'a_total{k="x",v="say \\"hi\\"\\n\\\\"} 3',
      'a_total{k="y"} 0',
      "",
      "# HELP b B.",
      "# TYPE b gauge",
      "b 0",
      "",
      "# HELP c_seconds C.",
      "# TYPE c_seconds histogram",
      'c_seconds_bucket{path="/p",le="0.1"} 1',
      'c_seconds_bucket{path="/p",le="1"} 2',
      'c_seconds_bucket{path="/p",le="+Inf"} 3',
      'c_seconds_sum{path="/p"} 5.55',
      'c_seconds_count{path="/p"} 3',
      "",
      "# HELP d D.",
      "# TYPE d gauge",
      'd{kind="scrape"} 1',
      "",
    ].join("\n"),
  );
  g.set(-2.5);
  assert.match(await r.metrics(), /^b -2\.5$/m);
  assert.match(await r.metrics(), /^d\{kind="scrape"\} 3$/m, "collect runs at each write");
  assert.equal(r.contentType, TEXT_FORMAT);
  assert.deepEqual(r.names(), ["a_total", "b", "c_seconds", "d"]);
});

Deno.test("gauges add and forget; timers observe seconds", async () => {
  const r = new Registry();
  const g = new Gauge({ name: "g", help: "G.", labelNames: ["phase"], registers: [r] });
  g.set({ phase: "Ready" }, 0);
  g.inc({ phase: "Ready" });
  g.inc({ phase: "Ready" }, 2);
  assert.match(await r.metrics(), /^g\{phase="Ready"\} 3$/m);
  g.reset();
  assert.equal(await r.metrics(), "# HELP g G.\n# TYPE g gauge\n", "a labelled metric without series: no sample");
  const h = new Histogram({ name: "t", help: "T.", labelNames: ["path", "code"], buckets: [60], registers: [r] });
  const end = h.startTimer({ path: "/x" });
  const seconds = end({ code: 200 });
  assert.ok(seconds >= 0 && seconds < 60, String(seconds));
  assert.match(await r.metrics(), /^t_count\{path="\/x",code="200"\} 1$/m);
});

Deno.test("what the format cannot say is refused", () => {
  const r = new Registry();
  const c = new Counter({ name: "x_total", help: "X.", labelNames: ["a"], registers: [r] });
  assert.throws(() => c.inc({ a: "1" }, -1), /cannot go down/);
  assert.throws(() => c.inc({ b: "1" } as never), /has no label b/);
  assert.throws(() => new Gauge({ name: "x_total", help: "again", registers: [r] }), /registered twice/);
  assert.deepEqual([NaN, Infinity, -Infinity, 0.25, 1e21].map(formatValue), ["NaN", "+Inf", "-Inf", "0.25", "1e+21"]);
});
