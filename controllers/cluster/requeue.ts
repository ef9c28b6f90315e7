/**
 * When to look at a cluster again, as values: each phase answers the
 * {@link Requeue} it wishes for (if any), the node deadlines add theirs, and
 * the pass takes the soonest.
 *
 * @module
 */
import type { NodeReport } from "../../core/nodes/readiness.ts";
import { RUN_SOON_GRACE_MS } from "../../core/nodes/runs.ts";
import { KUBELET_POST_WINDOW_MS } from "../../core/nodes/posted.ts";
import type { ClusterScope } from "./scope.ts";
import { type Member, reportsOf } from "./view.ts";

/** Look again this soon while a drain is under way (PodDisruptionBudget changes raise no event NICO sees). */
export const DRAIN_REQUEUE_MS = 5_000;
/** Look again this often while something is in flight, to notice deadlines. */
export const BUSY_REQUEUE_MS = 60_000;
/** Look again this often when all is well: kubeconfig renewal, nothing else. */
export const IDLE_REQUEUE_MS = 12 * 60 * 60_000;

/** A wish to look at the cluster again no later than `after` milliseconds from now, and why. */
export interface Requeue {
  after: number;
  why: string;
}

/**
 * The soonest of the wishes; undefined when there is none.
 *
 * @example
 * ```ts
 * soonest({ after: 5_000, why: "draining" }, undefined, { after: 1_000, why: "next second" });
 * // => { after: 1_000, why: "next second" }
 * ```
 */
export function soonest(...wishes: (Requeue | undefined)[]): Requeue | undefined {
  let best: Requeue | undefined;
  for (const w of wishes) if (w && (!best || w.after < best.after)) best = w;
  return best;
}

/** What {@link nodeDeadlines} needs to know of the pass. */
export interface DeadlineInput {
  nodes: NodeReport[];
  /** Nodes could not be rendered: the pass looks again while it is so. */
  blocked: boolean;
  /** When NICO last changed each node's configuration, by machine (from its facts record). */
  changedAt: ReadonlyMap<string, Date>;
  /** How long NIO v1 may take to fire each node's run by itself, by machine (default {@link RUN_SOON_GRACE_MS}). */
  runGraceMs?: ReadonlyMap<string, number>;
  now: Date;
  timeoutMs: number;
}

/** When the nodes call for a look: by the earliest node deadline while nodes are in flight, rarely when all is settled. */
export function nodeDeadlines(i: DeadlineInput): Requeue {
  const inFlight = i.nodes.filter((n) => n.state !== "Ready" && n.state !== "Failed");
  if (!inFlight.length && !i.blocked) return { after: IDLE_REQUEUE_MS, why: "settled" };
  let next: Requeue = { after: BUSY_REQUEUE_MS, why: "in flight" };
  for (const n of inFlight) {
    const changed = i.changedAt.get(n.machine);
    if (changed) {
      const at = Math.max(1000, changed.getTime() + i.timeoutMs - i.now.getTime() + 1000);
      next = soonest(next, { after: at, why: `node ${n.machine} deadline` })!;
    }
    // NIO v1 ran nothing yet: look again when NICO may ask it for a run (core/nodes/runs.ts scheduleFor).
    const grace = i.runGraceMs?.get(n.machine) ?? RUN_SOON_GRACE_MS;
    const askAt = changed && changed.getTime() + grace - i.now.getTime();
    if (n.reason === "WaitingForRun" && askAt && askAt > 0) {
      next = soonest(next, { after: askAt + 50, why: `node ${n.machine} may ask for a run` })!;
    }
    // Its kubelet has posted nothing since its switch: the Node counts as it stands once the window is over.
    const since = n.appliedAt ?? changed;
    const silentUntil = since && since.getTime() + Math.min(KUBELET_POST_WINDOW_MS, i.timeoutMs);
    if (n.reason === "KubeletNotPosted" && silentUntil && silentUntil > i.now.getTime()) {
      const after = silentUntil - i.now.getTime() + 50;
      next = soonest(next, { after, why: `node ${n.machine}'s kubelet post window` })!;
    }
  }
  return next;
}

/**
 * When to look at the cluster again after a normal pass: the soonest of the phases' wishes and the deadlines of the
 * members as the pass ended (none while nodes cannot be rendered: `blocked`).
 */
export function nextLook(
  s: ClusterScope,
  end: { blocked: boolean; members: readonly Member[] },
  wishes: (Requeue | undefined)[],
): Requeue {
  const changedAt = new Map<string, Date>();
  const runGraceMs = new Map<string, number>();
  for (const { facts } of end.members) {
    if (facts.changedAt) changedAt.set(facts.machine, facts.changedAt);
    if (facts.runGraceMs !== undefined) runGraceMs.set(facts.machine, facts.runGraceMs);
  }
  const deadlines = nodeDeadlines({
    nodes: reportsOf(end.members),
    blocked: end.blocked,
    changedAt,
    runGraceMs,
    now: s.now,
    timeoutMs: s.timeoutMs,
  });
  return soonest(deadlines, ...wishes)!;
}

export { MAX_RACES, RACE_REQUEUE_MS, Races } from "./races.ts";
