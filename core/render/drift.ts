/**
 * Drift: which fields NICO owns in a child differ from what NICO wants.
 * Judged by content, never by NICO's own annotations, so a hand edit of a
 * NixosConfiguration is seen even when the spec-hash annotation still
 * matches. Pure.
 *
 * @module
 */
import { isDeepStrictEqual } from "node:util";
import { BOOTSTRAP_LABEL, SHARD_LABEL } from "../contract/labels.ts";
import { NIO_PASS_THROUGH, type NioPassThroughField, type NixosConfigurationSpec } from "../contract/nio.ts";

/** The spec fields NICO writes; any other field of a child is left alone. */
const OWNED_SPEC_FIELDS = [
  "machineRef",
  "gitRepo",
  "ref",
  "credentialsRef",
  "flake",
  "onRemoveFlake",
  "configurationSubdir",
  "fullInstall",
  "additionalFiles",
  // NIO v1's fields that NICO passes through and repairs (core/contract/nio.ts NIO_PASS_THROUGH).
  ...(Object.keys(NIO_PASS_THROUGH) as NioPassThroughField[]).filter((k) => NIO_PASS_THROUGH[k].repaired),
] satisfies readonly (keyof NixosConfigurationSpec)[];

/**
 * What NIO's API server may fill in for a field NICO leaves out; such a value
 * is not drift. (NIO's CRD defaults `ref` to `main`.)
 */
const SERVER_DEFAULTS: Partial<Record<keyof NixosConfigurationSpec, unknown>> = {
  ref: "main",
  configurationSubdir: "",
  fullInstall: false,
};

/** `want` holds every key of `want` with an equal value in `got` (extra keys the server adds are fine). */
function covers(got: unknown, want: unknown): boolean {
  if (Array.isArray(want)) {
    return Array.isArray(got) && got.length === want.length && want.every((w, i) => covers(got[i], w));
  }
  if (want && typeof want === "object") {
    if (!got || typeof got !== "object" || Array.isArray(got)) return false;
    return Object.entries(want).every(([k, v]) => v === undefined || covers((got as Record<string, unknown>)[k], v));
  }
  return isDeepStrictEqual(got, want);
}

/**
 * The owned spec fields of `existing` that differ from `desired`, in a fixed
 * order; empty when the child is as NICO wants it.
 *
 * @example
 * ```ts
 * import { specDrift } from "./drift.ts";
 * const want = {
 *   machineRef: { name: "a" }, gitRepo: "https://git.example/r.git", flake: "#a",
 *   onRemoveFlake: "#minimal", fullInstall: false, additionalFiles: [],
 * };
 * specDrift({ ...want, flake: "#pwned" }, want); // ["flake"]
 * ```
 */
export function specDrift(existing: NixosConfigurationSpec, desired: NixosConfigurationSpec): string[] {
  const out: string[] = [];
  for (const field of OWNED_SPEC_FIELDS) {
    const want = desired[field];
    const got = existing[field];
    if (want === undefined) {
      if (got !== undefined && !isDeepStrictEqual(got, SERVER_DEFAULTS[field])) out.push(field);
    } else if (!covers(got, want)) {
      out.push(field);
    }
  }
  return out;
}

/**
 * The labels NICO sets on a child that are missing or changed (extra labels of others are kept).
 *
 * @example
 * ```ts
 * import { labelDrift } from "./drift.ts";
 * const want = { "nico.homystack.com/cluster": "c", "nico.homystack.com/role": "worker" };
 * labelDrift({ "nico.homystack.com/cluster": "c", team: "infra" }, want); // ["nico.homystack.com/role"]
 * ```
 */
export function labelDrift(existing: Record<string, string> | undefined, desired: Record<string, string>): string[] {
  return Object.entries(desired).filter(([k, v]) => existing?.[k] !== v).map(([k]) => k).sort();
}

/** Labels NICO puts on a child only sometimes: one it no longer wants goes (a bootstrap mark, a shard moved away from). */
const SOMETIMES_LABELS = [BOOTSTRAP_LABEL, SHARD_LABEL];

/**
 * The labels a child should have, when NICO must write them (undefined: they are right): the child's own, with
 * NICO's wanted ones set and its sometimes-labels it no longer wants removed (others' labels are kept).
 *
 * @example
 * ```ts
 * import { labelsToWrite } from "./drift.ts";
 * const want = { "nico.homystack.com/cluster": "c" };
 * labelsToWrite({ "nico.homystack.com/cluster": "c", "nico.homystack.com/shard": "a", team: "x" }, want);
 * // { "nico.homystack.com/cluster": "c", team: "x" }
 * labelsToWrite({ "nico.homystack.com/cluster": "c" }, want); // undefined
 * ```
 */
export function labelsToWrite(
  existing: Record<string, string> | undefined,
  desired: Record<string, string>,
): Record<string, string> | undefined {
  const stale = SOMETIMES_LABELS.filter((k) => existing?.[k] !== undefined && desired[k] === undefined);
  if (labelDrift(existing, desired).length === 0 && stale.length === 0) return undefined;
  const out = { ...existing, ...desired };
  for (const k of stale) delete out[k];
  return out;
}
