/**
 * What the Kubernetes client makes of an answer that is no success (lib/kube/stream.ts): a redirect is an error and
 * never followed; from an untrusted server (a workload cluster's) a body that is not a Kubernetes `Status` is never
 * quoted, and a `Status` message is cut; a trusted server's answers are quoted as before.
 */
import assert from "node:assert/strict";
import { failedAnswer, parseAnswer, toApiError } from "../../lib/kube/stream.ts";
import { failedChecks } from "../../controllers/cluster/workload/connection.ts";
import { gitVersionOf } from "../../controllers/cluster/workload/versions.ts";

const LEAK = "ROLE=admin AWS_SECRET=hunter2";

Deno.test("a 3xx is an error naming the status, its body unread", async () => {
  const err = await failedAnswer(
    new Response(LEAK, { status: 303, headers: { location: "http://internal.example.test/" } }),
    "GET",
    "/api/v1/nodes",
    false,
  );
  assert.equal(err?.status, 303);
  assert.equal(err?.message, "GET /api/v1/nodes: 303 Redirect: a redirect, which NICO never follows");
  assert.equal(await failedAnswer(new Response("{}", { status: 200 }), "GET", "/x", false), undefined);
});

Deno.test("an untrusted server's answer that is not a Status is not quoted; a Status is, cut", () => {
  assert.ok(!toApiError(500, LEAK, "GET", "/readyz", false).message.includes("hunter2"));
  assert.ok(!toApiError(403, JSON.stringify({ message: LEAK }), "GET", "/x", false).message.includes("hunter2"));
  const status = { kind: "Status", reason: "Forbidden", message: `no ${"x".repeat(400)}` };
  const e = toApiError(403, JSON.stringify(status), "GET", "/x", false);
  assert.equal(e.reason, "Forbidden");
  assert.equal(e.message.length, "GET /x: 403 Forbidden: ".length + 300);
  assert.equal(toApiError(403, JSON.stringify({ ...status, reason: LEAK }), "GET", "/x", false).reason, "Unknown");
  assert.match(toApiError(500, LEAK, "GET", "/readyz", true).message, /hunter2/, "a trusted server is quoted");
});

Deno.test("an untrusted answer that is not JSON is an error that does not quote it", () => {
  assert.throws(() => parseAnswer(LEAK, "GET", "/api/v1/nodes", false), (e: Error) => !e.message.includes("hunter2"));
  assert.throws(() => parseAnswer(LEAK, "GET", "/x", true), SyntaxError);
  assert.deepEqual(parseAnswer('{"a":1}', "GET", "/x", false), { a: 1 });
});

Deno.test("/readyz and /version answers are read, never quoted", () => {
  assert.equal(failedChecks(LEAK), "something other than ok (not shown)");
  assert.equal(
    failedChecks("[+]ping ok\n[-]etcd failed: reason withheld\n[-]poststarthook/x failed"),
    "not ok: failed etcd, poststarthook/x",
  );
  assert.equal(gitVersionOf(LEAK), undefined);
  assert.equal(gitVersionOf(JSON.stringify({ gitVersion: LEAK })), undefined);
  assert.equal(gitVersionOf(JSON.stringify({ gitVersion: "v1.31.4+k3s1" })), "v1.31.4+k3s1");
});
