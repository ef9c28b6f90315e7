/** Admission: one cluster per API server endpoint, across namespaces (webhooks/endpoint_rules.ts). */
import { type Case, cluster, fleet, machine, runCase, three, withRepo } from "../webhook_kit.ts";

const endpoint = { host: "api.shared.example.test", port: 6443 };
/** Tenant A's cluster in another namespace, naming the endpoint. */
const tenantA = {
  ...cluster(withRepo({ ...three, controlPlaneEndpoint: endpoint }), { name: "a", uid: "uid-a" }),
  metadata: { name: "a", namespace: "tenant-a", uid: "uid-a" },
};
const taken =
  /^spec\.controlPlaneEndpoint: api\.shared\.example\.test:6443 is already the endpoint of another cluster; two clusters never share/;

const cases: Case[] = [
  {
    name: "another namespace's cluster names the endpoint: refused, without naming it",
    objects: { machines: fleet(3), clusters: [tenantA as never] },
    object: cluster(withRepo({ ...three, controlPlaneEndpoint: endpoint })),
    errors: [taken],
  },
  {
    name: "another port of the same host is another endpoint",
    objects: { machines: fleet(3), clusters: [tenantA as never] },
    object: cluster(withRepo({ ...three, controlPlaneEndpoint: { ...endpoint, port: 7443 } })),
    errors: [],
  },
  {
    name: "a cluster of this namespace is named",
    objects: {
      machines: fleet(3),
      clusters: [
        cluster(withRepo({ controlPlane: { machines: ["cp-9"] }, controlPlaneEndpoint: endpoint }), {
          name: "b",
          uid: "uid-b",
        }) as never,
      ],
    },
    object: cluster(withRepo({ ...three, controlPlaneEndpoint: endpoint })),
    errors: [/is already the endpoint of cluster b of this namespace/],
  },
  {
    name: "an update that keeps its endpoint is not judged again (the victim is never locked out)",
    objects: { machines: fleet(3), clusters: [tenantA as never] },
    op: "UPDATE",
    object: cluster(withRepo({ ...three, controlPlaneEndpoint: endpoint, paused: true })),
    oldObject: cluster(withRepo({ ...three, controlPlaneEndpoint: endpoint })),
    errors: [],
  },
  {
    name: "the address of a Machine another namespace's cluster claims (its bootstrap node): refused",
    objects: {
      machines: [...fleet(3), machine("a-1", { namespace: "tenant-a", claim: "a", host: "node-a.example.test" })],
    },
    object: cluster(withRepo({ ...three, controlPlaneEndpoint: { host: "node-a.example.test", port: 6443 } })),
    errors: [/^spec\.controlPlaneEndpoint: node-a\.example\.test:6443 is already the endpoint of another cluster;/],
  },
  {
    name: "the address of a Machine this cluster claims (its own bootstrap node) passes",
    objects: { machines: [...fleet(2), machine("cp-3", { claim: "prod", host: "node-3.example.test" })] },
    object: cluster(withRepo({ ...three, controlPlaneEndpoint: { host: "node-3.example.test", port: 6443 } })),
    errors: [],
  },
];

for (const c of cases) Deno.test(`endpoint: ${c.name}`, () => runCase(c));
