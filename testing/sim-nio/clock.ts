/**
 * The simulated NIO's clock: NIO v1's waits (cron ticks, Kubernetes' Job
 * back-off, the decommission Job's TTL) run faster by a factor, so a test
 * sees a `*\/30` schedule or seven failing attempts in seconds. Sim time
 * runs `60_000 / minuteMs` times as fast as real time, from the hour the
 * clock was made.
 *
 * @module
 */
import { type CronSchedule, nextCronTick, parseCron } from "../../lib/cron.ts";

export class SimClock {
  /** Sim milliseconds per real millisecond. */
  readonly scale: number;
  /** Where sim time and real time agree. */
  readonly #origin = Math.floor(Date.now() / 3_600_000) * 3_600_000;

  /** `minuteMs`: how many real milliseconds one minute of NIO's schedules, back-offs and TTLs lasts. */
  constructor(readonly minuteMs = 60_000) {
    if (!(minuteMs > 0)) throw new Error(`minuteMs must be positive: ${minuteMs}`);
    this.scale = 60_000 / minuteMs;
  }

  #sim(real: number): number {
    return this.#origin + (real - this.#origin) * this.scale;
  }

  /** Real milliseconds for `ms` of NIO's own time (a back-off, a TTL). */
  real(ms: number): number {
    return ms / this.scale;
  }

  /** The real time of the next tick of `schedule` after real time `after`; undefined for a bad or dead schedule. */
  nextTick(schedule: string, after: number): number | undefined {
    let parsed: CronSchedule;
    try {
      parsed = parseCron(schedule);
    } catch {
      return undefined;
    }
    const t = nextCronTick(parsed, new Date(this.#sim(after)));
    return t ? Math.ceil(this.#origin + (t.getTime() - this.#origin) / this.scale) : undefined;
  }

  /** The scheduled sim minute a real time stands for (CronJob names its Jobs after it). */
  minuteOf(real: number): number {
    return Math.floor(this.#sim(real) / 60_000);
  }
}

/** Kubernetes' Job back-off before retry `failures + 1`: 10 s doubling, at most 6 minutes (NIO's own time). */
export function jobBackoffMs(failures: number): number {
  return Math.min(10_000 * 2 ** Math.max(0, failures - 1), 6 * 60_000);
}

/** A stable extra duration for a run or apply, by its name, below `max`: nodes finish at different times. */
export function jitter(name: string, max: number): number {
  if (max <= 0) return 0;
  let h = 2166136261;
  for (const ch of name) h = Math.imul(h ^ ch.charCodeAt(0), 16777619);
  return (h >>> 0) % max;
}
