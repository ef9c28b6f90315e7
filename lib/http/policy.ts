/**
 * The one connection policy of NICO's HTTP servers, as pure choices over the
 * open connections: which one to close when there are too many, and which
 * ones to close when a request's bytes do not fit the memory budget.
 *
 * @module
 */
import type { ConnState, Phase } from "./conn.ts";

/** Limits of an HTTP server; `serveHttp` fills what is left out. */
export interface HttpLimits {
  /** TLS handshake plus the first request head, from connecting. */
  headerTimeoutMs: number;
  /** A kept-alive connection with no new request. */
  idleTimeoutMs: number;
  /** The whole body, from the end of its head. */
  bodyTimeoutMs: number;
  /** The handler's answer. */
  handlerTimeoutMs: number;
  /** Writing the whole answer: a client that does not read is cut off. */
  writeTimeoutMs: number;
  /** Open connections before one is closed to make room for a new one (the hard cap is twice that). */
  maxConnections: number;
  /** A connection younger than this is not closed to make room below the hard cap (a burst of real requests). */
  evictAfterMs: number;
  /** Largest body (413). */
  maxBodyBytes: number;
  /** Body and answer bytes held at once over all connections (503 past it). */
  maxInflightBytes: number;
}

/** Which connections make room for a new one first: those that never sent a request, then idle, then stalled ones. */
const EVICT_ORDER: Phase[] = ["head", "idle", "write", "body"];

/**
 * The connection to close so a new one fits, or `undefined`. Below the hard
 * cap only connections older than `evictAfterMs` qualify; at it any but
 * those in the handler. Within a phase the one in it longest goes first.
 *
 * @example
 * ```ts
 * import { connectionToEvict } from "./policy.ts";
 * const idle = { phase: "idle" as const, since: 0, opened: 0, held: 0, closed: false };
 * const busy = { phase: "handler" as const, since: 0, opened: 0, held: 9, closed: false };
 * connectionToEvict([busy, idle], 5_000, 1_000, false) === idle; // true
 * ```
 */
export function connectionToEvict(
  open: Iterable<ConnState>,
  now: number,
  evictAfterMs: number,
  hardCap: boolean,
): ConnState | undefined {
  let best: ConnState | undefined;
  const rank = (s: ConnState) => EVICT_ORDER.indexOf(s.phase);
  for (const s of open) {
    if (s.closed || rank(s) < 0) continue;
    if (!hardCap && now - s.opened < evictAfterMs) continue;
    if (!best || rank(s) < rank(best) || (rank(s) === rank(best) && s.since < best.since)) best = s;
  }
  return best;
}

/**
 * The connections to close so `bytes` more fit for `asking` under `max`, when
 * `used` are held: only connections holding more than `bytes` (so a small
 * request, such as the API server's, can always push out large ones, and
 * large ones can never push out a small one), largest first. Empty when
 * they would not make enough room.
 *
 * @example
 * ```ts
 * import { holdersToEvict } from "./policy.ts";
 * const big = { phase: "write" as const, since: 0, opened: 0, held: 3_000, closed: false };
 * const me = { phase: "head" as const, since: 0, opened: 0, held: 0, closed: false };
 * holdersToEvict([big, me], me, 100, 3_000, 3_000).length; // 1
 * ```
 */
export function holdersToEvict(
  open: Iterable<ConnState>,
  asking: ConnState,
  bytes: number,
  used: number,
  max: number,
): ConnState[] {
  const candidates = [...open].filter((s) => s !== asking && !s.closed && s.held > bytes).sort((a, b) =>
    b.held - a.held || a.since - b.since
  );
  const out: ConnState[] = [];
  let free = max - (used - asking.held);
  for (const s of candidates) {
    if (free >= bytes) break;
    out.push(s);
    free += s.held;
  }
  return free >= bytes ? out : [];
}
