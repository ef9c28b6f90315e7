/**
 * Whether a Machine may serve a cluster, and why not. Pure; the selection
 * (core/machines/selection.ts) and the webhook decide with it.
 *
 * @module
 */
import { CLUSTER_LABEL, REMEDIATED_ANNOTATION } from "../contract/labels.ts";
import { type ClusterRef, isOwnedBy } from "../contract/owner.ts";
import { type Machine, machineAddress, type NixosConfiguration } from "../contract/nio.ts";
import { normalizeHost } from "../contract/hosts.ts";
import { configName, configNameFits, legacyConfigName, MAX_NAME } from "../contract/names.ts";

export type UnavailableReason =
  | "NotFound"
  | "ClaimedByOther"
  | "TargetedByOther"
  | "ConfiguredByOther"
  | "NotDiscoverable"
  | "OutOfService"
  | "InOtherPlane"
  | "NameTooLong"
  | "InvalidHost";

export type Availability = { ok: true } | { ok: false; reason: UnavailableReason; message: string };

/**
 * Whether `machine` may serve `cluster`: it exists, is not claimed or
 * targeted or configured by anyone else, is not out of service (a
 * {@link REMEDIATED_ANNOTATION} mark), and NIO can reach it.
 *
 * @example
 * ```ts
 * import { availability } from "./selection.ts";
 * const cluster = { name: "c", namespace: "ns" };
 * const w1 = { metadata: { name: "w-1", namespace: "ns" }, spec: { host: "127.0.0.1" }, status: { discoverable: true } };
 * availability("w-1", w1, cluster, []); // { ok: true }
 * availability("w-2", undefined, cluster, []); // { ok: false, reason: "NotFound", message: "Machine w-2 does not exist in namespace ns" }
 * ```
 */
export function availability(
  name: string,
  machine: Machine | undefined,
  cluster: ClusterRef,
  configurations: NixosConfiguration[],
): Availability {
  if (!machine) {
    return {
      ok: false,
      reason: "NotFound",
      message: `Machine ${name} does not exist in namespace ${cluster.namespace}`,
    };
  }
  const address = machineAddress(machine);
  const host = address === undefined ? undefined : normalizeHost(address);
  if (host?.error) {
    return { ok: false, reason: "InvalidHost", message: `Machine ${name}: its host ${host.error}` };
  }
  const claim = machine.metadata.labels?.[CLUSTER_LABEL];
  if (claim && claim !== cluster.name) {
    return { ok: false, reason: "ClaimedByOther", message: `Machine ${name} is claimed by cluster ${claim}` };
  }
  const other = configurations.find((c) => c.spec?.machineRef?.name === name && !isOwnedBy(c, cluster));
  if (other) {
    return {
      ok: false,
      reason: "TargetedByOther",
      message: `Machine ${name} is already the target of NixosConfiguration ${other.metadata.name}`,
    };
  }
  const applied = machine.status?.appliedConfiguration;
  // For one Machine the legacy name is unambiguous too: `<c1>-<m>` equals `<c2>-<m>` only when c1 is c2.
  const ownName = (n: string) =>
    n === configName(cluster.name, name) || n === legacyConfigName(cluster.name, name) ||
    configurations.some((c) => c.metadata.name === n && c.spec?.machineRef?.name === name && isOwnedBy(c, cluster));
  if (machine.status?.hasConfiguration && applied && !ownName(applied)) {
    return {
      ok: false,
      reason: "ConfiguredByOther",
      message: `Machine ${name} is configured by NixosConfiguration ${applied}`,
    };
  }
  if (
    !configNameFits(cluster.name, name) &&
    !configurations.some((c) => isOwnedBy(c, cluster) && c.spec?.machineRef?.name === name)
  ) {
    return {
      ok: false,
      reason: "NameTooLong",
      message:
        `Machine ${name}: its configuration name ${cluster.name}.${name} would be longer than ${MAX_NAME} characters; use a shorter cluster or Machine name`,
    };
  }
  const mark = machine.metadata.annotations?.[REMEDIATED_ANNOTATION];
  if (mark !== undefined) {
    return {
      ok: false,
      reason: "OutOfService",
      message: `Machine ${name} is out of service (${REMEDIATED_ANNOTATION}: ${mark || "set"}); ` +
        "remove the annotation once the host is repaired to use it again",
    };
  }
  if (machine.status?.discoverable !== true) {
    return {
      ok: false,
      reason: "NotDiscoverable",
      message: `Machine ${name} is not discoverable: NIO cannot reach it`,
    };
  }
  return { ok: true };
}

/** Reasons that take a Machine away from a cluster even when it is already a member. */
export const LOSES_MEMBERSHIP = new Set<UnavailableReason>(["NotFound", "ClaimedByOther", "TargetedByOther"]);
