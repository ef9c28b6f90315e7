/** The kube client's token bucket and Retry-After reading, on a fake clock. */
import assert from "node:assert/strict";
import { MAX_RETRY_AFTER_MS, retryAfterMs, TokenBucket } from "../../lib/kube/throttle.ts";

Deno.test("the token bucket lets a burst through, then one request per 1/qps, in the order they came", () => {
  let now = 0;
  const bucket = new TokenBucket(10, 3, () => now);
  assert.deepEqual([bucket.reserve(), bucket.reserve(), bucket.reserve()], [0, 0, 0]);
  assert.deepEqual([bucket.reserve(), bucket.reserve()], [100, 200], "waiters queue behind each other");
  now = 1_000; // a second later: 10 tokens came back, less the two already promised, capped at the burst
  assert.deepEqual([bucket.reserve(), bucket.reserve(), bucket.reserve(), bucket.reserve()], [0, 0, 0, 100]);
  assert.throws(() => new TokenBucket(0, 1), /qps > 0/);
});

Deno.test("Retry-After: seconds or an HTTP date, 1 s when missing or unreadable, capped", () => {
  const now = Date.parse("2026-12-01T00:00:00Z");
  assert.equal(retryAfterMs("3", now), 3_000);
  assert.equal(retryAfterMs("0", now), 0);
  assert.equal(retryAfterMs(null, now), 1_000);
  assert.equal(retryAfterMs("soon", now), 1_000);
  assert.equal(retryAfterMs("Tue, 01 Dec 2026 00:00:04 GMT", now), 4_000);
  assert.equal(retryAfterMs("Mon, 30 Nov 2026 00:00:00 GMT", now), 0);
  assert.equal(retryAfterMs("86400", now), MAX_RETRY_AFTER_MS);
});
