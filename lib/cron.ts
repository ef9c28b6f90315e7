/**
 * Five-field cron schedules as a Kubernetes CronJob reads them (minute, hour,
 * day of month, month, day of week; `*`, `a-b`, `/step`, lists, names such as
 * `mon` or `jan`, and the macros `@hourly` … `@yearly`), evaluated in UTC or
 * in the zone a leading `TZ=`/`CRON_TZ=` names when it is `UTC`/`Etc/UTC`.
 * Enough to say when a schedule next fires; nothing here runs anything.
 *
 * @module
 */

/** A parsed schedule: the allowed values of each field. */
export interface CronSchedule {
  minutes: Set<number>;
  hours: Set<number>;
  days: Set<number>;
  months: Set<number>;
  weekdays: Set<number>;
  /** Day of month and day of week were both restricted: either may match (cron's rule). */
  eitherDay: boolean;
}

const MACROS: Record<string, string> = {
  "@yearly": "0 0 1 1 *",
  "@annually": "0 0 1 1 *",
  "@monthly": "0 0 1 * *",
  "@weekly": "0 0 * * 0",
  "@daily": "0 0 * * *",
  "@midnight": "0 0 * * *",
  "@hourly": "0 * * * *",
};

const MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
const WEEKDAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

interface FieldSpec {
  name: string;
  min: number;
  max: number;
  names?: string[];
  namesFrom?: number;
}

const FIELDS: FieldSpec[] = [
  { name: "minute", min: 0, max: 59 },
  { name: "hour", min: 0, max: 23 },
  { name: "day of month", min: 1, max: 31 },
  { name: "month", min: 1, max: 12, names: MONTHS, namesFrom: 1 },
  { name: "day of week", min: 0, max: 7, names: WEEKDAYS, namesFrom: 0 },
];

function value(text: string, f: FieldSpec): number {
  const named = f.names?.indexOf(text.toLowerCase()) ?? -1;
  if (named >= 0) return named + (f.namesFrom ?? 0);
  if (!/^\d+$/.test(text)) throw new Error(`${f.name}: ${JSON.stringify(text)} is not a number`);
  const n = Number(text);
  if (n < f.min || n > f.max) throw new Error(`${f.name}: ${n} is outside ${f.min}-${f.max}`);
  return n;
}

function field(text: string, f: FieldSpec): Set<number> {
  const out = new Set<number>();
  for (const part of text.split(",")) {
    const [range, stepText] = part.split("/") as [string, string | undefined];
    const step = stepText === undefined ? 1 : Number(stepText);
    if (!Number.isInteger(step) || step < 1) throw new Error(`${f.name}: bad step in ${JSON.stringify(part)}`);
    let lo: number;
    let hi: number;
    if (range === "*" || range === "?") {
      [lo, hi] = [f.min, f.max];
    } else if (range.includes("-")) {
      const [a, b] = range.split("-") as [string, string];
      [lo, hi] = [value(a, f), value(b, f)];
      if (lo > hi) throw new Error(`${f.name}: range ${JSON.stringify(range)} runs backwards`);
    } else {
      lo = value(range, f);
      hi = stepText === undefined ? lo : f.max;
    }
    for (let n = lo; n <= hi; n += step) out.add(n);
  }
  return out;
}

/**
 * Parses a schedule; throws with the field at fault.
 *
 * @example
 * ```ts
 * import { parseCron } from "./cron.ts";
 * [...parseCron("*\/30 * * * *").minutes]; // [0, 30]
 * ```
 */
export function parseCron(schedule: string): CronSchedule {
  let text = schedule.trim();
  const tz = /^(?:CRON_)?TZ=(\S+)\s+/.exec(text);
  if (tz) {
    if (!/^(Etc\/)?UTC$/.test(tz[1]!)) throw new Error(`time zone ${tz[1]} is not supported here (UTC only)`);
    text = text.slice(tz[0].length);
  }
  text = MACROS[text] ?? text;
  const parts = text.split(/\s+/);
  if (parts.length !== 5) throw new Error(`expected 5 fields (minute hour day month weekday), found ${parts.length}`);
  const [minutes, hours, days, months, weekdays] = parts.map((p, i) => field(p, FIELDS[i]!)) as Set<number>[];
  if (weekdays!.has(7)) weekdays!.add(0);
  return {
    minutes: minutes!,
    hours: hours!,
    days: days!,
    months: months!,
    weekdays: weekdays!,
    eitherDay: !/^[*?]/.test(parts[2]!) && !/^[*?]/.test(parts[4]!),
  };
}

function dayMatches(s: CronSchedule, d: Date): boolean {
  const dom = s.days.has(d.getUTCDate());
  const dow = s.weekdays.has(d.getUTCDay());
  return s.eitherDay ? dom || dow : dom && dow;
}

/**
 * The first minute strictly after `after` at which the schedule fires, within
 * about four years; `undefined` when it never does (such as `0 0 30 2 *`).
 *
 * @example
 * ```ts
 * import { nextCronTick, parseCron } from "./cron.ts";
 * nextCronTick(parseCron("*\/30 * * * *"), new Date("2026-01-01T14:07:10Z"))?.toISOString(); // "2026-01-01T14:30:00.000Z"
 * ```
 */
export function nextCronTick(s: CronSchedule, after: Date): Date | undefined {
  const t = new Date(Math.floor(after.getTime() / 60_000) * 60_000 + 60_000);
  const limit = after.getTime() + 4 * 366 * 24 * 3_600_000;
  while (t.getTime() <= limit) {
    if (!s.months.has(t.getUTCMonth() + 1)) {
      t.setUTCMonth(t.getUTCMonth() + 1, 1);
      t.setUTCHours(0, 0, 0, 0);
    } else if (!dayMatches(s, t)) {
      t.setUTCDate(t.getUTCDate() + 1);
      t.setUTCHours(0, 0, 0, 0);
    } else if (!s.hours.has(t.getUTCHours())) {
      t.setUTCHours(t.getUTCHours() + 1, 0, 0, 0);
    } else if (!s.minutes.has(t.getUTCMinutes())) {
      t.setUTCMinutes(t.getUTCMinutes() + 1, 0, 0);
    } else {
      return t;
    }
  }
  return undefined;
}
