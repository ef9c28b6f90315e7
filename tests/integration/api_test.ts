// deno-lint-ignore-file no-explicit-any
/**
 * The KubernetesCluster API on a real kube-apiserver: the generated CRD is
 * structural, defaults and CEL rules apply, kubectl explain shows our
 * descriptions, the status subresource works, and watches see changes.
 */
import assert from "node:assert/strict";
import { ApiError } from "../../lib/kube/errors.ts";
import { CRDS } from "../../lib/kube/resources.ts";
import { KUBERNETES_CLUSTERS } from "../../crds/kubernetescluster.ts";
import type { KubeObject, WatchEvent } from "../../lib/kube/client.ts";
import { startControlPlane } from "../../testing/envtest/controlplane.ts";
import { eventually, sharedControlPlane } from "../../testing/helpers.ts";

const env = sharedControlPlane();

function cluster(ns: string, name: string, spec: unknown): any {
  return { metadata: { name, namespace: ns }, spec };
}

Deno.test("the generated CRD is accepted as structural and established", async () => {
  const cp = await env.get();
  const crd = await cp.client.get<any>(CRDS, "kubernetesclusters.nico.homystack.com");
  const types = (crd.status.conditions as { type: string; status: string }[]).map((c) => `${c.type}=${c.status}`);
  assert.ok(types.includes("Established=True"), types.join(","));
  assert.ok(!types.some((t) => t.startsWith("NonStructuralSchema")), types.join(","));
});

Deno.test("a valid cluster is stored with its defaults", async () => {
  const cp = await env.get();
  const ns = await cp.namespace("api");
  const created = await cp.client.create<any>(
    KUBERNETES_CLUSTERS,
    cluster(ns, "prod", { controlPlane: { machines: ["cp-1"] }, controlPlaneEndpoint: { host: "api.example" } }),
  );
  assert.equal(created.spec.fullInstall, false);
  assert.deepEqual(created.spec.dataPlane, {});
  assert.equal(created.spec.controlPlaneEndpoint.port, 6443);
});

Deno.test("CEL rules and schema refuse invalid clusters with their message", async (t) => {
  const cp = await env.get();
  const ns = await cp.namespace("cel");
  const cases: { name: string; spec: unknown; message: RegExp; clusterName?: string }[] = [
    { name: "empty control plane", spec: { controlPlane: {} }, message: /control plane needs at least one machine/ },
    { name: "count zero", spec: { controlPlane: { count: 0 } }, message: /control plane needs at least one machine/ },
    { name: "machine named twice", spec: { controlPlane: { machines: ["a", "a"] } }, message: /named more than once/ },
    {
      name: "machine in both planes",
      spec: { controlPlane: { machines: ["a"] }, dataPlane: { machines: ["b", "a"] } },
      message: /cannot be in both/,
    },
    {
      name: "In without values",
      spec: { controlPlane: { count: 1, machineSelector: { matchExpressions: [{ key: "k", operator: "In" }] } } },
      message: /values must be non-empty for In and NotIn/,
    },
    {
      name: "subdir escaping the repo",
      spec: { controlPlane: { count: 1 }, configurationSubdir: "a/../../etc" },
      message: /relative path/,
    },
    {
      name: "absolute subdir",
      spec: { controlPlane: { count: 1 }, configurationSubdir: "/etc" },
      message: /relative path/,
    },
    { name: "bad machine name", spec: { controlPlane: { machines: ["Not_A_Name"] } }, message: /should match/ },
    ...([
      ["not-a-url", /gitRepo must be a repository URL/],
      ["ext::sh -c id", /must not use remote-helper syntax/],
      ["--upload-pack=id", /must not start with '-'/],
      ["https://a.example/x.git\nhttps://b.example/y.git", /one URL on one line/],
      ["file:///etc/flake", /must not be a local path or file:\/\//],
      ["https://deploy:hunter2@git.example.test/x.git", /must not carry credentials/],
      ["https://ghp_token@git.example.test/x.git", /must not carry credentials/],
    ] as const).map(([gitRepo, message]) => ({
      name: `gitRepo ${JSON.stringify(gitRepo)}`,
      spec: { controlPlane: { count: 1 }, gitRepo },
      message,
    })),
    ...["$(id)", "main; id", "-b", "a..b"].map((ref) => ({
      name: `ref ${JSON.stringify(ref)}`,
      spec: { controlPlane: { count: 1 }, ref },
      message: /ref may hold only letters/,
    })),
    {
      name: "name too long for a label",
      spec: { controlPlane: { count: 1 } },
      clusterName: "x".repeat(64),
      message: /at most 63 characters/,
    },
  ];
  for (const c of cases) {
    await t.step(c.name, async () => {
      const err = await cp.client.create(KUBERNETES_CLUSTERS, cluster(ns, c.clusterName ?? "bad", c.spec)).then(
        () => undefined,
        (e) => e,
      );
      assert.ok(err instanceof ApiError, `expected a refusal, got ${err}`);
      assert.equal(err.status, 422);
      assert.match(err.message, c.message);
    });
  }
});

Deno.test("kubectl explain shows the schema's descriptions", async () => {
  const cp = await env.get();
  const out = await cp.kubectl(["explain", "kubernetescluster.spec.controlPlane"]);
  assert.equal(out.code, 0, out.stderr);
  assert.match(out.stdout, /Machines\s+that\s+run\s+the\s+Kubernetes\s+control\s+plane/);
  assert.match(out.stdout, /machineSelector/);
  const short = await cp.kubectl(["explain", "kcluster.spec.fullInstall"]);
  assert.match(short.stdout, /WIPING\s+THE\s+DISK/);
});

Deno.test("status is written only through the status subresource", async () => {
  const cp = await env.get();
  const ns = await cp.namespace("status");
  const created = await cp.client.create<any>(KUBERNETES_CLUSTERS, cluster(ns, "c", { controlPlane: { count: 1 } }));
  // A write to the main resource ignores status.
  const replaced = await cp.client.replace<any>(KUBERNETES_CLUSTERS, { ...created, status: { phase: "Ready" } });
  assert.equal(replaced.status, undefined);
  const status = {
    phase: "Provisioning",
    observedGeneration: 1,
    controlPlane: { ready: 0, total: 1, summary: "0/1" },
    conditions: [{
      type: "Ready",
      status: "False",
      reason: "WaitingForNodes",
      message: "0/1 control plane machines ready",
      lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, "Z"),
      observedGeneration: 1,
    }],
  };
  const updated = await cp.client.replaceStatus<any>(KUBERNETES_CLUSTERS, { ...replaced, status });
  assert.equal(updated.status.phase, "Provisioning");
  assert.equal(updated.metadata.generation, created.metadata.generation, "status writes do not bump generation");
  const got = await cp.kubectl(["get", "kcluster", "-n", ns, "c", "--no-headers"]);
  assert.match(got.stdout, /^c\s+Provisioning\s+0\/1\s+/);
  // An invalid status is refused.
  const err = await cp.client.replaceStatus(KUBERNETES_CLUSTERS, { ...updated, status: { phase: "Exploded" } }).catch((
    e,
  ) => e);
  assert.ok(err instanceof ApiError && err.status === 422, String(err));
});

Deno.test("a watch through the client wrapper sees create, update and delete", async () => {
  const cp = await env.get();
  const ns = await cp.namespace("watch");
  const list = await cp.client.list<KubeObject>(KUBERNETES_CLUSTERS, { namespace: ns });
  const seen: string[] = [];
  const ctrl = new AbortController();
  const done = (async () => {
    try {
      for await (
        const ev of cp.client.watch<KubeObject>(KUBERNETES_CLUSTERS, {
          namespace: ns,
          resourceVersion: list.resourceVersion,
          signal: ctrl.signal,
        }) as AsyncGenerator<WatchEvent<any>>
      ) {
        if (ev.type !== "BOOKMARK") {
          seen.push(`${ev.type} ${ev.object.metadata.name} ${ev.object.spec?.ref ?? ""}`.trim());
        }
      }
    } catch (err) {
      if (!ctrl.signal.aborted) throw err;
    }
  })();
  const c = await cp.client.create<any>(KUBERNETES_CLUSTERS, cluster(ns, "w", { controlPlane: { count: 1 } }));
  await cp.client.mergePatch(KUBERNETES_CLUSTERS, "w", ns, { spec: { ref: "v2" } });
  await cp.client.delete(KUBERNETES_CLUSTERS, "w", ns, { uid: c.metadata.uid });
  await eventually("three watch events", () => seen.length >= 3);
  ctrl.abort();
  await done;
  assert.deepEqual(seen, ["ADDED w", "MODIFIED w v2", "DELETED w v2"]);
});

Deno.test("delete answers false for an object that is already gone", async () => {
  const cp = await env.get();
  const ns = await cp.namespace("gone");
  assert.equal(await cp.client.delete(KUBERNETES_CLUSTERS, "nothing", ns), false);
  assert.equal(await cp.client.get(KUBERNETES_CLUSTERS, "nothing", ns), undefined);
});

Deno.test("a control plane stops and leaves no process behind", async () => {
  const cp = await startControlPlane({ crds: [] });
  const pids = (await new Deno.Command("pgrep", { args: ["-f", cp.dir], stdout: "piped" }).output()).stdout;
  const before = new TextDecoder().decode(pids).trim().split("\n").filter(Boolean);
  assert.ok(before.length >= 2, `expected etcd and kube-apiserver running, found ${before.length}`);
  await cp.stop();
  const after = new TextDecoder().decode(
    (await new Deno.Command("pgrep", { args: ["-f", cp.dir], stdout: "piped" }).output()).stdout,
  ).trim();
  assert.equal(after, "", "processes left behind");
  assert.equal(await Deno.stat(cp.dir).then(() => true, () => false), false, "temporary folder left behind");
});
