/**
 * Trust boundaries (issue 41), between tenants, against the real API server: two tenants cannot register one API
 * server with Argo CD (admission refuses the endpoint; NICO refuses a race past it with ArgoCDRegistered=False), a
 * tenant's labels do not reach Argo CD, and the downgrade guard cannot be passed in two steps. The connections:
 * trust_test.ts.
 */
import assert from "node:assert/strict";
import { KUBERNETES_CLUSTERS } from "../../crds/kubernetescluster.ts";
import { argoCdSecretName } from "../../core/render/argocd.ts";
import type { Secret } from "../../controllers/cluster/secrets.ts";
import { EVENTS, SECRETS } from "../../lib/kube/resources.ts";
import type { KubeObject } from "../../lib/kube/client.ts";
import { eventually } from "../../testing/helpers.ts";
import { createMachines } from "../../testing/nico.ts";
import { type World, world } from "../../testing/world.ts";
import { condition } from "../../testing/scenario.ts";
import { apply, clusterJson, machines, setup } from "../webhook_api_kit.ts";

/** Every Event message of the namespace. */
async function eventMessages(w: World): Promise<string[]> {
  const { items } = await w.client.list<KubeObject & { note?: string }>(EVENTS, { namespace: w.ns });
  return items.map((e) => e.note ?? "");
}

/** Tenant A's cluster `c` on its Machine at 127.0.162.2 (labelled `labels`), registered with Argo CD; its Secret. */
async function registeredA(a: World, argo: string, labels: Record<string, string> = {}): Promise<Secret> {
  await createMachines(a.client, a.ns, ["cp-1"], {}, 162);
  await a.client.create(KUBERNETES_CLUSTERS, {
    metadata: { name: "c", namespace: a.ns, labels },
    spec: { controlPlane: { machines: ["cp-1"] } },
  });
  const secret = await eventually(
    "tenant A's Argo CD Secret",
    () => a.client.get<Secret>(SECRETS, argoCdSecretName(a.ns, "c"), argo),
    60_000,
  );
  assert.equal(atob(secret.data!.server!), "https://127.0.162.2:6443");
  return secret;
}

Deno.test({
  name: "finding 3: a tenant's labels do not reach its Argo CD Secret unless the operator lists them",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await using a = await world("trust-labels", { nico: false });
    const argo = await a.cp.namespace("trust-argocd");
    await a.startNico({ argoCdNamespace: argo, settings: { argocdLabelKeys: "team", argocdProject: "tenant-a" } });
    const secret = await registeredA(a, argo, { env: "production", team: "a" });
    assert.equal(secret.metadata.labels?.env, undefined, "a tenant's env label joins no ApplicationSet");
    assert.equal(secret.metadata.labels?.team, "a", "a key the operator lists is copied");
    assert.equal(atob(secret.data!.project!), "tenant-a");
  },
});

Deno.test({
  name: "finding 2: two tenants cannot register one API server with Argo CD",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await using a = await world("trust-tenant-a", { nico: false });
    const argo = await a.cp.namespace("trust-argocd");
    await a.startNico({ argoCdNamespace: argo });
    await using b = await world("trust-tenant-b", { nico: { argoCdNamespace: argo } });
    await registeredA(a, argo);

    // Tenant B names A's API server as its endpoint (past admission: none runs here, as in a race).
    await createMachines(b.client, b.ns, ["cp-1"], {}, 163);
    await b.client.create(KUBERNETES_CLUSTERS, {
      metadata: { name: "c", namespace: b.ns },
      spec: { controlPlane: { machines: ["cp-1"] }, controlPlaneEndpoint: { host: "127.0.162.2", port: 6443 } },
    });
    const refused = await eventually("B's registration refused", async () => {
      const found = (await eventMessages(b)).find((m) => m.includes("already has another cluster Secret"));
      return found;
    }, 60_000);
    assert.match(refused, /for https:\/\/127\.0\.162\.2:6443; NICO does not register a second one/);
    assert.ok(!refused.includes(a.ns), "the other tenant's Secret is not named");
    await b.until(
      "ArgoCDRegistered=False ServerTaken",
      (c) => condition(c, "ArgoCDRegistered")?.reason === "ServerTaken",
    );
    await a.until("A stays registered", (c) => condition(c, "ArgoCDRegistered")?.reason === "Registered");
    await b.settled();
    assert.equal(await b.client.get<Secret>(SECRETS, argoCdSecretName(b.ns, "c"), argo), undefined);
  },
});

Deno.test({
  name: "finding 2 at admission: kubectl apply of a cluster naming another tenant's endpoint is refused",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const f = await setup();
    const [nsA, nsB] = [await f.cp.namespace("trust-adm-a"), await f.cp.namespace("trust-adm-b")];
    await machines(f, nsA, ["cp-1"]);
    await machines(f, nsB, ["cp-1"]);
    const endpoint = { host: "127.0.166.10", port: 6443 };
    const spec = { controlPlane: { machines: ["cp-1"] }, controlPlaneEndpoint: endpoint };
    const a = await apply(f.cp, clusterJson(nsA, "c", spec));
    assert.equal(a.code, 0, a.stderr);
    await eventually("admission's cache holds A", () => f.informers.clusters.get(nsA, "c") !== undefined);
    const b = await apply(f.cp, clusterJson(nsB, "c", spec));
    assert.notEqual(b.code, 0, "B was admitted with A's endpoint");
    assert.match(
      b.stderr,
      /spec\.controlPlaneEndpoint: 127\.0\.166\.10:6443 is already the endpoint of another cluster/,
    );
    assert.ok(!b.stderr.includes(nsA), "the other tenant's namespace is not named");
    const moved = await apply(
      f.cp,
      clusterJson(nsB, "c", { ...spec, controlPlaneEndpoint: { ...endpoint, port: 7443 } }),
    );
    assert.equal(moved.code, 0, moved.stderr);
  },
});

Deno.test({
  name: "low finding: the downgrade guard cannot be passed in two steps while nothing is reported",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const f = await setup();
    const ns = await f.cp.namespace("trust-downgrade");
    await machines(f, ns, ["cp-1"]);
    const spec = (version?: string) => ({ controlPlane: { machines: ["cp-1"] }, ...(version ? { version } : {}) });
    const created = await apply(f.cp, clusterJson(ns, "c", spec("1.31")));
    assert.equal(created.code, 0, created.stderr);
    // What NICO writes once it rolls 1.31 out: the target it asks for (no API server has reported yet).
    await f.client.mergePatch(KUBERNETES_CLUSTERS, "c", ns, { status: { versions: { target: "1.31" } } }, "status");
    await eventually(
      "admission's cache holds the status",
      () => f.informers.clusters.get(ns, "c")?.status?.versions?.target === "1.31",
    );
    const removed = await apply(f.cp, clusterJson(ns, "c", spec()));
    assert.equal(removed.code, 0, removed.stderr);
    await eventually(
      "admission's cache holds the removal",
      () => f.informers.clusters.get(ns, "c")?.spec.version === undefined,
    );
    const down = await apply(f.cp, clusterJson(ns, "c", spec("1.0")));
    assert.notEqual(down.code, 0, "1.0 was admitted after 1.31 was asked for");
    assert.match(down.stderr, /spec\.version: 1\.0 is a downgrade: NICO last asked the control plane for 1\.31/);
  },
});
