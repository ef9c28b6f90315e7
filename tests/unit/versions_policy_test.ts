/** The version skew policy (core/versions/policy.ts) and version parsing (core/versions/version.ts), by tables. */
import assert from "node:assert/strict";
import {
  apiServerOf,
  kubeletWindow,
  type NodeVersions,
  skewViolations,
  stepViolations,
} from "../../core/versions/policy.ts";
import { parseReportedVersion, parseSpecVersion } from "../../core/versions/version.ts";

const at = (minor: number, patch = 0) => ({ minor, patch });
const cp = (machine: string, api: number, kubelet = api): NodeVersions => ({
  machine,
  plane: "controlPlane",
  apiServer: at(api),
  kubelet: at(kubelet),
});
const w = (machine: string, kubelet: number): NodeVersions => ({ machine, plane: "dataPlane", kubelet: at(kubelet) });
const rules = (nodes: NodeVersions[]) => skewViolations(nodes).map((x) => `${x.rule} ${x.machine}<>${x.against}`);

Deno.test("spec.version and reported versions are read as Kubernetes writes them", async (t) => {
  const spec: [string, unknown][] = [
    ["1.31", { minor: 31 }],
    ["1.31.4", { minor: 31, patch: 4 }],
    ["v1.31.4", { minor: 31, patch: 4 }],
    [" 1.30 ", { minor: 30 }],
    ["1.31.4+k3s1", undefined],
    ["1.31.04", undefined],
    ["01.31", undefined],
    ["2.0", undefined],
    ["1", undefined],
    ["1.31.", undefined],
    ["latest", undefined],
  ];
  for (const [text, want] of spec) {
    await t.step(`spec ${JSON.stringify(text)}`, () => assert.deepEqual(parseSpecVersion(text), want));
  }
  const reported: [string | undefined, unknown][] = [
    ["v1.31.4+k3s1", { minor: 31, patch: 4 }],
    ["v1.32.0-rc.1", { minor: 32, patch: 0 }],
    ["1.30.2-eks-1234", { minor: 30, patch: 2 }],
    ["v1.31", undefined],
    ["", undefined],
    [undefined, undefined],
  ];
  for (const [text, want] of reported) {
    await t.step(`reported ${JSON.stringify(text)}`, () => assert.deepEqual(parseReportedVersion(text), want));
  }
});

Deno.test("the kubelet window is three minors, two for kubelets before 1.25", () => {
  assert.equal(kubeletWindow(at(25)), 3);
  assert.equal(kubeletWindow(at(31)), 3);
  assert.equal(kubeletWindow(at(24)), 2);
});

Deno.test("skewViolations: each rule of the policy, and what it is judged against", async (t) => {
  const cases: [string, NodeVersions[], string[]][] = [
    ["one version everywhere", [cp("cp-1", 31), cp("cp-2", 31), w("w-1", 31)], []],
    ["API servers one minor apart: allowed", [cp("cp-1", 32), cp("cp-2", 31), w("w-1", 31)], []],
    ["API servers two minors apart", [cp("cp-1", 33), cp("cp-2", 31)], ["ApiServersApart cp-1<>cp-2"]],
    ["a worker newer than the oldest API server", [cp("cp-1", 32), cp("cp-2", 31), w("w-1", 32)], [
      "KubeletNewerThanApiServer w-1<>cp-2",
    ]],
    ["a worker three minors older: allowed", [cp("cp-1", 33), w("w-1", 30)], []],
    ["a worker four minors older than the newest", [cp("cp-1", 34), cp("cp-2", 33), w("w-1", 30)], [
      "KubeletTooOld w-1<>cp-1",
    ]],
    ["a kubelet before 1.25: two minors at most", [cp("cp-1", 27), w("w-1", 24)], ["KubeletTooOld w-1<>cp-1"]],
    ["a control-plane kubelet with its own API server, ahead of another's: allowed", [
      cp("cp-1", 31),
      cp("cp-2", 30),
    ], []],
    ["a control-plane kubelet newer than its own API server", [cp("cp-1", 30, 31)], [
      "KubeletNewerThanApiServer cp-1<>cp-1",
    ]],
    ["nothing reported: nothing judged", [{ machine: "cp-1", plane: "controlPlane" }, w("w-1", 31)], []],
    ["no /version: the API server taken from the kubelet", [
      { machine: "cp-1", plane: "controlPlane", kubelet: at(30) },
      w("w-1", 31),
    ], ["KubeletNewerThanApiServer w-1<>cp-1"]],
    ["several at once, sorted", [cp("cp-1", 34), cp("cp-2", 31), w("w-2", 32), w("w-1", 30)], [
      "ApiServersApart cp-1<>cp-2",
      "KubeletNewerThanApiServer w-2<>cp-2",
      "KubeletTooOld w-1<>cp-1",
    ]],
  ];
  for (const [name, nodes, want] of cases) await t.step(name, () => assert.deepEqual(rules(nodes), want));
});

Deno.test("a violation's message names both nodes, both versions and the fix", () => {
  const [x] = skewViolations([cp("cp-1", 30), w("w-1", 31)]);
  assert.match(x!.message, /^w-1's kubelet 1\.31\.0 is newer than cp-1's API server 1\.30\.0: /);
  assert.match(x!.message, /spec\.rollout\.order: ControlPlaneFirst\) or set spec\.version$/);
  assert.equal(apiServerOf(w("w-1", 31)), undefined, "a worker has no API server");
});

Deno.test("stepViolations: what a step would add, never what is already there", async (t) => {
  const cases: [string, NodeVersions[], string, number, string[]][] = [
    ["the control plane one minor up", [cp("cp-1", 30), cp("cp-2", 30), w("w-1", 30)], "cp-1", 31, []],
    ["a control-plane node two minors up", [cp("cp-1", 30), cp("cp-2", 30)], "cp-1", 32, [
      "ApiServerSkipsMinor cp-1<>cp-1",
      "ApiServersApart cp-1<>cp-2",
    ]],
    ["a worker before the control plane", [cp("cp-1", 30), w("w-1", 30)], "w-1", 31, [
      "KubeletNewerThanApiServer w-1<>cp-1",
    ]],
    ["the control plane leaving a worker four behind", [cp("cp-1", 33), w("w-1", 30)], "cp-1", 34, [
      "KubeletTooOld w-1<>cp-1",
    ]],
    [
      "fixing forward: the second API server catching up",
      [cp("cp-1", 32), cp("cp-2", 30), cp("cp-3", 30)],
      "cp-2",
      31,
      [],
    ],
    [
      "fixing forward: a worker newer than the control plane stays a problem, not a new one",
      [
        cp("cp-1", 30),
        cp("cp-2", 30),
        w("w-1", 31),
      ],
      "cp-1",
      31,
      [],
    ],
    ["a worker to the control plane's minor", [cp("cp-1", 33), w("w-1", 30)], "w-1", 33, []],
    ["an unknown node", [cp("cp-1", 30)], "cp-9", 31, []],
  ];
  for (const [name, nodes, machine, minor, want] of cases) {
    await t.step(name, () => {
      const got = stepViolations(nodes, machine, { minor }).map((x) => `${x.rule} ${x.machine}<>${x.against}`);
      assert.deepEqual(got, want);
    });
  }
});
