import assert from "node:assert/strict";
import { labelDrift, specDrift } from "../../core/render/drift.ts";
import type { NixosConfigurationSpec } from "../../core/contract/nio.ts";
import { ownedConfig } from "../../testing/objects.ts";

const want: NixosConfigurationSpec = {
  ...ownedConfig("prod", "m", "control-plane").spec,
  additionalFiles: [
    { path: "cluster.nix", valueType: "Inline", inline: "{ }" },
    { path: "join-token", valueType: "SecretRef", secretRef: { name: "prod-join-token", key: "token" } },
  ],
};

const cases: { name: string; got: NixosConfigurationSpec; drift: string[] }[] = [
  { name: "as wanted", got: structuredClone(want), drift: [] },
  { name: "another flake", got: { ...want, flake: "#pwned" }, drift: ["flake"] },
  { name: "another gitRepo", got: { ...want, gitRepo: "https://evil.test/x.git" }, drift: ["gitRepo"] },
  { name: "a full install switched on", got: { ...want, fullInstall: true }, drift: ["fullInstall"] },
  {
    name: "the CA key added",
    got: {
      ...want,
      additionalFiles: [...want.additionalFiles, {
        path: "cluster-ca.key",
        valueType: "SecretRef",
        secretRef: { name: "prod-ca-key", key: "tls.key" },
      }],
    },
    drift: ["additionalFiles"],
  },
  {
    name: "a file's Secret changed",
    got: {
      ...want,
      additionalFiles: [want.additionalFiles[0]!, {
        path: "join-token",
        valueType: "SecretRef",
        secretRef: { name: "other", key: "token" },
      }],
    },
    drift: ["additionalFiles"],
  },
  { name: "NIO's default ref is not drift", got: { ...want, ref: "main" }, drift: [] },
  { name: "a ref NICO did not set is drift", got: { ...want, ref: "evil" }, drift: ["ref"] },
  { name: "credentials added by hand", got: { ...want, credentialsRef: { name: "x" } }, drift: ["credentialsRef"] },
  {
    name: "fields the server adds inside a file are not drift",
    got: {
      ...want,
      additionalFiles: want.additionalFiles.map((f) => ({ ...f, extra: "server-default" })),
    } as NixosConfigurationSpec,
    drift: [],
  },
  {
    name: "a field NICO does not own is left alone",
    got: { ...want, somethingElse: true } as NixosConfigurationSpec,
    drift: [],
  },
  { name: "several at once", got: { ...want, flake: "#x", onRemoveFlake: "#y" }, drift: ["flake", "onRemoveFlake"] },
];

Deno.test("specDrift names the owned fields a child differs in", async (t) => {
  for (const c of cases) {
    await t.step(c.name, () => assert.deepEqual(specDrift(c.got, want), c.drift));
  }
});

Deno.test("labelDrift names missing or changed labels and ignores others'", () => {
  assert.deepEqual(labelDrift({ a: "1", b: "2", x: "y" }, { a: "1", b: "2" }), []);
  assert.deepEqual(labelDrift({ a: "1" }, { a: "1", b: "2" }), ["b"]);
  assert.deepEqual(labelDrift(undefined, { b: "2", a: "1" }), ["a", "b"]);
  assert.deepEqual(labelDrift({ a: "0" }, { a: "1" }), ["a"]);
});
