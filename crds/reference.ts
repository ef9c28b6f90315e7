/**
 * Builds docs/crd-reference.md from the CRD schema's descriptions, so the
 * reference never drifts from the API. `deno task crds` writes it too.
 *
 * @module
 */
import { kubernetesClusterCrd } from "./generate.ts";

export const REFERENCE_PATH = new URL("../docs/crd-reference.md", import.meta.url);

type Schema = {
  type?: string;
  description?: string;
  properties?: Record<string, Schema>;
  items?: Schema;
  required?: string[];
  default?: unknown;
  enum?: unknown[];
  minimum?: number;
  maximum?: number;
  maxItems?: number;
  pattern?: string;
  additionalProperties?: Schema;
  "x-kubernetes-validations"?: { rule: string; message: string }[];
};

function typeOf(s: Schema): string {
  if (s.type === "array") return `[]${typeOf(s.items ?? {})}`;
  if (s.type === "object" && s.additionalProperties) return `map[string]${typeOf(s.additionalProperties)}`;
  return s.type ?? "any";
}

function facts(s: Schema, required: boolean): string {
  const out: string[] = [];
  if (required) out.push("required");
  if (s.default !== undefined) out.push(`default \`${JSON.stringify(s.default)}\``);
  if (s.enum) out.push(`one of ${s.enum.map((e) => `\`${e}\``).join(", ")}`);
  if (s.minimum !== undefined || s.maximum !== undefined) out.push(`range ${s.minimum ?? "…"}–${s.maximum ?? "…"}`);
  if (s.maxItems !== undefined) out.push(`at most ${s.maxItems} items`);
  return out.join("; ");
}

function rows(s: Schema, path: string, out: string[]): void {
  const props = s.properties ?? s.items?.properties;
  const req = new Set(s.required ?? s.items?.required ?? []);
  for (const [name, child] of Object.entries(props ?? {})) {
    const p = `${path}.${name}`;
    const desc = (child.description ?? child.items?.description ?? "").replaceAll("|", "\\|");
    out.push(`| \`${p}\` | \`${typeOf(child)}\` | ${desc} | ${facts(child, req.has(name))} |`);
    rows(child, child.type === "array" ? `${p}[]` : p, out);
  }
}

function rules(s: Schema, path: string, out: string[]): void {
  for (const v of s["x-kubernetes-validations"] ?? []) out.push(`- \`${path || "."}\`: ${v.message}`);
  for (const [name, child] of Object.entries(s.properties ?? {})) rules(child, `${path}.${name}`, out);
  if (s.items) rules(s.items, `${path}[]`, out);
}

/** The reference page as Markdown. */
export function crdReference(): string {
  // deno-lint-ignore no-explicit-any
  const crd = kubernetesClusterCrd() as any;
  const root = crd.spec.versions[0].schema.openAPIV3Schema as Schema;
  const out = [
    "<!-- Generated from crds/kubernetescluster.ts by `deno task crds`. Do not edit. -->",
    "# KubernetesCluster reference",
    "",
    `\`${crd.spec.group}/${crd.spec.versions[0].name}\`, kind \`${crd.spec.names.kind}\`, namespaced; short names ${
      crd.spec.names.shortNames.map((n: string) => `\`${n}\``).join(", ")
    }; category \`nico\`.`,
    "",
    root.description ?? "",
    "",
    "## spec",
    "",
    "| field | type | description | constraints |",
    "| --- | --- | --- | --- |",
  ];
  rows(root.properties!.spec!, "spec", out);
  out.push("", "## status", "", "| field | type | description | constraints |", "| --- | --- | --- | --- |");
  rows(root.properties!.status!, "status", out);
  out.push("", "## Rules the API server enforces", "", "These CEL rules hold even when NICO's webhook is down.", "");
  rules(root, "", out);
  out.push("");
  return out.join("\n");
}

if (import.meta.main) {
  await Deno.writeTextFile(REFERENCE_PATH, crdReference());
  console.error("wrote docs/crd-reference.md");
}
