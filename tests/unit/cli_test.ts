/** The pure parts of the user commands: flags, the rollout simulation, tables, kubeconfig merging, plugin name. */
import assert from "node:assert/strict";
import { parse } from "yaml";
import { parseArgs, UsageError } from "../../cli/flags.ts";
import { invokedAsKubectlPlugin } from "../../cli/commands.ts";
import { defaultKubeconfigPath, mergeKubeconfig } from "../../cli/kubeconfig.ts";
import { renderKubeconfig } from "../../core/render/kubeconfig.ts";
import { age, fit, table, visibleLength } from "../../cli/term.ts";
import { rolloutSteps } from "../../core/rollout/steps.ts";
import { newestAbnormal } from "../../cli/observe.ts";
import type { PlanNode } from "../../core/rollout/plan.ts";
import { normalise } from "../../testing/cli.ts";
import { QUIET } from "../rollout_input_kit.ts";

Deno.test("flags: long, short, inline, booleans and clear errors", () => {
  const specs = [{ name: "all-namespaces", short: "A", boolean: true, help: "" }, {
    name: "show-conditions",
    choices: ["all", "problems"],
    help: "",
  }];
  const p = parseArgs("x", ["c", "-n", "ns", "--kubeconfig=/k", "-A", "--show-conditions", "all"], specs);
  assert.deepEqual(p.positional, ["c"]);
  assert.deepEqual(p.flags, { namespace: "ns", kubeconfig: "/k", "all-namespaces": true, "show-conditions": "all" });
  assert.equal(parseArgs("x", ["-nfoo"], specs).flags.namespace, "foo");
  assert.throws(() => parseArgs("x", ["--nope"], specs), new UsageError("unknown flag --nope; see nico x --help"));
  assert.throws(() => parseArgs("x", ["-n"], specs), /flag --namespace needs a value/);
  assert.throws(() => parseArgs("x", ["--show-conditions", "some"], specs), /expected all or problems; got "some"/);
});

Deno.test("the kubectl plugin name is recognised from the exec path or argv[0]", () => {
  assert.equal(invokedAsKubectlPlugin("/usr/local/bin/kubectl-nico"), true);
  assert.equal(invokedAsKubectlPlugin("/usr/bin/deno", "kubectl-nico"), true);
  assert.equal(invokedAsKubectlPlugin("/usr/bin/deno", "/home/me/bin/kubectl-nico"), true);
  assert.equal(invokedAsKubectlPlugin("/usr/local/bin/nico", "nico"), false);
});

const node = (machine: string, plane: PlanNode["plane"], o: Partial<PlanNode> = {}): PlanNode => ({
  machine,
  plane,
  exists: true,
  upToDate: false,
  available: true,
  failed: false,
  ...o,
});

Deno.test("rollout steps: the planner pass after pass, workers first, one control-plane node at a time", () => {
  const steps = rolloutSteps({
    nodes: [
      node("cp-1", "controlPlane"),
      node("cp-2", "controlPlane"),
      node("w-1", "dataPlane", { upToDate: true, available: false, detail: "Converging" }),
      node("w-2", "dataPlane"),
    ],
    ...QUIET,
    departing: [],
    bootstrap: "cp-1",
    order: "WorkersFirst",
    maxUnavailable: 1,
    paused: false,
  });
  assert.equal(steps.stopped, undefined);
  assert.deepEqual(steps.unfinished, []);
  assert.deepEqual(
    steps.steps.map((s) => [s.actions.map((a) => `${a.action} ${a.machine}`).join(","), s.waitingFor.join(",")]),
    [["", "w-1"], ["update w-2", ""], ["update cp-2", ""], ["update cp-1", ""]],
  );
  assert.match(steps.steps[0]!.waiting!, /at most 1 worker\(s\) unavailable at once/);
});

Deno.test("rollout steps: a failed node stops the simulation and holds the rest", () => {
  const steps = rolloutSteps({
    nodes: [
      node("cp-1", "controlPlane"),
      node("w-1", "dataPlane", { upToDate: true, available: false, failed: true, detail: "ApplyFailed" }),
      node("w-2", "dataPlane"),
    ],
    ...QUIET,
    departing: [],
    bootstrap: "cp-1",
    order: "WorkersFirst",
    maxUnavailable: 1,
    paused: false,
  });
  assert.deepEqual(steps.stopped, { reason: "halted", machine: "w-1", detail: "ApplyFailed" });
  assert.deepEqual(steps.unfinished, ["w-2", "cp-1"]);
  assert.deepEqual(steps.steps, []);
});

Deno.test("tables fit the width; colour codes take no room; ages read like kubectl's", () => {
  const style = { color: true, width: 20 };
  const out = table(style, ["A", "B"], [["x", { text: "a long cell that does not fit", paint: "red" }]]);
  for (const line of out.split("\n")) assert.ok(visibleLength(line) <= 20, line);
  assert.match(out, /…/);
  assert.equal(visibleLength(fit("\x1b[31mabcdef\x1b[0m", 4)), 4);
  const now = new Date("2026-01-02T00:00:00Z");
  assert.deepEqual(
    ["2026-01-01T23:59:15Z", "2026-01-01T23:50:00Z", "2026-01-01T20:00:00Z", "2025-12-20T00:00:00Z"].map((t) =>
      age(t, now)
    ),
    ["45s", "10m", "4h", "13d"],
  );
  assert.equal(
    normalise("NAME   AGE   ROLLOUT\nprod   45s   up to date\nns-1   7s    x", { "ns-1": "ns-x" }),
    "NAME   AGE   ROLLOUT\nprod   <age> up to date\nns-x   <age> x",
  );
});

Deno.test("kubeconfig merge replaces entries of the same name and keeps the current context", () => {
  const mine = "apiVersion: v1\nkind: Config\ncurrent-context: home\n" +
    "clusters: [{name: home, cluster: {server: https://127.0.0.1:1}}, {name: prod, cluster: {server: old}}]\n" +
    "users: [{name: me, user: {}}]\ncontexts: [{name: home, context: {cluster: home, user: me}}]\n";
  const theirs = renderKubeconfig("prod", "https://127.0.0.2:6443", "CA", { certPem: "CERT", keyPem: "KEY" });
  const merged = parse(mergeKubeconfig(mine, theirs));
  assert.equal(merged["current-context"], "home");
  assert.deepEqual(merged.clusters.map((c: { name: string }) => c.name), ["home", "prod"]);
  assert.equal(merged.clusters[1].cluster.server, "https://127.0.0.2:6443");
  assert.deepEqual(merged.contexts.map((c: { name: string }) => c.name), ["home", "prod"]);
  assert.equal(parse(mergeKubeconfig("", theirs))["current-context"], "prod");
  assert.throws(() => mergeKubeconfig(mine, "clusters: []"), /names no server/, "only a kubeconfig NICO can read");
  assert.equal(defaultKubeconfigPath({ KUBECONFIG: ":/a:/b", HOME: "/h" }), "/a");
  assert.equal(defaultKubeconfigPath({ HOME: "/h" }), "/h/.kube/config");
});

Deno.test("docs/cli.md quotes every CLI golden file as it is", async () => {
  const doc = await Deno.readTextFile(new URL("../../docs/cli.md", import.meta.url));
  const dir = new URL("../golden/", import.meta.url);
  let n = 0;
  for await (const e of Deno.readDir(dir)) {
    if (!e.name.startsWith("cli-")) continue;
    n++;
    const text = (await Deno.readTextFile(new URL(e.name, dir))).trimEnd();
    assert.ok(doc.includes(`\n${text}\n\`\`\``), `docs/cli.md does not show tests/golden/${e.name} as it is`);
  }
  assert.ok(n >= 9, `only ${n} CLI golden files`);
});

Deno.test("the newest condition that is not fine: by time, then the specific one (Stalled) on a tie", () => {
  const t = (s: number) => `2026-01-01T00:00:0${s}Z`;
  const ready = { type: "Ready", status: "False", reason: "ApplyFailed", lastTransitionTime: t(1) };
  const stalled = { type: "Stalled", status: "True", reason: "ApplyFailed", lastTransitionTime: t(1) };
  const fine = { type: "Reconciling", status: "False", lastTransitionTime: t(5) };
  assert.equal(newestAbnormal([ready, stalled, fine])?.type, "Stalled");
  assert.equal(newestAbnormal([{ ...ready, lastTransitionTime: t(2) }, stalled])?.type, "Ready");
  assert.equal(newestAbnormal([fine, { type: "Ready", status: "True" }]), undefined);
});
