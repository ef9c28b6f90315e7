/**
 * The shape of an entry of the condition registry (`mod.ts`): what a
 * condition type is to kstatus, and for each of its reasons the status it is
 * written with, what it means and how urgently it is written.
 *
 * @module
 */

/** A condition's status. */
export type Status = "True" | "False" | "Unknown";

/**
 * What a reason says, as kstatus-based tools (Flux, Argo CD, `kubectl wait`) and `nico describe` read it:
 * `fine`, nothing to do; `progress`, NICO is at work and it clears by itself; `stalled`, NICO cannot go on until
 * the user acts (it comes with `Stalled=True`); `attention`, not fine but NICO goes on (a health problem, an
 * error it retries, a hold or a refusal, which the message explains).
 */
export type Meaning = "fine" | "progress" | "attention" | "stalled";

/**
 * When a status whose condition takes this reason (from another one) is written: `now`, in the pass that finds
 * it; `later`, coalesced with other progress for at most `STATUS_DELAY_MS` (core/status/write.ts).
 */
export type Urgency = "now" | "later";

/**
 * What the type is to kstatus: `summary` (Ready), `progress` (Reconciling: in progress while True), `stalled`
 * (Stalled: failed while True), or `detail` (for people and `nico describe`; kstatus does not read it).
 */
export type Role = "summary" | "progress" | "stalled" | "detail";

/** What the docs say of a reason: what it means, and what the user does. */
export interface ReasonText {
  means: string;
  todo: string;
}

/** One reason of a condition type. */
export interface ReasonSpec<S extends Status = Status, M extends Meaning = Meaning> extends ReasonText {
  /** The one status NICO writes with this reason. */
  status: S;
  meaning: M;
  urgency: Urgency;
}

/** One condition type. */
export interface TypeSpec {
  role: Role;
  /**
   * `positive`: True is the good news (Ready, ControlPlaneReady, …); `negative`: True is the news, work or
   * trouble (Reconciling, Stalled, Paused, …). What a status alone says when its reason is not known.
   */
  polarity: "positive" | "negative";
  /** Turning True, or ceasing to be True, is written at once (readers wait on it). */
  watched: boolean;
  /** What the condition is about, in one line. */
  about: string;
  reasons: Readonly<Record<string, ReasonSpec>>;
}

/**
 * One reason, as the registry lists it.
 *
 * @example
 * ```ts
 * import { reason } from "./types.ts";
 * reason("True", "fine", "now", "every node is Ready", "nothing").meaning; // "fine"
 * ```
 */
export function reason<S extends Status, M extends Meaning>(
  status: S,
  meaning: M,
  urgency: Urgency,
  means: string,
  todo: string,
): ReasonSpec<S, M> {
  return { status, meaning, urgency, means, todo };
}

/**
 * A group of reasons described once and written under several types (a problem is in `Ready` and `Stalled`),
 * each with the same status, meaning and urgency.
 *
 * @example
 * ```ts
 * import { written } from "./types.ts";
 * const group = written({ Boom: { means: "it broke", todo: "fix it" } }, "False", "stalled", "now");
 * group.Boom.status; // "False"
 * ```
 */
export function written<G extends Record<string, ReasonText>, S extends Status, M extends Meaning>(
  group: G,
  status: S,
  meaning: M,
  urgency: Urgency,
): { [K in keyof G]: ReasonSpec<S, M> } {
  const out: Record<string, ReasonSpec<S, M>> = {};
  for (const [name, text] of Object.entries(group)) out[name] = { status, meaning, urgency, ...text };
  return out as { [K in keyof G]: ReasonSpec<S, M> };
}

/**
 * The same group, described by reference to the type that explains it (`as for X in Ready`).
 *
 * @example
 * ```ts
 * import { asIn } from "./types.ts";
 * asIn({ Boom: { means: "it broke", todo: "fix it" } }, "Ready", "NICO stops").Boom.todo; // "as for `Boom` in `Ready`"
 * ```
 */
export function asIn<G extends Record<string, ReasonText>>(
  group: G,
  type: string,
  means: string,
): { [K in keyof G]: ReasonText } {
  const out: Record<string, ReasonText> = {};
  for (const name of Object.keys(group)) out[name] = { means, todo: `as for \`${name}\` in \`${type}\`` };
  return out as { [K in keyof G]: ReasonText };
}
