/**
 * The version chain (core/versions/chain.ts): by table, and by simulating a
 * whole upgrade (each pass, every node asked for a version reports it) with
 * the skew policy checked after every node's switch.
 */
import assert from "node:assert/strict";
import { type ChainNode, planVersions } from "../../core/versions/chain.ts";
import { type NodeVersions, skewViolations } from "../../core/versions/policy.ts";
import { formatVersion, type KubeVersion } from "../../core/versions/version.ts";

const at = (minor: number, patch = 2): KubeVersion => ({ minor, patch });
const cp = (machine: string, reported?: number, rendered = reported): ChainNode => ({
  machine,
  plane: "controlPlane",
  ...(rendered !== undefined ? { rendered: { minor: rendered } } : {}),
  ...(reported !== undefined ? { reported: at(reported) } : {}),
});
const w = (machine: string, reported?: number, rendered = reported): ChainNode => ({
  ...cp(machine, reported, rendered),
  plane: "dataPlane",
});
const asked = (p: ReturnType<typeof planVersions>) =>
  Object.fromEntries([...p.desired].map(([m, x]) => [m, formatVersion(x)]));

Deno.test("planVersions: who is asked for what now", async (t) => {
  const cases: [string, KubeVersion | undefined, ChainNode[], Record<string, string>, string[]][] = [
    ["no spec.version: nobody", undefined, [cp("cp-1", 30), w("w-1", 30)], {}, []],
    ["a new cluster: everyone the target at once", { minor: 33 }, [cp("cp-1"), cp("cp-2"), w("w-1")], {
      "cp-1": "1.33",
      "cp-2": "1.33",
      "w-1": "1.33",
    }, ["1.33"]],
    ["one minor up: the control plane first", { minor: 31 }, [cp("cp-1", 30), cp("cp-2", 30), w("w-1", 30)], {
      "cp-1": "1.31",
      "cp-2": "1.31",
    }, ["1.31"]],
    ["three minors up: the control plane's next minor", { minor: 33 }, [cp("cp-1", 30), w("w-1", 30)], {
      "cp-1": "1.31",
    }, ["1.31", "1.32", "1.33"]],
    [
      "mid-step: one control-plane node there, the step holds",
      { minor: 33 },
      [
        cp("cp-1", 31, 31),
        cp("cp-2", 30, 31),
        w("w-1", 30),
      ],
      { "cp-1": "1.31", "cp-2": "1.31" },
      ["1.31", "1.32", "1.33"],
    ],
    [
      "the control plane reports the target: the workers in one step",
      { minor: 33, patch: 1 },
      [
        { machine: "cp-1", plane: "controlPlane", rendered: { minor: 33, patch: 1 }, reported: at(33, 1) },
        w("w-1", 30),
        w("w-2", 31),
      ],
      { "cp-1": "1.33.1", "w-1": "1.33.1", "w-2": "1.33.1" },
      [],
    ],
    [
      "a patch: the control plane first, a chain of one",
      { minor: 31, patch: 5 },
      [
        { machine: "cp-1", plane: "controlPlane", rendered: { minor: 31, patch: 4 }, reported: at(31, 4) },
        w("w-1", 31),
      ],
      { "cp-1": "1.31.5" },
      ["1.31.5"],
    ],
    [
      "the kubelet window: workers catch up before the control plane's next minor",
      { minor: 35 },
      [
        cp("cp-1", 33),
        w("w-1", 30),
        w("w-2", 33),
      ],
      { "cp-1": "1.33", "w-1": "1.33" },
      ["1.34", "1.35"],
    ],
    ["a new worker mid-chain joins at the control plane's minor", { minor: 33 }, [cp("cp-1", 31), w("w-9")], {
      "cp-1": "1.32",
      "w-9": "1.31",
    }, ["1.32", "1.33"]],
    ["a node that reports nothing yet counts as what it asks for", { minor: 33 }, [cp("cp-1", undefined, 31)], {
      "cp-1": "1.32",
    }, ["1.32", "1.33"]],
    ["a node already past the step is never asked to go down", { minor: 33 }, [cp("cp-1", 32), cp("cp-2", 30)], {
      "cp-2": "1.31",
    }, ["1.31", "1.32", "1.33"]],
  ];
  for (const [name, target, nodes, want, chain] of cases) {
    await t.step(name, () => {
      const p = planVersions(target, nodes);
      assert.deepEqual(asked(p), want);
      assert.deepEqual(p.chain.map(formatVersion), chain);
    });
  }
});

Deno.test("planVersions: a lower minor than the control plane runs is a downgrade, and nothing moves", () => {
  const p = planVersions({ minor: 30 }, [cp("cp-1", 31), w("w-1", 31)]);
  assert.deepEqual(asked(p), {});
  assert.deepEqual(p.downgrade, { from: at(31), to: { minor: 30 } });
  assert.match(p.waiting!, /spec\.version 1\.30 is older than the control plane's 1\.31\.2/);
});

/**
 * Runs an upgrade to its end: each round, every node the plan asks for another version than it reports
 * switches, one control-plane node at a time and the workers together (the rollout planner's pace does not
 * matter to the policy: each switch is checked on its own), until nothing changes. Answers every switch.
 */
function upgrade(target: KubeVersion, nodes: ChainNode[]): string[] {
  const log: string[] = [];
  for (let round = 0; round < 100; round++) {
    const p = planVersions(target, nodes);
    const due = nodes.filter((n) => {
      const want = p.desired.get(n.machine);
      return want &&
        (!n.reported ||
          formatVersion(want) !==
            formatVersion({
              minor: n.reported.minor,
              ...(want.patch !== undefined ? { patch: n.reported.patch } : {}),
            }));
    });
    const cpDue = due.filter((n) => n.plane === "controlPlane").slice(0, 1);
    const next = cpDue.length ? cpDue : due;
    if (!next.length) return log;
    for (const n of next) {
      const want = p.desired.get(n.machine)!;
      n.rendered = want;
      n.reported = { minor: want.minor, patch: want.patch ?? 0 };
      log.push(`${n.machine}→${formatVersion(n.reported)}`);
      const seen: NodeVersions[] = nodes.map((x) => ({
        machine: x.machine,
        plane: x.plane,
        kubelet: x.reported,
        ...(x.plane === "controlPlane" ? { apiServer: x.reported } : {}),
      }));
      assert.deepEqual(skewViolations(seen).map((x) => x.message), [], `after ${log.at(-1)}`);
    }
  }
  throw new Error(`the upgrade did not end: ${log.join(" ")}`);
}

Deno.test("a whole chain never breaks the policy: 1.30 → 1.33, and 1.30 → 1.36 with workers stepping", () => {
  const three = upgrade({ minor: 33 }, [cp("cp-1", 30), cp("cp-2", 30), cp("cp-3", 30), w("w-1", 30), w("w-2", 30)]);
  assert.deepEqual(three, [
    "cp-1→1.31.0",
    "cp-2→1.31.0",
    "cp-3→1.31.0",
    "cp-1→1.32.0",
    "cp-2→1.32.0",
    "cp-3→1.32.0",
    "cp-1→1.33.0",
    "cp-2→1.33.0",
    "cp-3→1.33.0",
    "w-1→1.33.0",
    "w-2→1.33.0",
  ]);
  const six = upgrade({ minor: 36 }, [cp("cp-1", 30), w("w-1", 30)]);
  assert.deepEqual(six, [
    "cp-1→1.31.0",
    "cp-1→1.32.0",
    "cp-1→1.33.0",
    "w-1→1.33.0",
    "cp-1→1.34.0",
    "cp-1→1.35.0",
    "cp-1→1.36.0",
    "w-1→1.36.0",
  ]);
});
