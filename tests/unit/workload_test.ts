/** Pure parts of the workload-cluster connection: which targets are allowed, Node views, drain plans. */
import assert from "node:assert/strict";
import { isLoopbackHost, nameCheck, parseCidrList, refusedTarget } from "../../controllers/cluster/workload/targets.ts";
import { workloadClient } from "../../controllers/cluster/workload/connect.ts";
import { type KubeNode, type KubePod, planDrain, viewNode } from "../../core/nodes/workload.ts";
import { DRAIN_STARTED_ANNOTATION } from "../../core/contract/labels.ts";

Deno.test("loopback addresses are recognised; nothing else is", () => {
  for (const h of ["127.0.0.1", "127.0.10.31", "127.255.255.254", "::1", "[::1]", "::ffff:127.0.0.3"]) {
    assert.ok(isLoopbackHost(h), h);
  }
  for (
    const h of ["10.0.0.1", "172.16.0.1", "192.168.1.1", "8.8.8.8", "128.0.0.1", "localhost", "example.test", "fd00::1"]
  ) {
    assert.ok(!isLoopbackHost(h), h);
  }
});

Deno.test("the loopback guard is anchored: a name that starts like a loopback address is a name", () => {
  for (
    const h of [
      "127.0.0.1.evil.example",
      "127.0.0.1.nip.io",
      "x127.0.0.1",
      "127.0.0.1:6443",
      "127.0.0.1 ",
      "127.0.0.1\n",
      "[::1].evil",
      "::1.evil.example",
      "0:0:0:0:0:0:0:1:80",
      "127.0.0.256",
      "::ffff:8.8.8.8",
    ]
  ) {
    assert.ok(!isLoopbackHost(h), JSON.stringify(h));
  }
  for (const h of ["[::ffff:7f00:5]", "::ffff:7f00:1", "0:0:0:0:0:0:0:1", "[0::1]"]) assert.ok(isLoopbackHost(h), h);
  assert.match(refusedTarget("https://127.0.0.1.evil.example:6443", "loopback")!, /only loopback/);
  assert.match(
    refusedTarget("https://127.0.0.1@evil.example:6443", "loopback")!,
    /refusing to connect to evil\.example/,
  );
  assert.equal(refusedTarget("https://[::ffff:127.0.0.5]:6443", "loopback"), undefined, "as the URL parser writes it");
});

Deno.test("under the loopback policy only loopback servers may be reached; https is always required", () => {
  assert.equal(refusedTarget("https://127.0.0.5:6443", "loopback"), undefined);
  assert.equal(refusedTarget("https://[::1]:6443", "loopback"), undefined);
  assert.match(refusedTarget("https://10.0.0.1:6443", "loopback")!, /refusing to connect to 10\.0\.0\.1/);
  assert.match(refusedTarget("https://api.example.test:6443", "loopback")!, /only loopback/);
  const open = { allow: undefined, deny: undefined };
  assert.equal(refusedTarget("https://api.example.test:6443", open), undefined);
  assert.match(refusedTarget("http://api.example.test:6443", open)!, /not https/);
});

Deno.test("by default NICO refuses loopback, link-local and the management cluster's ranges, unless allowed", () => {
  const none = { allow: undefined, deny: undefined };
  for (
    const s of ["https://127.0.0.1:2379", "https://[::1]:6443", "https://localhost:6443", "https://[::ffff:7f00:1]"]
  ) {
    assert.match(
      refusedTarget(s, none)!,
      /a loopback address, which NICO reaches only when --workload-allowed-cidrs/,
      s,
    );
  }
  assert.match(refusedTarget("https://169.254.169.254/", none)!, /a link-local address/);
  assert.match(refusedTarget("https://[fe80::1]:6443", none)!, /a link-local address/);
  assert.match(refusedTarget("https://0.0.0.0:6443", none)!, /an unspecified address/);
  const managed = { allow: undefined, deny: parseCidrList("127.0.5.0/24") };
  assert.match(refusedTarget("https://127.0.5.9:6443", managed)!, /management cluster \(--management-cidrs\)/);
  const allowed = { allow: parseCidrList("127.0.5.0/24, ::1"), deny: parseCidrList("127.0.5.0/24") };
  assert.equal(refusedTarget("https://127.0.5.9:6443", allowed), undefined, "the allow list wins");
  assert.equal(refusedTarget("https://[::1]:6443", allowed), undefined);
  assert.match(refusedTarget("https://127.0.6.1:6443", allowed)!, /a loopback address/);
  assert.throws(() => parseCidrList("127.0.0.0/8,example.test"), /example\.test is not an address or CIDR range/);
  assert.throws(() => parseCidrList("127.0.0.0/99"), /not a CIDR range/);
});

Deno.test("the workload client factory refuses a non-loopback kubeconfig before any connection", () => {
  const kubeconfig = JSON.stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: "c", cluster: { server: "https://10.0.0.1:6443" } }],
    users: [{ name: "u", user: {} }],
    contexts: [{ name: "c", context: { cluster: "c", user: "u" } }],
    "current-context": "c",
  });
  assert.throws(() => workloadClient(kubeconfig, { policy: "loopback" }), /refusing to connect to 10\.0\.0\.1/);
  const secretish = "apiVersion: v1\nusers: [{name: u, user: {client-key-data: c2VjcmV0}\n";
  assert.throws(
    () => workloadClient(secretish, { policy: "loopback" }),
    (err: Error) => /cannot be parsed/.test(err.message) && !err.message.includes("c2VjcmV0"),
  );
});

Deno.test("a Node view: Ready status, since when, why not, cordoned by NICO", () => {
  const node = (o: Partial<KubeNode>): KubeNode => ({ metadata: { name: "w-1" }, ...o });
  assert.deepEqual(viewNode(node({}), DRAIN_STARTED_ANNOTATION), {
    name: "w-1",
    ready: "Unknown",
    since: undefined,
    why: undefined,
    cordoned: false,
    drainStarted: undefined,
    configuration: undefined,
  });
  const v = viewNode(
    node({
      metadata: {
        name: "w-1",
        annotations: {
          [DRAIN_STARTED_ANNOTATION]: "2026-01-01T00:00:00Z",
          "nico.homystack.com/configuration": "0123456789abcdef",
        },
      },
      spec: { unschedulable: true },
      status: {
        conditions: [{
          type: "Ready",
          status: "False",
          reason: "KubeletNotReady",
          message: "PLEG is not healthy",
          lastTransitionTime: "2026-01-01T00:01:00Z",
        }],
      },
    }),
    DRAIN_STARTED_ANNOTATION,
  );
  assert.equal(v.ready, "False");
  assert.equal(v.why, "KubeletNotReady: PLEG is not healthy");
  assert.equal(v.since?.toISOString(), "2026-01-01T00:01:00.000Z");
  assert.equal(v.cordoned, true);
  assert.equal(v.drainStarted?.toISOString(), "2026-01-01T00:00:00.000Z");
  assert.equal(v.configuration, "0123456789abcdef", "the node says what it runs");
});

Deno.test("a drain plan evicts ordinary pods and skips DaemonSet, mirror and finished pods; emptyDir only when allowed", () => {
  const pod = (name: string, o: Partial<KubePod> & { owner?: string; node?: string } = {}): KubePod => ({
    metadata: {
      name,
      namespace: "apps",
      ...(o.owner
        ? {
          ownerReferences: [{
            apiVersion: "apps/v1",
            kind: o.owner,
            name: `${name}-owner`,
            uid: "u",
            controller: true,
          }],
        }
        : {}),
      ...o.metadata,
    },
    spec: { nodeName: o.node ?? "w-1", ...o.spec },
    ...(o.status ? { status: o.status } : {}),
  });
  const pods = [
    pod("web", { owner: "ReplicaSet" }),
    pod("bare"),
    pod("agent", { owner: "DaemonSet" }),
    pod("static", {
      metadata: { name: "static", namespace: "apps", annotations: { "kubernetes.io/config.mirror": "x" } },
    }),
    pod("job", { owner: "Job", status: { phase: "Succeeded" } }),
    pod("cache", { spec: { nodeName: "w-1", volumes: [{ name: "tmp", emptyDir: {} }] } }),
    pod("leaving", { metadata: { name: "leaving", namespace: "apps", deletionTimestamp: "2026-01-01T00:00:00Z" } }),
    pod("elsewhere", { node: "w-2" }),
  ];
  const strict = planDrain(pods, "w-1", { deleteEmptyDirData: false });
  assert.deepEqual(strict.evict.map((p) => p.name), ["web", "bare"]);
  assert.deepEqual(strict.terminating.map((p) => p.name), ["leaving"]);
  assert.deepEqual(strict.skipped.map((s) => [s.pod.name, s.why]), [
    ["agent", "DaemonSet agent-owner"],
    ["static", "mirror pod (static, managed by the kubelet)"],
    ["job", "finished (Succeeded)"],
  ]);
  assert.deepEqual(strict.refused.map((r) => r.pod.name), ["cache"]);
  assert.match(strict.refused[0]!.why, /spec\.rollout\.drain\.deleteEmptyDirData/);
  const lenient = planDrain(pods, "w-1", { deleteEmptyDirData: true });
  assert.deepEqual(lenient.evict.map((p) => p.name), ["web", "bare", "cache"]);
  assert.deepEqual(lenient.refused, []);
});

Deno.test("a host name is checked by the addresses it resolves to, before each request (cached a while)", async () => {
  let asked = 0;
  const answers: Record<string, string[]> = {
    "metadata.example.test": ["169.254.169.254"],
    "api.example.test": ["127.0.5.9"],
    "mixed.example.test": ["127.0.5.9", "::1"],
  };
  const resolve = (name: string) => {
    asked++;
    return Promise.resolve(answers[name] ?? []);
  };
  const check = nameCheck({ allow: parseCidrList("127.0.5.0/24"), deny: undefined }, resolve);
  await assert.rejects(
    check("https://metadata.example.test:6443"),
    /^Error: refusing to connect to metadata\.example\.test: it resolves to 169\.254\.169\.254: a link-local address/,
  );
  await check("https://api.example.test:6443");
  await check(new URL("https://api.example.test:6443/version"));
  await assert.rejects(check("https://mixed.example.test"), /it resolves to ::1: a loopback address/);
  assert.equal(asked, 3, "each name resolved once within the cache's time");
  await check("https://127.0.0.1:6443"); // an address literal is judged where the client is made
  assert.equal(asked, 3);
});
