import assert from "node:assert/strict";
import { selectMachines, type UnavailableReason } from "../../core/machines/selection.ts";
import type { KubernetesClusterSpecInput } from "../../crds/kubernetescluster.ts";
import type { Machine, NixosConfiguration } from "../../core/contract/nio.ts";
import { REMEDIATED_ANNOTATION } from "../../core/contract/labels.ts";
import { cluster, foreignConfig, machine, ownedConfig } from "../../testing/objects.ts";

interface Case {
  name: string;
  spec: KubernetesClusterSpecInput;
  machines: Machine[];
  configs?: NixosConfiguration[];
  bootstrap?: string;
  controlPlane: string[];
  workers: string[];
  problems?: [string, UnavailableReason, boolean][];
  shortfall?: [number, number];
}

const cp = (n: string, labels: Record<string, string> = { role: "cp" }, o = {}) => machine(n, { labels, ...o });
const wk = (n: string, o = {}) => machine(n, { labels: { role: "worker" }, ...o });
const bySelector = (cpCount: number, wCount?: number): KubernetesClusterSpecInput => ({
  controlPlane: { machineSelector: { matchLabels: { role: "cp" } }, count: cpCount },
  dataPlane: {
    machineSelector: { matchLabels: { role: "worker" } },
    ...(wCount === undefined ? {} : { count: wCount }),
  },
});

const cases: Case[] = [
  {
    name: "explicit lists take precedence over selector and count",
    spec: { controlPlane: { machines: ["b", "a"], machineSelector: { matchLabels: { role: "cp" } }, count: 3 } },
    machines: [cp("a"), cp("b"), cp("c")],
    controlPlane: ["b", "a"],
    workers: [],
  },
  {
    name: "selector + count fills in name order",
    spec: bySelector(3, 2),
    machines: [cp("cp-3"), cp("cp-1"), cp("cp-4"), cp("cp-2"), wk("w-2"), wk("w-1"), wk("w-3")],
    controlPlane: ["cp-1", "cp-2", "cp-3"],
    workers: ["w-1", "w-2"],
  },
  {
    name: "worker selector without count takes every eligible match",
    spec: bySelector(1),
    machines: [cp("cp-1"), wk("w-1"), wk("w-2"), wk("w-3", { discoverable: false })],
    controlPlane: ["cp-1"],
    workers: ["w-1", "w-2"],
  },
  {
    name: "sticky: a lower-sorting newcomer evicts nobody",
    spec: bySelector(2),
    machines: [cp("cp-0"), cp("cp-5"), cp("cp-7")],
    configs: [ownedConfig("prod", "cp-5", "control-plane"), ownedConfig("prod", "cp-7", "control-plane")],
    controlPlane: ["cp-5", "cp-7"],
    workers: [],
  },
  {
    name: "skips Machines that are claimed, targeted, configured elsewhere or unreachable",
    spec: bySelector(2),
    machines: [
      cp("a", undefined, { claim: "other" }),
      cp("b"),
      cp("c", undefined, { applied: "someone-else" }),
      cp("d", undefined, { discoverable: false }),
      cp("e"),
      cp("f"),
    ],
    configs: [foreignConfig("manual", "b")],
    controlPlane: ["e", "f"],
    workers: [],
  },
  {
    name: "underprovisioned: uses what there is and counts the shortfall",
    spec: bySelector(3, 2),
    machines: [cp("cp-1"), cp("cp-2", undefined, { discoverable: false }), wk("w-1")],
    controlPlane: ["cp-1"],
    workers: ["w-1"],
    shortfall: [2, 1],
  },
  {
    name: "explicit Machine missing or unreachable is named with its reason",
    spec: { controlPlane: { machines: ["cp-1", "ghost", "cp-2"] } },
    machines: [cp("cp-1"), cp("cp-2", undefined, { discoverable: false })],
    controlPlane: ["cp-1"],
    workers: [],
    problems: [["ghost", "NotFound", false], ["cp-2", "NotDiscoverable", false]],
    shortfall: [2, 0],
  },
  {
    name: "an unreachable member stays a member and is reported",
    spec: { controlPlane: { machines: ["cp-1", "cp-2"] } },
    machines: [cp("cp-1"), cp("cp-2", undefined, { discoverable: false, applied: "prod-cp-2" })],
    configs: [ownedConfig("prod", "cp-1", "control-plane"), ownedConfig("prod", "cp-2", "control-plane")],
    controlPlane: ["cp-1", "cp-2"],
    workers: [],
    problems: [["cp-2", "NotDiscoverable", true]],
  },
  {
    name: "a member whose Machine was deleted leaves",
    spec: bySelector(2),
    machines: [cp("cp-2"), cp("cp-3")],
    configs: [ownedConfig("prod", "cp-1", "control-plane"), ownedConfig("prod", "cp-2", "control-plane")],
    controlPlane: ["cp-2", "cp-3"],
    workers: [],
  },
  {
    name: "a Machine is in one plane only",
    spec: {
      controlPlane: { machineSelector: { matchLabels: { pool: "x" } }, count: 1 },
      dataPlane: { machineSelector: { matchLabels: { pool: "x" } }, count: 5 },
    },
    machines: [cp("m-1", { pool: "x" }), cp("m-2", { pool: "x" }), cp("m-3", { pool: "x" })],
    controlPlane: ["m-1"],
    workers: ["m-2", "m-3"],
    shortfall: [0, 3],
  },
  {
    name: "explicit worker already in the control plane is refused",
    spec: {
      controlPlane: { machineSelector: { matchLabels: { role: "cp" } }, count: 1 },
      dataPlane: { machines: ["cp-1", "w-1"] },
    },
    machines: [cp("cp-1"), wk("w-1")],
    controlPlane: ["cp-1"],
    workers: ["w-1"],
    problems: [["cp-1", "InOtherPlane", false]],
  },
  {
    name: "scale down keeps the bootstrap node and the lowest names",
    spec: bySelector(1),
    machines: [cp("cp-1"), cp("cp-2"), cp("cp-3")],
    configs: ["cp-1", "cp-2", "cp-3"].map((n) => ownedConfig("prod", n, "control-plane")),
    bootstrap: "cp-3",
    controlPlane: ["cp-3"],
    workers: [],
  },
  {
    name: "configurations of a previous cluster with the same name are not ours",
    spec: bySelector(1),
    machines: [cp("cp-1"), cp("cp-2")],
    configs: [ownedConfig("prod", "cp-1", "control-plane", "old-uid")],
    controlPlane: ["cp-2"],
    workers: [],
  },
  {
    name: "our own applied configuration does not count as someone else's",
    spec: { controlPlane: { machines: ["cp-1"] } },
    machines: [cp("cp-1", undefined, { applied: "prod-cp-1", claim: "prod" })],
    controlPlane: ["cp-1"],
    workers: [],
  },
];

cases.push({
  name: "a Machine whose host is no host is not selected, and the reason says so",
  spec: bySelector(1),
  machines: [cp("cp-1", undefined, { host: "not a host" }), cp("cp-2")],
  controlPlane: ["cp-2"],
  workers: [],
}, {
  name: "an explicit Machine whose host is no host is named",
  spec: { controlPlane: { machines: ["cp-1"] } },
  machines: [cp("cp-1", undefined, { host: "not a host" })],
  controlPlane: [],
  workers: [],
  problems: [["cp-1", "InvalidHost", false]],
});

Deno.test("selectMachines", async (t) => {
  for (const c of cases) {
    await t.step(c.name, () => {
      const s = selectMachines({
        cluster: cluster(c.spec),
        machines: c.machines,
        configurations: c.configs ?? [],
        bootstrap: c.bootstrap,
      });
      assert.deepEqual(s.controlPlane.members, c.controlPlane, "control plane");
      assert.deepEqual(s.dataPlane.members, c.workers, "workers");
      if (c.problems) assert.deepEqual(s.problems.map((p) => [p.machine, p.reason, p.kept]), c.problems);
      if (c.shortfall) assert.deepEqual([s.controlPlane.shortfall, s.dataPlane.shortfall], c.shortfall);
    });
  }
});

/** A Machine out of service: NICO's mark, or a person's words. */
const marked = (m: Machine, text = "prod/worker at 2026-01-01T00:00:00Z: NodeNotReady: Node down"): Machine => ({
  ...m,
  metadata: { ...m.metadata, annotations: { [REMEDIATED_ANNOTATION]: text } },
});

const ownedWorker = (w: string) => ownedConfig("prod", w, "worker");
const listed = (machines: string[], spares?: string[]): KubernetesClusterSpecInput => ({
  controlPlane: { machines: ["cp-1"] },
  dataPlane: { machines, ...(spares ? { spares } : {}) },
});

/** Machines out of service, in selector and explicit planes, with and without spares. */
const OUT_OF_SERVICE: Case[] = [
  {
    name: "selector: a marked member leaves and the next free Machine fills its place",
    spec: bySelector(1, 2),
    machines: [cp("cp-1"), marked(wk("w-1", { claim: "prod" })), wk("w-2", { claim: "prod" }), wk("w-3")],
    configs: [ownedWorker("w-1"), ownedWorker("w-2")],
    controlPlane: ["cp-1"],
    workers: ["w-2", "w-3"],
    problems: [["w-1", "OutOfService", false]],
  },
  {
    name: "selector: a Machine a person marked (any words) is not picked",
    spec: bySelector(1, 1),
    machines: [cp("cp-1"), marked(wk("w-1"), "dead PSU"), wk("w-2")],
    controlPlane: ["cp-1"],
    workers: ["w-2"],
  },
  {
    name: "selector: short because of marked Machines, which the problems name",
    spec: bySelector(1, 2),
    machines: [cp("cp-1"), marked(wk("w-1", { claim: "prod" })), wk("w-2", { claim: "prod" })],
    configs: [ownedWorker("w-2")],
    controlPlane: ["cp-1"],
    workers: ["w-2"],
    problems: [["w-1", "OutOfService", false]],
    shortfall: [0, 1],
  },
  {
    name: "explicit: a marked member stays while no spare is free",
    spec: listed(["w-1", "w-2"]),
    machines: [cp("cp-1"), marked(wk("w-1", { claim: "prod" })), wk("w-2", { claim: "prod" })],
    configs: [ownedWorker("w-1"), ownedWorker("w-2")],
    controlPlane: ["cp-1"],
    workers: ["w-1", "w-2"],
    problems: [["w-1", "OutOfService", true]],
  },
  {
    name: "explicit: a spare takes a marked member's place",
    spec: listed(["w-1", "w-2"], ["s-1", "s-2"]),
    machines: [cp("cp-1"), marked(wk("w-1", { claim: "prod" })), wk("w-2", { claim: "prod" }), wk("s-1"), wk("s-2")],
    configs: [ownedWorker("w-1"), ownedWorker("w-2")],
    controlPlane: ["cp-1"],
    workers: ["w-2", "s-1"],
    problems: [["w-1", "OutOfService", false]],
  },
  {
    name: "explicit: spares in order, one that is not free skipped; a serving spare goes first",
    spec: listed(["w-1", "w-2", "w-3"], ["s-1", "s-2", "s-3"]),
    machines: [cp("cp-1"), wk("w-2"), wk("s-1", { discoverable: false }), wk("s-2"), wk("s-3", { claim: "prod" })],
    configs: [ownedWorker("s-3")],
    controlPlane: ["cp-1"],
    workers: ["w-2", "s-3", "s-2"],
    problems: [["w-1", "NotFound", false], ["w-3", "NotFound", false]],
  },
  {
    name: "explicit: a listed Machine that may serve again takes its place back from the spare",
    spec: listed(["w-1", "w-2"], ["s-1"]),
    machines: [cp("cp-1"), wk("w-1"), wk("w-2", { claim: "prod" }), wk("s-1", { claim: "prod" })],
    configs: [ownedWorker("w-2"), ownedWorker("s-1")],
    controlPlane: ["cp-1"],
    workers: ["w-1", "w-2"],
  },
  {
    name: "explicit: a spare listed in a plane's machines is no spare",
    spec: { controlPlane: { machines: ["cp-1"], spares: ["w-3"] }, dataPlane: { machines: ["w-3"] } },
    machines: [marked(cp("cp-1", { role: "cp" }, { claim: "prod" })), wk("w-3")],
    configs: [ownedConfig("prod", "cp-1", "control-plane")],
    controlPlane: ["cp-1"],
    workers: ["w-3"],
    problems: [["cp-1", "OutOfService", true]],
  },
];

Deno.test("a Machine out of service is never picked, leaves a selector plane, and a listed one leaves only for a spare", async (t) => {
  const table = OUT_OF_SERVICE;
  for (const c of table) {
    await t.step(c.name, () => {
      const s = selectMachines({ cluster: cluster(c.spec), machines: c.machines, configurations: c.configs ?? [] });
      assert.deepEqual(s.controlPlane.members, c.controlPlane, "control plane");
      assert.deepEqual(s.dataPlane.members, c.workers, "workers");
      assert.deepEqual(s.problems.map((p) => [p.machine, p.reason, p.kept]), c.problems ?? []);
      if (c.shortfall) assert.deepEqual([s.controlPlane.shortfall, s.dataPlane.shortfall], c.shortfall);
    });
  }
});

Deno.test("selection is deterministic whatever the input order", () => {
  const machines = ["m-4", "m-2", "m-9", "m-1", "m-3"].map((n) => cp(n));
  const spec = bySelector(3);
  const a = selectMachines({ cluster: cluster(spec), machines, configurations: [] });
  const b = selectMachines({ cluster: cluster(spec), machines: [...machines].reverse(), configurations: [] });
  assert.deepEqual(a, b);
  assert.deepEqual(a.controlPlane.members, ["m-1", "m-2", "m-3"]);
});
