/**
 * The cluster's identity on the real API server: once a cluster is up, a
 * deleted CA or join token is a condition the user sees, never a silent
 * re-key; the key-only Secret always follows the CA Secret; a deliberate
 * re-key goes through an annotation.
 */
import assert from "node:assert/strict";
import type { KubernetesCluster } from "../../crds/kubernetescluster.ts";
import { EVENTS, SECRETS } from "../../lib/kube/resources.ts";
import { KUBERNETES_CLUSTERS } from "../../crds/kubernetescluster.ts";
import { NIXOS_CONFIGURATIONS } from "../../core/nio.ts";
import type { KubeObject } from "../../lib/kube/client.ts";
import { REGENERATE_IDENTITY_ANNOTATION } from "../../core/labels.ts";
import { caKeySecret, caSecret, joinTokenSecret } from "../../core/names.ts";
import type { NixosConfiguration } from "../../core/nio.ts";
import type { Secret } from "../../controllers/cluster/secrets.ts";
import { startSimNio } from "../../testing/sim-nio.ts";
import { eventually, sharedControlPlane } from "../../testing/helpers.ts";
import { createMachines, settled, startNico } from "../../testing/nico.ts";

const env = sharedControlPlane();
type Ev = KubeObject & { reason?: string; type?: string; note?: string };

async function upCluster(prefix: string) {
  const cp = await env.get();
  const ns = await cp.namespace(prefix);
  const nio = startSimNio(cp.client, { namespace: ns, applyDelayMs: 100 });
  const nico = startNico(cp.client, { namespace: ns });
  await createMachines(cp.client, ns, ["cp-1", "w-1"]);
  await cp.client.create(KUBERNETES_CLUSTERS, {
    metadata: { name: "c", namespace: ns },
    spec: { controlPlane: { machines: ["cp-1"] }, dataPlane: { machines: ["w-1"] } },
  });
  const get = () => cp.client.get<KubernetesCluster>(KUBERNETES_CLUSTERS, "c", ns);
  await eventually("Ready", async () => (await get())?.status?.phase === "Ready", 30_000);
  const specs = async () =>
    (await cp.client.list<NixosConfiguration>(NIXOS_CONFIGURATIONS, { namespace: ns })).items
      .map((x) => `${x.metadata.name}@${x.metadata.generation}`).sort();
  const events = async () => (await cp.client.list<Ev>(EVENTS, { namespace: ns })).items;
  return {
    cp,
    ns,
    get,
    specs,
    events,
    secret: (n: string) => cp.client.get<Secret>(SECRETS, n, ns),
    settled: () => settled(cp.client, nico, ns, "c"),
    async stop() {
      await nico.stop();
      await nio.stop();
    },
  };
}

Deno.test("deleting the CA of a running cluster stops it with IdentityLost; nothing is re-keyed until asked", async () => {
  const e = await upCluster("ca");
  try {
    const oldKey = (await e.secret(caSecret("c")))!.data!["tls.key"];
    const before = await e.specs();
    await e.cp.client.delete(SECRETS, caSecret("c"), e.ns);
    const lost = await eventually("IdentityLost", async () => {
      const c = await e.get();
      const r = c?.status?.conditions?.find((x) => x.type === "Ready");
      return r?.reason === "IdentityLost" ? { c, r } : undefined;
    });
    assert.equal(lost.c!.status!.phase, "Failed");
    const stalled = lost.c!.status!.conditions!.find((x) => x.type === "Stalled");
    assert.deepEqual([stalled?.status, stalled?.reason], ["True", "IdentityLost"], "kstatus reads it as Failed");
    assert.equal(lost.c!.status!.observedGeneration, lost.c!.metadata.generation);
    assert.match(lost.r.message, /Secret c-ca of a running cluster is missing/);
    assert.match(lost.r.message, new RegExp(`${REGENERATE_IDENTITY_ANNOTATION}=true`));
    await eventually("a Warning Event", async () => (await e.events()).some((x) => x.reason === "IdentityLost"));
    await e.settled(); // a pass that saw the lost CA has run to its end
    assert.equal(await e.secret(caSecret("c")), undefined, "no new CA was made");
    assert.deepEqual(await e.specs(), before, "no node was reconfigured");

    await e.cp.client.mergePatch(KUBERNETES_CLUSTERS, "c", e.ns, {
      metadata: { annotations: { [REGENERATE_IDENTITY_ANNOTATION]: "true" } },
    });
    const fresh = await eventually("a new CA", () => e.secret(caSecret("c")));
    assert.notEqual(fresh.data!["tls.key"], oldKey);
    await eventually("the key-only Secret follows the new CA", async () => {
      return (await e.secret(caKeySecret("c")))?.data?.["tls.key"] === fresh.data!["tls.key"];
    });
    await eventually("the annotation is removed", async () => {
      return (await e.get())?.metadata.annotations?.[REGENERATE_IDENTITY_ANNOTATION] === undefined;
    });
    assert.ok((await e.events()).some((x) => x.reason === "IdentityRegenerated"));
  } finally {
    await e.stop();
  }
});

Deno.test("deleting the join token of a running cluster stops it with IdentityLost", async () => {
  const e = await upCluster("token");
  try {
    await e.cp.client.delete(SECRETS, joinTokenSecret("c"), e.ns);
    const r = await eventually("IdentityLost", async () => {
      const x = (await e.get())?.status?.conditions?.find((y) => y.type === "Ready");
      return x?.reason === "IdentityLost" ? x : undefined;
    });
    assert.match(r.message, /Secret c-join-token of a running cluster is missing/);
    await e.settled();
    assert.equal(await e.secret(joinTokenSecret("c")), undefined);
  } finally {
    await e.stop();
  }
});

Deno.test("the CA key Secret cannot diverge from the CA: deleted or edited, it is put back from the CA", async () => {
  const e = await upCluster("cakey");
  try {
    const key = (await e.secret(caSecret("c")))!.data!["tls.key"];
    await e.cp.client.delete(SECRETS, caKeySecret("c"), e.ns);
    await eventually("recreated", async () => (await e.secret(caKeySecret("c")))?.data?.["tls.key"] === key);
    await e.cp.client.mergePatch(SECRETS, caKeySecret("c"), e.ns, { data: { "tls.key": btoa("tampered") } });
    await eventually("restored", async () => (await e.secret(caKeySecret("c")))?.data?.["tls.key"] === key);
    assert.equal((await e.get())!.status!.phase, "Ready");
  } finally {
    await e.stop();
  }
});
