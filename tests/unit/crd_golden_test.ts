// deno-lint-ignore-file no-explicit-any
import assert from "node:assert/strict";
import { CRD_PATH, kubernetesClusterCrd, kubernetesClusterCrdYaml, structural } from "../../crds/generate.ts";

Deno.test("committed CRD YAML equals what the schema generates (run `deno task crds` after changing crds/)", async () => {
  const committed = await Deno.readTextFile(CRD_PATH);
  assert.equal(committed, kubernetesClusterCrdYaml());
});

Deno.test("generated CRD has the names, columns and subresources users rely on", () => {
  const crd = kubernetesClusterCrd() as any;
  assert.deepEqual(crd.spec.names.shortNames, ["kcluster", "k8scluster"]);
  assert.deepEqual(crd.spec.names.categories, ["nico"]);
  const version = crd.spec.versions[0];
  assert.deepEqual(version.subresources, { status: {} });
  assert.deepEqual(
    version.additionalPrinterColumns.map((c: { name: string }) => c.name),
    ["Phase", "Control Plane", "Workers", "Version", "CP Applied", "Workers Applied", "Endpoint", "Age"],
  );
});

Deno.test("every spec and status field has a description", () => {
  const crd = kubernetesClusterCrd() as any;
  const missing: string[] = [];
  const walk = (node: any, path: string) => {
    if (!node || typeof node !== "object") return;
    for (const [key, child] of Object.entries<any>(node.properties ?? {})) {
      const p = `${path}.${key}`;
      if (!child.description && !child.items?.description) missing.push(p);
      walk(child, p);
      walk(child.items, `${p}[]`);
    }
  };
  const root = crd.spec.versions[0].schema.openAPIV3Schema;
  walk(root.properties.spec, "spec");
  walk(root.properties.status, "status");
  assert.deepEqual(missing, []);
});

Deno.test("structural() drops what Kubernetes refuses and keeps the rest", async (t) => {
  const cases: { name: string; input: any; want: any }[] = [
    { name: "$schema", input: { $schema: "x", type: "object" }, want: { type: "object" } },
    {
      name: "additionalProperties beside properties",
      input: { type: "object", properties: { a: { type: "string" } }, additionalProperties: false },
      want: { type: "object", properties: { a: { type: "string" } } },
    },
    {
      name: "map schema kept",
      input: { type: "object", additionalProperties: { type: "string" } },
      want: { type: "object", additionalProperties: { type: "string" } },
    },
    {
      name: "safe-integer bounds",
      input: { type: "integer", minimum: -9007199254740991, maximum: 9007199254740991 },
      want: { type: "integer" },
    },
    {
      name: "int-or-string: only the two bare types inside anyOf (its bounds go in a CEL rule)",
      input: {
        "x-kubernetes-int-or-string": true,
        anyOf: [{ type: "integer", minimum: 0 }, { type: "string", pattern: "^a$" }],
      },
      want: { "x-kubernetes-int-or-string": true, anyOf: [{ type: "integer" }, { type: "string" }] },
    },
    {
      name: "real bounds kept",
      input: { type: "integer", minimum: 1, maximum: 5 },
      want: { type: "integer", minimum: 1, maximum: 5 },
    },
  ];
  for (const c of cases) {
    await t.step(c.name, () => assert.deepEqual(structural(c.input), c.want));
  }
  await t.step("$ref is refused with a clear error", () => {
    assert.throws(() => structural({ $ref: "#/x" }), /found '\$ref'/);
  });
});

Deno.test("docs/crd-reference.md equals what the schema generates (run `deno task crds`)", async () => {
  const { crdReference, REFERENCE_PATH } = await import("../../crds/reference.ts");
  assert.equal(await Deno.readTextFile(REFERENCE_PATH), crdReference());
});
