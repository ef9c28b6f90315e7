/**
 * The kube client against a real API server (issue 21): a write gate holds
 * for every client derived from the gated one; a request API Priority and
 * Fairness rejects with 429 is sent again after its Retry-After; and the
 * client-side token bucket spaces requests out.
 */
import assert from "node:assert/strict";
import { KubeClient, type KubeObject, type ThrottleInfo } from "../../lib/kube/client.ts";
import { WriteRefusedError } from "../../lib/kube/errors.ts";
import { resource, SECRETS } from "../../lib/kube/resources.ts";
import { eventually, sharedControlPlane } from "../../testing/helpers.ts";

const env = sharedControlPlane();

Deno.test("a write gate holds for every derived client, whatever gate or signal the copy adds", async () => {
  const cp = await env.get();
  const ns = await cp.namespace("gate");
  let leading = false;
  const gated = cp.client.with({ mayWrite: () => leading });
  const derived = [
    gated.with({ signal: new AbortController().signal }),
    gated.with({ mayWrite: () => true }),
    gated.with({ fieldManager: "other" }).with({ mayWrite: () => true, signal: new AbortController().signal }),
  ];
  const secret = (i: number): KubeObject => ({ metadata: { name: `s-${i}`, namespace: ns } });
  for (const [i, client] of derived.entries()) {
    await assert.rejects(client.create(SECRETS, secret(i)), WriteRefusedError, `derived client ${i} wrote`);
  }
  leading = true;
  await derived[1]!.create(SECRETS, secret(1));
  assert.ok(await cp.client.get(SECRETS, "s-1", ns));
});

const FLOW = resource("flowcontrol.apiserver.k8s.io", "v1", "FlowSchema", "flowschemas", false);
const LEVEL = resource(
  "flowcontrol.apiserver.k8s.io",
  "v1",
  "PriorityLevelConfiguration",
  "prioritylevelconfigurations",
  false,
);

/** A priority level that rejects every request of `user` (no seats, no borrowing). */
async function rejectUser(cp: Awaited<ReturnType<typeof env.get>>, user: string): Promise<() => Promise<void>> {
  const name = `reject-${user}`;
  await cp.client.apply(LEVEL, {
    metadata: { name },
    spec: {
      type: "Limited",
      limited: {
        nominalConcurrencyShares: 0,
        lendablePercent: 0,
        borrowingLimitPercent: 0,
        limitResponse: { type: "Reject" },
      },
    },
  } as KubeObject);
  await cp.client.apply(FLOW, {
    metadata: { name },
    spec: {
      priorityLevelConfiguration: { name },
      matchingPrecedence: 100,
      distinguisherMethod: { type: "ByUser" },
      rules: [{
        subjects: [{ kind: "User", user: { name: user } }],
        nonResourceRules: [{ verbs: ["*"], nonResourceURLs: ["*"] }],
        resourceRules: [{ verbs: ["*"], apiGroups: ["*"], resources: ["*"], clusterScope: true, namespaces: ["*"] }],
      }],
    },
  } as KubeObject);
  return async () => {
    await cp.client.delete(FLOW, name);
    await cp.client.delete(LEVEL, name);
  };
}

/** `n` requests at once by `client` for a slow answer (the OpenAPI document): their outcomes. */
async function burst(client: KubeClient, n: number): Promise<string[]> {
  return await Promise.all(
    Array.from({ length: n }, () => client.getText("/openapi/v2").then(() => "ok", (err) => String(err).slice(0, 60))),
  );
}

Deno.test("429s from API Priority and Fairness are sent again after their Retry-After", async () => {
  const cp = await env.get();
  const user = "throttled-by-apf";
  const stopRejecting = await rejectUser(cp, user);
  const kubeconfig = await cp.userKubeconfig(user);
  try {
    // The user's level has one seat and no queue: requests at once beyond the first are rejected.
    const impatient = KubeClient.load(kubeconfig, { retries429: 0 });
    await eventually("the API server rejects some of a burst with 429", async () => {
      return (await burst(impatient, 16)).some((r) => /429/.test(r));
    }, 30_000);
    await impatient.close();
    const waits: ThrottleInfo[] = [];
    const patient = KubeClient.load(kubeconfig, {
      retries429: 30,
      timeoutMs: 60_000,
      onThrottle: (t) => waits.push(t),
    });
    const outcomes = await burst(patient, 8);
    await patient.close();
    assert.deepEqual(outcomes.filter((o) => o !== "ok"), [], "requests failed although the client may retry");
    assert.ok(waits.length >= 1, "no request was throttled: the burst did not test anything");
    assert.ok(waits.every((w) => w.source === "server" && w.waitMs >= 1_000), JSON.stringify(waits.slice(0, 3)));
  } finally {
    await stopRejecting();
  }
});

Deno.test("the client-side token bucket spaces requests: 25 at 20 a second with a burst of 5 take a second", async () => {
  const cp = await env.get();
  const waits: ThrottleInfo[] = [];
  const limited = cp.client.with({ rateLimit: { qps: 20, burst: 5 }, onThrottle: (t) => waits.push(t) });
  const derived = limited.with({ fieldManager: "other" }); // shares the bucket
  const started = performance.now();
  await Promise.all(Array.from({ length: 25 }, (_, i) => (i % 2 ? limited : derived).getText("/version")));
  const took = performance.now() - started;
  assert.ok(took >= 950, `25 requests took ${took.toFixed(0)} ms`);
  assert.equal(waits.filter((w) => w.source === "client").length, 20, "the first five go at once");
});
