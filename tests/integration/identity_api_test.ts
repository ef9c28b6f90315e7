/**
 * The cluster's identity on the real API server: once a cluster is up, a
 * deleted CA or join token is a condition the user sees, never a silent
 * re-key; the CA's key lives in the key Secret alone (an older CA Secret
 * that held it too is migrated without ever losing it); a deliberate
 * re-key goes through an annotation.
 */
import assert from "node:assert/strict";
import type { KubernetesCluster } from "../../crds/kubernetescluster.ts";
import { EVENTS, SECRETS } from "../../lib/kube/resources.ts";
import { KUBERNETES_CLUSTERS } from "../../crds/kubernetescluster.ts";
import { NIXOS_CONFIGURATIONS } from "../../core/contract/nio.ts";
import type { KubeObject } from "../../lib/kube/client.ts";
import { REGENERATE_IDENTITY_ANNOTATION } from "../../core/contract/labels.ts";
import { caKeySecret, caSecret, joinTokenSecret } from "../../core/contract/names.ts";
import type { NixosConfiguration } from "../../core/contract/nio.ts";
import type { Secret } from "../../controllers/cluster/secrets.ts";
import { eventually } from "../../testing/helpers.ts";
import { createMachines, machinesDiscovered } from "../../testing/nico.ts";
import { extend, world } from "../../testing/world.ts";
type Ev = KubeObject & { reason?: string; type?: string; note?: string };

/** A 1 + 1 cluster `c` brought up in a world of its own, with readers of what a test looks at. */
async function upCluster(prefix: string) {
  return await extend(await world(prefix, { nio: { applyDelayMs: 100 } }), async (w) => {
    const { cp, ns } = w;
    await createMachines(cp.client, ns, ["cp-1", "w-1"]);
    await machinesDiscovered(cp.client, ns, ["cp-1", "w-1"]);
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
    return { get, specs, events, secret: (n: string) => cp.client.get<Secret>(SECRETS, n, ns) };
  });
}

Deno.test("deleting the CA of a running cluster stops it with IdentityLost; nothing is re-keyed until asked", async () => {
  await using e = await upCluster("ca");
  const oldKey = (await e.secret(caKeySecret("c")))!.data!["tls.key"];
  const oldCert = (await e.secret(caSecret("c")))!.data!["tls.crt"];
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
  assert.notEqual(fresh.data!["tls.crt"], oldCert);
  assert.notEqual((await e.secret(caKeySecret("c")))?.data?.["tls.key"], oldKey, "the key Secret holds the new key");
  await eventually("the annotation is removed", async () => {
    return (await e.get())?.metadata.annotations?.[REGENERATE_IDENTITY_ANNOTATION] === undefined;
  });
  assert.ok((await e.events()).some((x) => x.reason === "IdentityRegenerated"));
});

Deno.test("deleting the join token of a running cluster stops it with IdentityLost", async () => {
  await using e = await upCluster("token");
  await e.cp.client.delete(SECRETS, joinTokenSecret("c"), e.ns);
  const r = await eventually("IdentityLost", async () => {
    const x = (await e.get())?.status?.conditions?.find((y) => y.type === "Ready");
    return x?.reason === "IdentityLost" ? x : undefined;
  });
  assert.match(r.message, /Secret c-join-token of a running cluster is missing/);
  await e.settled();
  assert.equal(await e.secret(joinTokenSecret("c")), undefined);
});

Deno.test("the CA key lives in c-ca-key alone: deleted it is IdentityLost, edited a mismatch; never a new CA", async () => {
  await using e = await upCluster("cakey");
  const cert = (await e.secret(caSecret("c")))!.data!["tls.crt"];
  const keyOnly = (await e.secret(caKeySecret("c")))!;
  assert.deepEqual(Object.keys((await e.secret(caSecret("c")))!.data!), ["tls.crt"], "the CA Secret holds no key");
  const ready = async () => (await e.get())?.status?.conditions?.find((x) => x.type === "Ready");
  await e.cp.client.mergePatch(SECRETS, caKeySecret("c"), e.ns, { data: { "tls.key": btoa("tampered") } });
  const mismatch = await eventually("a mismatch", async () => {
    const r = await ready();
    return r?.reason === "CertificateAuthorityKeyMismatch" ? r : undefined;
  });
  assert.match(mismatch.message, /Secret c-ca-key does not hold the key of the CA in Secret c-ca; restore it/);
  await e.cp.client.delete(SECRETS, caKeySecret("c"), e.ns);
  const lost = await eventually("IdentityLost", async () => {
    const r = await ready();
    return r?.reason === "IdentityLost" ? r : undefined;
  });
  assert.match(lost.message, /Secret c-ca-key of a running cluster is missing/);
  assert.equal((await e.secret(caSecret("c")))!.data!["tls.crt"], cert, "the CA was not replaced");
  assert.equal(await e.secret(caKeySecret("c")), undefined, "no key was made up");
  // Restored from a backup: Ready again, with the same CA.
  const { labels, ownerReferences } = keyOnly.metadata;
  await e.cp.client.create(SECRETS, {
    metadata: { name: caKeySecret("c"), namespace: e.ns, labels, ownerReferences },
    type: "Opaque",
    data: keyOnly.data,
  } as Secret);
  await eventually(
    "Ready again",
    async () => (await ready())?.reason !== "IdentityLost" && (await e.get())?.status?.phase === "Ready",
  );
  assert.equal((await e.secret(caSecret("c")))!.data!["tls.crt"], cert);
});

for (const keySecret of ["kept", "missing"] as const) {
  Deno.test(`an older NICO's CA Secret holding the key too (key Secret ${keySecret}) is migrated, the CA kept`, async () => {
    await using e = await upCluster(`migrate-${keySecret}`);
    const ca = (await e.secret(caSecret("c")))!;
    const key = (await e.secret(caKeySecret("c")))!.data!["tls.key"]!;
    const before = await e.specs();
    // As an older NICO left it: a kubernetes.io/tls Secret with the certificate and the key.
    await e.stopNico();
    await e.stopNio();
    await e.cp.client.delete(SECRETS, caSecret("c"), e.ns);
    if (keySecret === "missing") await e.cp.client.delete(SECRETS, caKeySecret("c"), e.ns);
    const { labels, ownerReferences } = ca.metadata;
    await e.cp.client.create(SECRETS, {
      metadata: { name: caSecret("c"), namespace: e.ns, labels, ownerReferences },
      type: "kubernetes.io/tls",
      data: { "tls.crt": ca.data!["tls.crt"]!, "tls.key": key },
    } as Secret);
    await e.startNio();
    await e.startNico();
    await eventually(
      "the key left the CA Secret",
      async () => (await e.secret(caSecret("c")))?.data?.["tls.key"] === "",
    );
    assert.equal((await e.secret(caSecret("c")))!.data!["tls.crt"], ca.data!["tls.crt"], "the same CA");
    assert.equal((await e.secret(caKeySecret("c")))?.data?.["tls.key"], key, "the key is in c-ca-key");
    await eventually("Ready", async () => (await e.get())?.status?.phase === "Ready");
    assert.deepEqual(await e.specs(), before, "no node was reconfigured");
  });
}
