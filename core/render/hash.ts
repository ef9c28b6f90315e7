/**
 * Hashes of what NICO renders: a node's spec (`nico.homystack.com/spec-hash`) and the cluster-wide revision
 * being rolled out. Pure; core/render/desired.ts re-exports them.
 *
 * @module
 */
import { createHash } from "node:crypto";
import type { NixosConfigurationSpec } from "../contract/nio.ts";

/**
 * A stable hash of a rendered spec: sorted keys, SHA-256, first 16 hex digits.
 *
 * @example
 * ```ts
 * import { specHash } from "./hash.ts";
 * const spec = { machineRef: { name: "w-1" }, gitRepo: "https://127.0.0.1/nixos.git", flake: "#w-1", onRemoveFlake: "#minimal", fullInstall: false, additionalFiles: [] };
 * const { machineRef, ...rest } = spec;
 * specHash(spec).length; // 16
 * specHash({ ...rest, machineRef }) === specHash(spec); // true: key order does not matter
 * ```
 */
export function specHash(spec: NixosConfigurationSpec): string {
  // The schedule is when NIO runs, not what the host runs: NICO changes it without a rollout.
  const { dayTwoSchedule: _schedule, ...content } = spec;
  const canonical = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(canonical)
      : v && typeof v === "object"
      ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, canonical((v as Record<string, unknown>)[k])]))
      : v;
  return createHash("sha256").update(JSON.stringify(canonical(content))).digest("hex").slice(0, 16);
}

/**
 * A short hash of every node's spec hash: the cluster-wide revision being rolled out.
 *
 * @example
 * ```ts
 * import { clusterHash } from "./hash.ts";
 * clusterHash(["b", "a"]) === clusterHash(["a", "b"]); // true: the order of nodes does not matter
 * ```
 */
export function clusterHash(nodeHashes: string[]): string {
  return createHash("sha256").update([...nodeHashes].sort().join(",")).digest("hex").slice(0, 12);
}
