/**
 * Host values on the real API server: a Machine host with stray white space
 * gives a clean endpoint and no write storm; the CRD refuses a spaced or
 * non-ASCII endpoint host with advice.
 */
import assert from "node:assert/strict";
import { EVENTS, SECRETS } from "../../lib/kube/resources.ts";
import { KUBERNETES_CLUSTERS } from "../../crds/kubernetescluster.ts";
import { MACHINES } from "../../core/contract/nio.ts";
import type { KubeObject } from "../../lib/kube/client.ts";
import { isUnprocessable } from "../../lib/kube/errors.ts";
import type { Machine } from "../../core/contract/nio.ts";
import { sharedControlPlane } from "../../testing/helpers.ts";
import { createMachines, settled } from "../../testing/nico.ts";
import { world } from "../../testing/world.ts";

const env = sharedControlPlane();
/** Passes over a settled cluster that must write nothing (the storm wrote on every pass, 84 writes a second). */
const IDLE_PASSES = 3;

Deno.test("a Machine host with a trailing space: endpoint trimmed, and no Secret or Event written while idle", async () => {
  await using w = await world("spaced", { nio: { applyDelayMs: 100 } });
  const { cp, ns, nico } = w;
  await createMachines(cp.client, ns, ["cp-1"]);
  await cp.client.mergePatch<Machine>(MACHINES, "cp-1", ns, { spec: { host: "127.0.0.1 " } });
  await cp.client.create(KUBERNETES_CLUSTERS, {
    metadata: { name: "c", namespace: ns },
    spec: { controlPlane: { machines: ["cp-1"] } },
  });
  const c = await w.until("Ready", (x) => x.status?.phase === "Ready", 30_000);
  assert.equal(c.status!.endpoint, "https://127.0.0.1:6443");
  await settled(cp.client, nico, ns, "c"); // the last writes of bring-up are done
  const snapshot = async () => {
    const secrets = (await cp.client.list<KubeObject>(SECRETS, { namespace: ns })).items;
    const events = (await cp.client.list<KubeObject & { count?: number }>(EVENTS, { namespace: ns })).items;
    return {
      secrets: Object.fromEntries(secrets.map((s) => [s.metadata.name, s.metadata.resourceVersion])),
      events: events.map((e) => `${e.metadata.name}@${e.metadata.resourceVersion}`).sort(),
    };
  };
  const before = await snapshot();
  // A storm is a pass that writes and so wakes the next one: passes that find nothing to do show there is none.
  for (let i = 0; i < IDLE_PASSES; i++) await settled(cp.client, nico, ns, "c");
  const after = await snapshot();
  assert.deepEqual(after.secrets, before.secrets, "no Secret was rewritten while idle");
  assert.deepEqual(after.events, before.events, "no Event was written while idle");
});

Deno.test("the CRD refuses an endpoint host with spaces or non-ASCII letters, pointing to punycode", async (t) => {
  const cp = await env.get();
  const ns = await cp.namespace("endpoint");
  for (const host of ["127.0.0.1 ", "api.пример.рф"]) {
    await t.step(JSON.stringify(host), async () => {
      const err = await cp.client.create(KUBERNETES_CLUSTERS, {
        metadata: { name: "c", namespace: ns },
        spec: { controlPlane: { machines: ["m"] }, controlPlaneEndpoint: { host } },
      }).then(() => undefined, (e) => e);
      assert.ok(isUnprocessable(err), String(err));
      assert.match(String(err), /punycode/);
    });
  }
});
