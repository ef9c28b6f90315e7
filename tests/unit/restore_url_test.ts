/** When the restore URL is signed again (core/etcd/restore_url.ts), by table; its hint is in restore_plan_test.ts. */
import assert from "node:assert/strict";
import { renewsUrl } from "../../core/etcd/restore_url.ts";

const T = Date.parse("2026-06-01T00:00:00Z");
const rows: [string, number, number, number, boolean][] = [
  ["15m lifetime, fresh", T + 15 * 60_000, T, 15 * 60_000, false],
  ["15m lifetime, 5m01s left", T + 301_000, T, 15 * 60_000, false],
  ["15m lifetime, 5m left: signed again", T + 300_000, T, 15 * 60_000, true],
  ["expired: signed again", T - 1, T, 15 * 60_000, true],
  ["no expiry known: signed again", NaN, T, 15 * 60_000, true],
  ["3m lifetime, 61s left (a third is 60s)", T + 61_000, T, 180_000, false],
  ["3m lifetime, 60s left: signed again", T + 60_000, T, 180_000, true],
  ["2h lifetime, 6m left: the 5m window holds", T + 360_000, T, 7_200_000, false],
];

Deno.test("a restore URL is signed again with 5 minutes, or a third of a shorter lifetime, left", async (t) => {
  for (const [name, expiresAt, now, lifetime, want] of rows) {
    await t.step(name, () => assert.equal(renewsUrl(expiresAt, new Date(now), lifetime), want));
  }
});
