/**
 * Readiness by version (core/nodes/versioned.ts through core/nodes/joined.ts): a node asked for a Kubernetes
 * version is Joined only once it reports it; past the node timeout it fails naming what it reports.
 */
import assert from "node:assert/strict";
import type { NodeFacts } from "../../core/nodes/facts.ts";
import { joinReports } from "../../core/nodes/joined.ts";
import type { KubeVersion } from "../../core/versions/version.ts";
import { ago, applied, facts, node, NOW, TIMEOUT } from "../joined_kit.ts";

interface Case {
  name: string;
  plane?: "controlPlane" | "dataPlane";
  asked?: KubeVersion;
  kubelet?: string;
  apiServer?: string;
  /** Seconds since its change (default 60: within the timeout). */
  changed?: number;
  state: string;
  reason: string;
  detail?: RegExp;
}

const cases: Case[] = [
  { name: "asked for nothing: judged as before", kubelet: "v1.29.0", state: "Ready", reason: "Joined" },
  { name: "reports the minor asked", asked: { minor: 31 }, kubelet: "v1.31.4+k3s1", state: "Ready", reason: "Joined" },
  {
    name: "reports the patch asked",
    asked: { minor: 31, patch: 4 },
    kubelet: "v1.31.4+k3s1",
    state: "Ready",
    reason: "Joined",
  },
  {
    name: "still the old kubelet: Joining, naming it",
    asked: { minor: 31 },
    kubelet: "v1.30.9",
    state: "Joining",
    reason: "VersionNotReported",
    detail: /^applied; Node w-1 is Ready but its kubelet reports v1\.30\.9; waiting for 1\.31$/,
  },
  {
    name: "another patch than asked",
    asked: { minor: 31, patch: 5 },
    kubelet: "v1.31.4",
    state: "Joining",
    reason: "VersionNotReported",
  },
  {
    name: "no version reported at all",
    asked: { minor: 31 },
    state: "Joining",
    reason: "VersionNotReported",
    detail: /kubelet reports no version/,
  },
  {
    name: "past the node timeout: Failed, naming what it reports and what was asked",
    asked: { minor: 31 },
    kubelet: "v1.30.9",
    changed: 3600,
    state: "Failed",
    reason: "VersionMismatch",
    detail: /^VersionMismatch: Node w-1 is Ready but its kubelet reports v1\.30\.9, not 1\.31 as its cluster\.nix asks/,
  },
  {
    name: "a control-plane node whose API server answers another version",
    plane: "controlPlane",
    asked: { minor: 31 },
    kubelet: "v1.31.0",
    apiServer: "v1.30.2",
    state: "Joining",
    reason: "VersionNotReported",
    detail: /its API server answers v1\.30\.2 on \/version/,
  },
  {
    name: "a control-plane node whose API server does not answer: its kubelet is enough",
    plane: "controlPlane",
    asked: { minor: 31 },
    kubelet: "v1.31.0",
    state: "Ready",
    reason: "Joined",
  },
  {
    name: "a worker's API server answer is not read",
    asked: { minor: 31 },
    kubelet: "v1.31.0",
    apiServer: "v1.30.2",
    state: "Ready",
    reason: "Joined",
  },
];

Deno.test("a node asked for a version is Ready only once it reports it", async (t) => {
  for (const c of cases) {
    await t.step(c.name, () => {
      const machine = "w-1";
      const r = applied(machine, c.plane ?? "dataPlane");
      const w = facts([node(machine, c.kubelet ? { kubeletVersion: c.kubelet } : {})]);
      const f: NodeFacts = {
        machine,
        run: r,
        changedAt: ago(c.changed ?? 60),
        node: w.nodes?.get(machine),
        ...(c.asked ? { asked: c.asked } : {}),
        ...(c.apiServer ? { apiServer: c.apiServer } : {}),
      };
      const [out] = joinReports({ nodes: [f], workload: w, now: NOW, timeoutMs: TIMEOUT });
      assert.equal(out!.state, c.state, out!.detail);
      assert.equal(out!.reason, c.reason);
      if (c.detail) assert.match(out!.detail, c.detail);
    });
  }
});
