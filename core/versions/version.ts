/**
 * Kubernetes versions as NICO reads and writes them: `spec.version` (`1.31`
 * or `1.31.4`, a leading `v` allowed), what a Node reports
 * (`status.nodeInfo.kubeletVersion`, such as `v1.31.4+k3s1`) and what an API
 * server's `/version` answers (`gitVersion`). Pure.
 *
 * @module
 */
import { SPEC_VERSION_PATTERN } from "../../crds/version.ts";

/** A Kubernetes version: always major 1; the patch is absent when only a minor was asked for. */
export interface KubeVersion {
  minor: number;
  patch?: number | undefined;
}

/** What a component may report: `v1.31.4`, `1.31.4+k3s1`, `v1.32.0-rc.1`, `v1.30.2-eks-1234`. */
const REPORTED = /^v?1\.(0|[1-9]\d{0,2})\.(0|[1-9]\d{0,3})(?:[-+][0-9A-Za-z.+-]*)?$/;

/**
 * Reads `spec.version`; undefined when it is not a Kubernetes version as a spec writes one (crds/version.ts).
 *
 * @example
 * ```ts
 * import { parseSpecVersion } from "./version.ts";
 * parseSpecVersion("1.31"); // { minor: 31 }
 * parseSpecVersion("v1.31.4"); // { minor: 31, patch: 4 }
 * parseSpecVersion("1.31.4+k3s1"); // undefined
 * parseSpecVersion("2.0"); // undefined
 * ```
 */
export function parseSpecVersion(text: string): KubeVersion | undefined {
  const m = SPEC_VERSION_PATTERN.exec(text.trim());
  if (!m) return undefined;
  return m[2] === undefined ? { minor: Number(m[1]) } : { minor: Number(m[1]), patch: Number(m[2]) };
}

/**
 * Reads a version a component reports (kubelet, API server); undefined when it is not one.
 *
 * @example
 * ```ts
 * import { parseReportedVersion } from "./version.ts";
 * parseReportedVersion("v1.31.4+k3s1"); // { minor: 31, patch: 4 }
 * parseReportedVersion("v1.32.0-rc.1"); // { minor: 32, patch: 0 }
 * parseReportedVersion("unknown"); // undefined
 * ```
 */
export function parseReportedVersion(text: string | undefined): KubeVersion | undefined {
  const m = text === undefined ? null : REPORTED.exec(text.trim());
  return m ? { minor: Number(m[1]), patch: Number(m[2]) } : undefined;
}

/**
 * `1.31` or `1.31.4`, as NICO writes a version (status, `cluster.nix`, messages).
 *
 * @example
 * ```ts
 * import { formatVersion } from "./version.ts";
 * formatVersion({ minor: 31 }); // "1.31"
 * formatVersion({ minor: 31, patch: 4 }); // "1.31.4"
 * ```
 */
export function formatVersion(v: KubeVersion): string {
  return v.patch === undefined ? `1.${v.minor}` : `1.${v.minor}.${v.patch}`;
}

/**
 * Orders versions; a version without a patch sorts before every patch of its minor.
 *
 * @example
 * ```ts
 * import { compareVersions } from "./version.ts";
 * compareVersions({ minor: 30, patch: 9 }, { minor: 31 }); // -1
 * compareVersions({ minor: 31 }, { minor: 31, patch: 0 }); // -1
 * compareVersions({ minor: 31, patch: 2 }, { minor: 31, patch: 2 }); // 0
 * ```
 */
export function compareVersions(a: KubeVersion, b: KubeVersion): number {
  if (a.minor !== b.minor) return Math.sign(a.minor - b.minor);
  return Math.sign((a.patch ?? -1) - (b.patch ?? -1));
}

/**
 * Whether a reported version is the one asked for: the same minor, and the same patch when one was asked.
 *
 * @example
 * ```ts
 * import { satisfies } from "./version.ts";
 * satisfies({ minor: 31, patch: 4 }, { minor: 31 }); // true
 * satisfies({ minor: 31, patch: 4 }, { minor: 31, patch: 5 }); // false
 * satisfies({ minor: 30, patch: 9 }, { minor: 31 }); // false
 * ```
 */
export function satisfies(reported: KubeVersion, asked: KubeVersion): boolean {
  return reported.minor === asked.minor && (asked.patch === undefined || reported.patch === asked.patch);
}

/**
 * The lowest of `versions` (undefined for none).
 *
 * @example
 * ```ts
 * import { lowest } from "./version.ts";
 * lowest([{ minor: 31, patch: 2 }, { minor: 30, patch: 9 }]); // { minor: 30, patch: 9 }
 * lowest([]); // undefined
 * ```
 */
export function lowest(versions: readonly KubeVersion[]): KubeVersion | undefined {
  return versions.reduce<KubeVersion | undefined>((lo, v) => (!lo || compareVersions(v, lo) < 0 ? v : lo), undefined);
}

/**
 * The highest of `versions` (undefined for none).
 *
 * @example
 * ```ts
 * import { highest } from "./version.ts";
 * highest([{ minor: 31, patch: 2 }, { minor: 30, patch: 9 }]); // { minor: 31, patch: 2 }
 * ```
 */
export function highest(versions: readonly KubeVersion[]): KubeVersion | undefined {
  return versions.reduce<KubeVersion | undefined>((hi, v) => (!hi || compareVersions(v, hi) > 0 ? v : hi), undefined);
}
