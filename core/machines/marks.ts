/**
 * The out-of-service mark on a Machine ({@link REMEDIATED_ANNOTATION}):
 * NICO writes one when it remediates a node, a person may write one by hand,
 * and only a person removes it. Pure.
 *
 * @module
 */
import { type Plane, planeOfRole, REMEDIATED_ANNOTATION, roleOfPlane } from "../contract/labels.ts";
import type { Machine } from "../contract/nio.ts";
import { timestamp } from "../../lib/kube/meta.ts";

export { REMEDIATED_ANNOTATION } from "../contract/labels.ts";

/** What NICO's own mark says: which cluster took the Machine out of which plane, when, and why. */
export interface Mark {
  cluster: string;
  plane: Plane;
  at: Date;
  reason: string;
  message: string;
}

/**
 * The annotation value of a mark: readable, and parsed back by {@link parseMark}.
 *
 * @example
 * ```ts
 * import { markValue } from "./marks.ts";
 * markValue({ cluster: "prod", plane: "dataPlane", at: new Date("2026-01-01T00:05:00Z"), reason: "NodeNotReady", message: "Node w-1 not Ready for 5m" });
 * // "prod/worker at 2026-01-01T00:05:00Z: NodeNotReady: Node w-1 not Ready for 5m"
 * ```
 */
export function markValue(m: Mark): string {
  return `${m.cluster}/${roleOfPlane(m.plane)} at ${timestamp(m.at)}: ${m.reason}: ${m.message}`;
}

const MARK = /^([a-z0-9][-a-z0-9.]*)\/(control-plane|worker) at (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ): ([A-Za-z]+): (.*)$/s;

/**
 * NICO's mark in an annotation value; `undefined` for a person's own words.
 *
 * @example
 * ```ts
 * import { parseMark } from "./marks.ts";
 * parseMark("prod/control-plane at 2026-01-01T00:05:00Z: MachineUnreachable: NIO cannot reach cp-2")?.plane; // "controlPlane"
 * parseMark("dead PSU, ticket 4711"); // undefined
 * ```
 */
export function parseMark(value: string): Mark | undefined {
  const m = MARK.exec(value);
  if (!m) return undefined;
  const at = new Date(m[3]!);
  if (Number.isNaN(at.getTime())) return undefined;
  return { cluster: m[1]!, plane: planeOfRole(m[2]), at, reason: m[4]!, message: m[5]! };
}

/**
 * The out-of-service mark a Machine carries: its text, and NICO's reading of it when NICO wrote it.
 *
 * @example
 * ```ts
 * import { markOf } from "./marks.ts";
 * markOf({ metadata: { name: "w-1", annotations: { "nico.homystack.com/remediated": "by hand" } }, spec: {} })?.text; // "by hand"
 * ```
 */
export function markOf(m: Machine | undefined): { text: string; mark?: Mark | undefined } | undefined {
  const text = m?.metadata.annotations?.[REMEDIATED_ANNOTATION];
  if (text === undefined) return undefined;
  return { text, mark: parseMark(text) };
}
