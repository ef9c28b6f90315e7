/**
 * A re-key request (`nico.homystack.com/regenerate-identity=true`) on a cluster whose identity is intact is
 * answered, never dropped in silence: NICO keeps the server token, the agent token and the CA (the flake contract:
 * they never change while the nodes trust them), touches no node, issues a new admin kubeconfig (NICO's own, outside
 * the contract), says all of it and how to rotate the rest by hand in a Warning Event, and removes the request.
 */
import assert from "node:assert/strict";
import { KUBERNETES_CLUSTERS, type KubernetesCluster } from "../../crds/kubernetescluster.ts";
import { REGENERATE_IDENTITY_ANNOTATION } from "../../core/contract/labels.ts";
import {
  agentTokenSecret,
  caSecret,
  etcdCaSecret,
  joinTokenSecret,
  kubeconfigSecret,
} from "../../core/contract/names.ts";
import { NIXOS_CONFIGURATIONS, type NixosConfiguration } from "../../core/contract/nio.ts";
import { readKubeconfig } from "../../core/render/kubeconfig.ts";
import { type Secret, secretValue } from "../../controllers/cluster/secrets.ts";
import type { KubeObject } from "../../lib/kube/client.ts";
import { EVENTS, SECRETS } from "../../lib/kube/resources.ts";
import { certInfo, signedBy } from "../../lib/pki.ts";
import { eventually, sharedControlPlane } from "../../testing/helpers.ts";
import { createMachines, settled, startNico } from "../../testing/nico.ts";
import { startSimNio } from "../../testing/sim-nio.ts";

const env = sharedControlPlane();
type Ev = KubeObject & { reason?: string; type?: string; note?: string };

Deno.test("a re-key request on an intact identity is answered: kept, said why, the kubeconfig re-issued", async () => {
  const cp = await env.get();
  const ns = await cp.namespace("rekey");
  const nio = startSimNio(cp.client, { namespace: ns, applyDelayMs: 100 });
  const nico = startNico(cp.client, { namespace: ns });
  const secret = (n: string) => cp.client.get<Secret>(SECRETS, n, ns);
  const specs = async () =>
    (await cp.client.list<NixosConfiguration>(NIXOS_CONFIGURATIONS, { namespace: ns })).items
      .map((x) => `${x.metadata.name}@${x.metadata.generation}`).sort();
  const clientCert = async () =>
    readKubeconfig(secretValue(await secret(kubeconfigSecret("c")), "value") ?? "")!.certPem;
  try {
    await createMachines(cp.client, ns, ["cp-1", "w-1"]);
    await cp.client.create(KUBERNETES_CLUSTERS, {
      metadata: { name: "c", namespace: ns },
      spec: { controlPlane: { machines: ["cp-1"] }, dataPlane: { machines: ["w-1"] } },
    });
    const get = () => cp.client.get<KubernetesCluster>(KUBERNETES_CLUSTERS, "c", ns);
    await eventually("Ready", async () => (await get())?.status?.phase === "Ready", 30_000);
    const identity = () =>
      Promise.all(
        [joinTokenSecret("c"), agentTokenSecret("c"), caSecret("c"), etcdCaSecret("c")].map(async (n) =>
          (await secret(n))?.data
        ),
      );
    const before = { identity: await identity(), specs: await specs(), cert: await clientCert() };

    await cp.client.mergePatch(KUBERNETES_CLUSTERS, "c", ns, {
      metadata: { annotations: { [REGENERATE_IDENTITY_ANNOTATION]: "true" } },
    });
    await eventually("the request is removed", async () => {
      return (await get())?.metadata.annotations?.[REGENERATE_IDENTITY_ANNOTATION] === undefined;
    });
    const kept = await eventually("a Warning Event answers it", async () => {
      const { items } = await cp.client.list<Ev>(EVENTS, { namespace: ns });
      return items.find((e) => e.reason === "IdentityKept");
    });
    assert.equal(kept.type, "Warning");
    assert.match(kept.note!, /found the identity intact: kept the server token \(c-join-token: k3s encrypts/);
    assert.match(kept.note!, /the agent token \(c-agent-token\), the cluster CA \(c-ca\) and the etcd CA \(c-etcd-ca/);
    assert.match(kept.note!, /issued a new admin kubeconfig \(c-kubeconfig: a new client key and certificate\)/);
    assert.match(kept.note!, /the previous certificate stays valid until \d{4}-\d\d-\d\d/);
    assert.match(kept.note!, /To rotate a token or the CA by hand/);

    await settled(cp.client, nico, ns, "c"); // a pass after the answer: nothing more changes
    assert.deepEqual(await identity(), before.identity, "tokens and CA are kept");
    assert.deepEqual(await specs(), before.specs, "no node is reconfigured");
    const cert = await clientCert();
    assert.notEqual(cert, before.cert, "the admin kubeconfig is new");
    const ca = atob((await secret(caSecret("c")))!.data!["tls.crt"]!);
    assert.ok(await signedBy(cert, ca), "signed by the same CA");
    assert.ok(certInfo(cert).notAfter >= certInfo(before.cert).notAfter, "valid no shorter than the previous one");
  } finally {
    await nico.stop();
    await nio.stop();
  }
});
