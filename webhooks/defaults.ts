/**
 * Defaulting of a KubernetesCluster as a JSON Patch: NICO's finalizer on
 * CREATE (so the reconciler needs no extra write and pass to add it),
 * `spec.gitRepo` from the operator's default repository, and every default
 * the zod schema applies (fullInstall, dataPlane, the endpoint port). Pure
 * and idempotent: an object that already has them gets no patch.
 *
 * @module
 */
import { isRecord } from "../lib/encoding.ts";
import { addFinalizer, escapePointer, type JsonPatchOp } from "../lib/kube/patch.ts";
import { KubernetesClusterSpec } from "../crds/kubernetescluster.ts";
import { FINALIZER } from "../core/contract/labels.ts";
import type { Operation } from "./admission.ts";

/** Options of {@link defaultingPatch}. */
export interface DefaultingOptions {
  /** Written to `spec.gitRepo` when the cluster names none. */
  defaultGitRepo?: string | undefined;
  /** The admission operation; NICO's finalizer is added on CREATE only (an update never re-adds one being removed). */
  operation?: Operation | undefined;
}

/** `add` operations for keys of `output` (the parsed spec) that `input` lacks, recursing into objects. */
function addedDefaults(
  input: Record<string, unknown>,
  output: Record<string, unknown>,
  pointer: string,
): JsonPatchOp[] {
  const ops: JsonPatchOp[] = [];
  for (const [key, value] of Object.entries(output)) {
    if (value === undefined) continue;
    const path = `${pointer}/${escapePointer(key)}`;
    if (!Object.hasOwn(input, key)) ops.push({ op: "add", path, value });
    else if (isRecord(input[key]) && isRecord(value)) ops.push(...addedDefaults(input[key], value, path));
  }
  return ops;
}

/** The JSON Patch that defaults `object`; empty when there is nothing to do. */
export function defaultingPatch(object: unknown, opts: DefaultingOptions = {}): JsonPatchOp[] {
  if (!isRecord(object) || !isRecord(object.spec)) return [];
  const spec = object.spec;
  const ops: JsonPatchOp[] = [];
  if (opts.operation === "CREATE" && isRecord(object.metadata)) {
    const finalizers = object.metadata.finalizers;
    ops.push(...addFinalizer(Array.isArray(finalizers) ? finalizers : undefined, FINALIZER));
  }
  if (spec.gitRepo === undefined && opts.defaultGitRepo) {
    ops.push({ op: "add", path: "/spec/gitRepo", value: opts.defaultGitRepo });
  }
  // Schema defaults only for a spec the schema accepts: validation refuses the rest with its reasons.
  const parsed = KubernetesClusterSpec.safeParse(spec);
  if (parsed.success) {
    ops.push(...addedDefaults(spec, parsed.data as Record<string, unknown>, "/spec"));
  }
  return ops;
}
