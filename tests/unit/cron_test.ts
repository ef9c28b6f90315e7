import assert from "node:assert/strict";
import { nextCronTick, parseCron } from "../../lib/cron.ts";

const next = (schedule: string, after: string) => nextCronTick(parseCron(schedule), new Date(after))?.toISOString();

Deno.test("nextCronTick: when a schedule fires next", async (t) => {
  const cases: [string, string, string | undefined][] = [
    ["*/30 * * * *", "2026-01-01T14:07:10Z", "2026-01-01T14:30:00.000Z"],
    ["*/30 * * * *", "2026-01-01T14:30:00Z", "2026-01-01T15:00:00.000Z"],
    ["* * * * *", "2026-01-01T14:07:59.900Z", "2026-01-01T14:08:00.000Z"],
    ["* * * * *", "2026-01-01T14:08:00Z", "2026-01-01T14:09:00.000Z"],
    ["5 4 * * *", "2026-01-01T04:05:00Z", "2026-01-02T04:05:00.000Z"],
    ["0 0 * * mon", "2026-01-01T00:00:00Z", "2026-01-05T00:00:00.000Z"],
    ["0 0 1 jan *", "2026-03-01T00:00:00Z", "2027-01-01T00:00:00.000Z"],
    ["@hourly", "2026-01-01T14:07:00Z", "2026-01-01T15:00:00.000Z"],
    ["TZ=UTC 15 10-12/2 * * *", "2026-01-01T10:20:00Z", "2026-01-01T12:15:00.000Z"],
    // Day of month and day of week both restricted: either matches (1st of the month or a Sunday).
    ["0 0 1 * 0", "2026-01-02T00:00:00Z", "2026-01-04T00:00:00.000Z"],
    ["0 0 30 2 *", "2026-01-01T00:00:00Z", undefined],
  ];
  for (const [schedule, after, want] of cases) {
    await t.step(`${schedule} after ${after}`, () => assert.equal(next(schedule, after), want));
  }
});

Deno.test("parseCron: a bad schedule names its field", async (t) => {
  const cases: [string, RegExp][] = [
    ["* * * *", /expected 5 fields/],
    ["60 * * * *", /minute: 60 is outside 0-59/],
    ["* 5-2 * * *", /hour: range "5-2" runs backwards/],
    ["*/0 * * * *", /minute: bad step/],
    ["* * * foo *", /month: "foo" is not a number/],
    ["TZ=Europe/Paris * * * * *", /UTC only/],
  ];
  for (const [schedule, want] of cases) {
    await t.step(schedule, () => assert.throws(() => parseCron(schedule), want));
  }
});
