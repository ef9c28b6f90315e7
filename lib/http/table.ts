/**
 * The open connections of `serveHttp` and the bytes they hold: one table,
 * one budget, and the one way a connection goes ({@link ConnectionTable.drop}),
 * which releases what it held at once.
 *
 * @module
 */
import type { Budget, ByteConn, ConnState } from "./conn.ts";
import type { Link } from "./front.ts";
import { connectionToEvict, holdersToEvict, type HttpLimits } from "./policy.ts";

function closeQuietly(c: { close(): void } | undefined): void {
  try {
    c?.close();
  } catch { /* already closed */ }
}

/** Open connections by state, with the memory budget they share. */
export class ConnectionTable implements Budget {
  readonly links = new Map<ConnState, Link>();
  /** Links by the local port of their pipe's inner end, which the TLS side sees as the remote port. */
  readonly byPipePort = new Map<number, Link>();
  #used = 0;
  constructor(private readonly lim: HttpLimits) {}

  /** Body and answer bytes held now. */
  get used(): number {
    return this.#used;
  }

  get size(): number {
    return this.links.size;
  }

  /** Room for a new connection: closes the one the policy picks; false when the hard cap leaves none. */
  makeRoom(now: number): boolean {
    if (this.links.size < this.lim.maxConnections) return true;
    const hard = this.links.size >= 2 * this.lim.maxConnections;
    const victim = connectionToEvict(this.links.keys(), now, this.lim.evictAfterMs, hard);
    if (victim) this.drop(this.links.get(victim)!);
    return victim !== undefined || !hard;
  }

  /** A new connection's link, in the table. */
  add(outer: Deno.Conn, now: number): Link {
    const state: ConnState = { phase: "head", since: now, opened: now, held: 0, closed: false };
    const link: Link = { outer, state };
    this.links.set(state, link);
    return link;
  }

  /** Closes every side of `link` and releases what it held. */
  drop(link: Link): void {
    clearTimeout(link.timer);
    this.hold(link.state, 0);
    link.state.closed = true;
    closeQuietly(link.http);
    closeQuietly(link.inner);
    closeQuietly(link.outer);
    this.links.delete(link.state);
    if (link.pipePort) this.byPipePort.delete(link.pipePort);
  }

  reserve(state: ConnState, bytes: number): boolean {
    const max = this.lim.maxInflightBytes;
    if (this.#used - state.held + bytes > max) {
      for (const s of holdersToEvict(this.links.keys(), state, bytes, this.#used, max)) this.drop(this.links.get(s)!);
    }
    if (this.#used - state.held + bytes > max) return false;
    this.hold(state, bytes);
    return true;
  }

  hold(state: ConnState, bytes: number): void {
    const n = state.closed ? 0 : bytes;
    this.#used += n - state.held;
    state.held = n;
  }
}

/** TLS connections that arrived before the front recorded their pipe port (the two race), kept a second. */
export class EarlyArrivals {
  #waiting = new Map<number, { conn: ByteConn; timer: ReturnType<typeof setTimeout> }>();

  put(pipePort: number, conn: ByteConn): void {
    const timer = setTimeout(() => {
      this.#waiting.delete(pipePort);
      closeQuietly(conn);
    }, 1_000);
    this.#waiting.set(pipePort, { conn, timer });
  }

  take(pipePort: number): ByteConn | undefined {
    const w = this.#waiting.get(pipePort);
    if (!w) return undefined;
    clearTimeout(w.timer);
    this.#waiting.delete(pipePort);
    return w.conn;
  }

  clear(): void {
    for (const { conn, timer } of this.#waiting.values()) {
      clearTimeout(timer);
      closeQuietly(conn);
    }
    this.#waiting.clear();
  }
}
