/**
 * Builds the `KubernetesCluster` CRD from the zod schema.
 *
 * `deno task crds` writes `crds/kubernetescluster.yaml`; a golden test fails
 * when the committed file differs from what this module produces.
 *
 * @module
 */
import { z } from "zod";
import { stringify } from "yaml";
import { GROUP, KIND, KubernetesClusterSpec, KubernetesClusterStatus, VERSION } from "./kubernetescluster.ts";

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

export const CRD_PATH = new URL("./kubernetescluster.yaml", import.meta.url);

/** Keys zod emits that a Kubernetes structural schema does not accept. */
const DROPPED_KEYS = new Set(["$schema", "$id", "id", "title", "examples"]);

/**
 * Rewrites zod's OpenAPI 3.0 output into a Kubernetes structural schema:
 * drops keys the API server refuses, removes `additionalProperties` beside
 * `properties`, the ±2^53 integer bounds zod adds to every `z.int()`, and
 * the constraints inside an int-or-string's `anyOf`.
 */
export function structural(node: Json): Json {
  if (Array.isArray(node)) return node.map(structural);
  if (node === null || typeof node !== "object") return node;
  const out: JsonObject = {};
  const intOrString = node["x-kubernetes-int-or-string"] === true;
  for (const [key, value] of Object.entries(node)) {
    if (DROPPED_KEYS.has(key)) continue;
    // The one shape Kubernetes accepts: the two types, nothing else (bounds and patterns go in a CEL rule).
    if (key === "anyOf" && intOrString) {
      out[key] = [{ type: "integer" }, { type: "string" }];
      continue;
    }
    if (key === "additionalProperties" && (value === false || "properties" in node)) continue;
    if (
      (key === "maximum" || key === "minimum") && typeof value === "number" &&
      Math.abs(value) >= Number.MAX_SAFE_INTEGER
    ) {
      continue;
    }
    if (key === "$ref" || key === "$defs" || key === "definitions") {
      throw new Error(
        `Cannot build a structural schema: found '${key}'; inline the schema instead of reusing it by reference`,
      );
    }
    out[key] = structural(value);
  }
  return out;
}

function openApi(schema: z.ZodType): JsonObject {
  const json = z.toJSONSchema(schema, { target: "openapi-3.0", io: "input", reused: "inline", cycles: "throw" });
  return structural(json as Json) as JsonObject;
}

/** The columns `kubectl get kubernetesclusters` shows (`-o wide` adds those of priority 1). */
function printerColumns(): JsonObject[] {
  return [
    { name: "Phase", type: "string", jsonPath: ".status.phase", description: "Lifecycle phase." },
    {
      name: "Control Plane",
      type: "string",
      jsonPath: ".status.controlPlane.summary",
      description: "Ready/total control-plane nodes (Ready: applied by NIO and its Node Ready).",
    },
    {
      name: "Workers",
      type: "string",
      jsonPath: ".status.dataPlane.summary",
      description: "Ready/total workers (Ready: applied by NIO and its Node Ready).",
    },
    {
      name: "Version",
      type: "string",
      jsonPath: ".status.version",
      description: "The lowest Kubernetes version running in the cluster, as its nodes report it.",
    },
    {
      name: "CP Applied",
      type: "integer",
      jsonPath: ".status.controlPlane.applied",
      priority: 1,
      description: "Control-plane nodes NIO has applied, Ready in the workload cluster or not.",
    },
    {
      name: "Workers Applied",
      type: "integer",
      jsonPath: ".status.dataPlane.applied",
      priority: 1,
      description: "Workers NIO has applied, Ready in the workload cluster or not.",
    },
    {
      name: "Endpoint",
      type: "string",
      jsonPath: ".status.endpoint",
      priority: 1,
      description: "Kubernetes API of the cluster.",
    },
    { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" },
  ];
}

/** The schema of the whole object: spec and status from the zod schema, and the rules on its name. */
function objectSchema(): JsonObject {
  return {
    type: "object",
    description:
      "A Kubernetes cluster on NixOS Machines managed by NIO. NICO picks the Machines, hands each a NixosConfiguration and publishes a kubeconfig.",
    required: ["spec"],
    properties: {
      apiVersion: { type: "string", description: "API version of this object." },
      kind: { type: "string", description: "Kind of this object." },
      metadata: { type: "object" },
      spec: openApi(KubernetesClusterSpec),
      status: openApi(KubernetesClusterStatus),
    },
    "x-kubernetes-validations": [{
      rule: "size(self.metadata.name) <= 63",
      message: "metadata.name must be at most 63 characters: it is used as a label value on Machines and children",
    }, {
      rule: "!self.metadata.name.contains('.')",
      message:
        "metadata.name must not contain '.': NICO names each node's NixosConfiguration <cluster>.<machine>, and a dot in the cluster's name would let two clusters' children share a name",
    }],
  };
}

/** The CRD object, ready to apply. */
export function kubernetesClusterCrd(): JsonObject {
  const plural = "kubernetesclusters";
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: `${plural}.${GROUP}`, labels: { "app.kubernetes.io/part-of": "nico" } },
    spec: {
      group: GROUP,
      scope: "Namespaced",
      names: {
        kind: KIND,
        listKind: `${KIND}List`,
        plural,
        singular: "kubernetescluster",
        shortNames: ["kcluster", "k8scluster"],
        categories: ["nico"],
      },
      versions: [{
        name: VERSION,
        served: true,
        storage: true,
        subresources: { status: {} },
        additionalPrinterColumns: printerColumns(),
        schema: { openAPIV3Schema: objectSchema() },
      }],
    },
  };
}

/** The CRD as the YAML file committed under `crds/`. */
export function kubernetesClusterCrdYaml(): string {
  return "# Generated from crds/kubernetescluster.ts by `deno task crds`. Do not edit.\n" +
    stringify(kubernetesClusterCrd(), { lineWidth: 0 });
}

if (import.meta.main) {
  const yaml = kubernetesClusterCrdYaml();
  if (Deno.args.includes("--stdout")) {
    console.log(yaml);
  } else {
    await Deno.writeTextFile(CRD_PATH, yaml);
    console.error(`wrote ${CRD_PATH.pathname.split("/").slice(-2).join("/")}`);
  }
}
