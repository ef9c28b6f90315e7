/**
 * The NIO pass-through as one table (core/contract/nio.ts NIO_PASS_THROUGH): every `spec.nio` key has a row, every
 * row is a field of the simulated NIO's NixosConfiguration CRD, and rendering and drift repair both follow it.
 */
import assert from "node:assert/strict";
import { parseAllDocuments } from "yaml";
import { NioSettings } from "../../crds/nio.ts";
import { NIO_PASS_THROUGH, nioFields, type NixosConfigurationSpec } from "../../core/contract/nio.ts";
import { specDrift } from "../../core/render/drift.ts";

const ROWS = Object.keys(NIO_PASS_THROUGH).sort();

Deno.test("every spec.nio key is a row of the pass-through table, and every row a spec.nio key", () => {
  assert.deepEqual(Object.keys(NioSettings.shape).sort(), ROWS);
});

Deno.test("every row is a field of the simulated NIO's NixosConfiguration CRD (testing/nio-crds.yaml)", async () => {
  const text = await Deno.readTextFile(new URL("../../testing/nio-crds.yaml", import.meta.url));
  const crd = parseAllDocuments(text).map((d) => d.toJS()).find((d) =>
    d?.metadata?.name === "nixosconfigurations.nio.homystack.com"
  );
  const version = crd.spec.versions.find((v: { name: string }) => v.name === "v1alpha1");
  const fields = Object.keys(version.schema.openAPIV3Schema.properties.spec.properties);
  assert.deepEqual(ROWS.filter((k) => !fields.includes(k)), []);
});

const NIO = {
  dayTwoSchedule: "0 3 * * *",
  jobTemplate: { image: "nix:1", nodeSelector: { pool: "builders" } },
  storeRef: { name: "cache" },
  builderRef: { name: "builder" },
};
const BASE: NixosConfigurationSpec = {
  machineRef: { name: "w-1" },
  gitRepo: "https://127.0.0.1/r.git",
  flake: "#w-1",
  onRemoveFlake: "#minimal",
  additionalFiles: [],
};

Deno.test("rendering copies every row (never sharing the spec's objects); none without spec.nio", () => {
  const rendered = nioFields(NIO);
  assert.deepEqual(rendered, NIO);
  assert.notEqual(rendered.jobTemplate, NIO.jobTemplate, "a copy");
  assert.deepEqual(nioFields(undefined), {});
  assert.deepEqual(Object.keys(nioFields(NIO, (r) => r.identity)).sort(), ["builderRef", "jobTemplate", "storeRef"]);
});

Deno.test("drift repair follows the table: a hand edit of a repaired row is drift, of the schedule is not", () => {
  const want = { ...BASE, ...nioFields(NIO) };
  const edits: Record<string, unknown> = {
    dayTwoSchedule: "* * * * *",
    jobTemplate: { image: "evil:1" },
    storeRef: { name: "other" },
    builderRef: { name: "other" },
  };
  for (const k of ROWS) {
    const drift = specDrift({ ...want, [k]: edits[k] }, want);
    const row = NIO_PASS_THROUGH[k as keyof typeof NIO_PASS_THROUGH];
    assert.deepEqual(drift, row.repaired ? [k] : [], k);
  }
});
