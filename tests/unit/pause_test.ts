/** The one pause gate (core/rollout/pause.ts): when a cluster is paused, and what a pass over it may still write. */
import assert from "node:assert/strict";
import { isPaused, type PassWrites, passWrites } from "../../core/rollout/pause.ts";
import { PAUSED_ANNOTATION } from "../../core/contract/labels.ts";

Deno.test('isPaused: spec.paused, or the annotation set to exactly "true"', () => {
  const rows: [string, { paused?: boolean }, Record<string, string> | undefined, boolean][] = [
    ["nothing set", {}, undefined, false],
    ["spec.paused false", { paused: false }, {}, false],
    ["spec.paused true", { paused: true }, undefined, true],
    ["annotation true", { paused: false }, { [PAUSED_ANNOTATION]: "true" }, true],
    ["annotation false", {}, { [PAUSED_ANNOTATION]: "false" }, false],
    ["annotation yes (not a boolean NICO reads)", {}, { [PAUSED_ANNOTATION]: "yes" }, false],
    ["annotation empty", {}, { [PAUSED_ANNOTATION]: "" }, false],
    ["spec.paused true wins over annotation false", { paused: true }, { [PAUSED_ANNOTATION]: "false" }, true],
  ];
  for (const [name, spec, annotations, want] of rows) assert.equal(isPaused(spec, annotations), want, name);
});

/** Every kind of write, and whether a paused pass may make it; a new kind fails to type-check until it has a row. */
const WHILE_PAUSED: Record<keyof PassWrites, boolean> = {
  status: true,
  secrets: true,
  claims: true,
  configurations: false,
  restSchedules: true,
  drains: false,
  workloadNodes: false,
  releases: false,
  remediation: false,
  etcdMembership: false,
};

Deno.test("passWrites: a paused pass writes only what changes no node; otherwise everything", () => {
  assert.deepEqual(passWrites(true), WHILE_PAUSED);
  for (const [kind, allowed] of Object.entries(passWrites(false))) assert.equal(allowed, true, kind);
});

Deno.test("the phases ask the gate: none reads spec.paused or the scope's paused flag to decide a write", async () => {
  const dir = new URL("../../controllers/cluster/phases/", import.meta.url);
  for await (const e of Deno.readDir(dir)) {
    if (!e.name.endsWith(".ts")) continue;
    const text = await Deno.readTextFile(new URL(e.name, dir));
    // Handing the pause to a pure decision (the planner's reason, the remediation condition) is fine.
    const reads = [...text.matchAll(/.{0,12}\b(?:s|scope)\.(?:spec\.)?paused\b/g)].map((m) => m[0]);
    assert.deepEqual(reads.filter((r) => !/paused: (?:s|scope)\.paused$/.test(r)), [], `phases/${e.name}`);
    assert.doesNotMatch(text, /PAUSED_ANNOTATION/, `phases/${e.name} reads the annotation itself`);
  }
});
