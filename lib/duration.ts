/**
 * Durations as NICO's flags, spec fields and messages write them: a whole
 * number and one unit, `ms`, `s`, `m` or `h` (`500ms`, `90s`, `30m`, `2h`).
 *
 * @module
 */

const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 } as const;

/** A unit of a duration. */
export type DurationUnit = keyof typeof UNIT_MS;

/** The syntax for the given units (default all): one whole number, one unit. */
export function durationPattern(units: readonly DurationUnit[] = ["ms", "s", "m", "h"]): RegExp {
  return new RegExp(`^\\d+(${units.join("|")})$`);
}

/**
 * Milliseconds of a duration such as `90s`; `undefined` when it is not one.
 *
 * @example
 * ```ts
 * import { parseDuration } from "./duration.ts";
 * parseDuration("90s"); // 90000
 * parseDuration("500ms"); // 500
 * ```
 */
export function parseDuration(text: string): number | undefined {
  const m = /^(\d+)(ms|s|m|h)$/.exec(text);
  if (!m) return undefined;
  return Number(m[1]) * UNIT_MS[m[2] as DurationUnit];
}

/**
 * `ms` written in the largest unit that keeps it whole, so it reads back
 * as written: `90000` is `90s`, `1800000` is `30m`.
 *
 * @example
 * ```ts
 * import { formatDuration } from "./duration.ts";
 * formatDuration(3000); // "3s"
 * formatDuration(7_200_000); // "2h"
 * ```
 */
export function formatDuration(ms: number): string {
  const whole = Math.max(0, Math.round(ms));
  for (const unit of ["h", "m", "s"] as const) {
    if (whole > 0 && whole % UNIT_MS[unit] === 0) return `${whole / UNIT_MS[unit]}${unit}`;
  }
  return `${whole}ms`;
}
