/**
 * Rules on the cluster object alone: the zod schema, fields the schema
 * does not have, Machine lists and label selectors. Pure; each finding is
 * one line `<field path>: <what is wrong>; <what to do>`.
 *
 * @module
 */
import { isRecord } from "../lib/encoding.ts";
import { KubernetesClusterSpec, type LabelSelector } from "../crds/kubernetescluster.ts";
import { DEFAULT_HOST_POLICY, type HostPolicy } from "../lib/git/hosts.ts";
import { gitRepoProblem, refProblem } from "../lib/git/url.ts";
import { labelKeyProblems, labelValueProblems } from "../lib/selector.ts";

type Spec = KubernetesClusterSpec;

/** `spec.controlPlane.machines[1]` from a base and a zod-style path. */
export function formatPath(base: string, path: readonly PropertyKey[]): string {
  let out = base;
  for (const p of path) {
    if (typeof p === "number") out += `[${p}]`;
    else if (typeof p === "string" && /^[A-Za-z_][A-Za-z0-9_]*$/.test(p)) out += `.${p}`;
    else out += `[${JSON.stringify(String(p))}]`;
  }
  return out;
}

const NAME_RULE =
  "must be a lowercase RFC 1123 name: a-z, 0-9, '-' and '.', starting and ending with a letter or digit";

/** The spec as the schema reads it, or one finding per zod issue. */
export function schemaProblems(spec: unknown): { spec: Spec; errors: [] } | { spec?: undefined; errors: string[] } {
  const parsed = KubernetesClusterSpec.safeParse(spec);
  if (parsed.success) return { spec: parsed.data, errors: [] };
  return {
    errors: parsed.error.issues.map((issue) => {
      const where = formatPath("spec", issue.path);
      // A pattern without a message of its own is a name's (the schema gives every other pattern its message).
      const bare = issue.code === "invalid_format" && issue.format === "regex" && /^Invalid string/.test(issue.message);
      const message = bare ? NAME_RULE : issue.message;
      return `${where}: ${message}`;
    }),
  };
}

/** Fields the schema would silently drop but a person meant: a namespace on credentialsRef. */
export function rawProblems(spec: unknown, namespace: string): string[] {
  if (!isRecord(spec) || !isRecord(spec.credentialsRef) || !("namespace" in spec.credentialsRef)) return [];
  const other = spec.credentialsRef.namespace;
  const name = typeof spec.credentialsRef.name === "string" ? spec.credentialsRef.name : "<name>";
  return [
    `spec.credentialsRef.namespace: credentialsRef has no namespace field: the Secret must be in the cluster's namespace ${namespace}` +
    (typeof other === "string" && other !== namespace ? `, not ${other}` : "") +
    `; copy Secret ${name} into ${namespace} and remove credentialsRef.namespace`,
  ];
}

/** The cluster's name goes into a label value, so it is limited to 63 characters. */
export function nameProblems(name: unknown): string[] {
  if (typeof name !== "string" || name === "") return [];
  const problems = labelValueProblems(name);
  if (problems.length === 0) return [];
  return [
    `metadata.name: cluster name ${name} cannot be a label value (NICO labels its Machines with it): ${
      problems.join("; ")
    }; pick a shorter name`,
  ];
}

/** Machines named twice, in both planes, or a control plane of none. */
export function listProblems(spec: Spec): string[] {
  const out: string[] = [];
  const cp = spec.controlPlane.machines ?? [];
  const dp = spec.dataPlane.machines ?? [];
  for (const [plane, list] of [["controlPlane", cp], ["dataPlane", dp]] as const) {
    const first = new Map<string, number>();
    list.forEach((name, i) => {
      const j = first.get(name);
      if (j === undefined) first.set(name, i);
      else {
        out.push(
          `spec.${plane}.machines[${i}]: Machine ${name} is named twice (also at spec.${plane}.machines[${j}]); list each Machine once`,
        );
      }
    });
  }
  const inCp = new Set(cp);
  dp.forEach((name, i) => {
    if (inCp.has(name)) {
      out.push(
        `spec.dataPlane.machines[${i}]: Machine ${name} is also in spec.controlPlane.machines; ` +
          "a Machine serves one plane only: remove it from one of the lists",
      );
    }
  });
  out.push(...spareProblems(spec));
  if (cp.length === 0 && (spec.controlPlane.count ?? 0) < 1) {
    out.push(
      "spec.controlPlane: the control plane needs at least one machine: list spec.controlPlane.machines or set spec.controlPlane.count >= 1",
    );
  }
  return out;
}

/** A spare must be free to stand in: not listed in either plane, and a spare of one plane only. */
function spareProblems(spec: Spec): string[] {
  const out: string[] = [];
  const listed = new Map<string, string>();
  for (const plane of ["controlPlane", "dataPlane"] as const) {
    for (const m of spec[plane].machines ?? []) listed.set(m, `spec.${plane}.machines`);
  }
  const spared = new Map<string, string>();
  for (const plane of ["controlPlane", "dataPlane"] as const) {
    (spec[plane].spares ?? []).forEach((name, i) => {
      const at = `spec.${plane}.spares[${i}]`;
      const where = listed.get(name) ?? spared.get(name);
      if (where) {
        out.push(`${at}: Machine ${name} is also in ${where}; a spare stands by for one plane: remove it from one`);
      }
      spared.set(name, `spec.${plane}.spares`);
    });
  }
  return out;
}

/** Label keys and values a Kubernetes selector would refuse, and In/NotIn without values. */
export function selectorProblems(spec: Spec): string[] {
  const out: string[] = [];
  const check = (where: string, selector: LabelSelector | undefined) => {
    for (const [key, value] of Object.entries(selector?.matchLabels ?? {})) {
      const at = `${where}.matchLabels[${JSON.stringify(key)}]`;
      for (const p of labelKeyProblems(key)) out.push(`${at}: ${p}; fix the selector`);
      for (const p of labelValueProblems(value)) out.push(`${at}: ${p}; fix the selector`);
    }
    (selector?.matchExpressions ?? []).forEach((req, i) => {
      const at = `${where}.matchExpressions[${i}]`;
      for (const p of labelKeyProblems(req.key)) out.push(`${at}.key: ${p}; fix the selector`);
      const values = req.values ?? [];
      values.forEach((v, j) => {
        for (const p of labelValueProblems(v)) out.push(`${at}.values[${j}]: ${p}; fix the selector`);
      });
      if ((req.operator === "In" || req.operator === "NotIn") && values.length === 0) {
        out.push(`${at}.values: operator ${req.operator} needs at least one value; add values or use Exists`);
      }
      if ((req.operator === "Exists" || req.operator === "DoesNotExist") && values.length > 0) {
        out.push(`${at}.values: operator ${req.operator} takes no values; remove them or use In`);
      }
    });
  };
  check("spec.controlPlane.machineSelector", spec.controlPlane.machineSelector);
  check("spec.dataPlane.machineSelector", spec.dataPlane.machineSelector);
  return out;
}

/**
 * `gitRepo` and `ref` NICO and NIO may safely use: an allowed host and
 * scheme, no credentials in the URL, a ref of safe characters. The value is
 * never repeated (it may hold a password).
 */
export function repoProblems(spec: Spec, policy: HostPolicy = DEFAULT_HOST_POLICY): string[] {
  const out: string[] = [];
  if (spec.gitRepo !== undefined) {
    const problem = gitRepoProblem(spec.gitRepo, policy);
    if (problem) out.push(`spec.gitRepo: ${problem}`);
  }
  if (spec.ref !== undefined) {
    const problem = refProblem(spec.ref);
    if (problem) out.push(`spec.ref: ${problem}`);
  }
  return out;
}
