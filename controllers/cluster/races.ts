/**
 * Lost races, counted per cluster and looked at again after a growing delay. Kept apart from requeue.ts, which
 * reads the scope: the cluster's memory holds one of these, and the scope holds the memory.
 *
 * @module
 */
import { ExponentialBackoff } from "../../lib/runtime/ratelimit.ts";

/** Look again this soon after losing a race (doubling while it repeats): the cache catches up. */
export const RACE_REQUEUE_MS = 500;
/** Races in a row after which a race is an error the user sees (a cache that does not catch up). */
export const MAX_RACES = 6;

/**
 * Lost races in a row, per cluster, rate limited: each lost race looks again
 * after twice the delay of the one before; once {@link MAX_RACES} are lost in
 * a row, a race is a problem like any other.
 *
 * @example
 * ```ts
 * const races = new Races();
 * races.lost("ns/c"); // => { after: 500, why: "lost a race (1 in a row)" }
 * races.lost("ns/c"); // => { after: 1000, why: "lost a race (2 in a row)" }
 * races.forget("ns/c");
 * ```
 */
export class Races {
  readonly #backoff = new ExponentialBackoff({ baseMs: RACE_REQUEUE_MS });

  /** Counts a lost race of `key`: answers when to look again, or undefined when it is one race too many. */
  lost(key: string): { after: number; why: string } | undefined {
    const inARow = this.#backoff.retries(key) + 1;
    if (inARow >= MAX_RACES) return undefined;
    return { after: this.#backoff.when(key), why: `lost a race (${inARow} in a row)` };
  }

  /** `key` did not race this time: its next lost race starts from the first delay again. */
  forget(key: string): void {
    this.#backoff.forget(key);
  }
}
