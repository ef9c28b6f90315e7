/** Admission webhook: defaulting, bad input and requests NICO cannot judge. */
import assert from "node:assert/strict";
import { isDeepStrictEqual } from "node:util";
import { KubernetesClusterSpec } from "../../crds/kubernetescluster.ts";
import { FINALIZER } from "../../core/contract/labels.ts";
import { type AdmissionLookup, LookupNotReady, staticLookup } from "../../webhooks/lookup.ts";
import { staticAccess } from "../../webhooks/authorize.ts";
import { webhookApp } from "../../webhooks/app.ts";
import { MUTATE_PATH, VALIDATE_PATH } from "../../webhooks/paths.ts";
import { app, applyPatch, cluster, fleet, mutate, post, REPO, reviewBody, three, withRepo } from "../webhook_kit.ts";

Deno.test("defaulting: JSON Patch, idempotent", async (t) => {
  await t.step("gitRepo from the default repository, and the schema's defaults", async () => {
    const spec = { controlPlane: { machines: ["cp-1"] }, controlPlaneEndpoint: { host: "api.example" } };
    const object = cluster(spec);
    const ops = await mutate(object, { defaultGitRepo: REPO });
    for (
      const want of [
        { op: "add", path: "/metadata/finalizers", value: [FINALIZER] },
        { op: "add", path: "/spec/gitRepo", value: REPO },
        { op: "add", path: "/spec/controlPlaneEndpoint/port", value: 6443 },
        { op: "add", path: "/spec/fullInstall", value: false },
        { op: "add", path: "/spec/dataPlane", value: {} },
      ]
    ) {
      assert.ok(
        ops.some((o: unknown) => isDeepStrictEqual(o, want)),
        `missing ${JSON.stringify(want)} in ${JSON.stringify(ops)}`,
      );
    }
    const patched = applyPatch(object, ops) as { spec: unknown };
    assert.deepEqual(
      patched.spec,
      { ...KubernetesClusterSpec.parse(spec), gitRepo: REPO },
      "the patch adds exactly the schema's defaults",
    );
    assert.deepEqual(await mutate(patched, { defaultGitRepo: REPO }), [], "a second pass has nothing to do");
  });
  await t.step("a complete object gets no patch", async () => {
    const spec = KubernetesClusterSpec.parse({
      gitRepo: "https://mine.example/x.git",
      controlPlane: { count: 1 },
      fullInstall: true,
    });
    const object = cluster(spec);
    assert.deepEqual(await mutate({ ...object, metadata: { ...object.metadata, finalizers: [FINALIZER] } }), []);
    assert.deepEqual(await mutate(object, {}, "UPDATE"), [], "an update does not re-add the finalizer");
  });
  await t.step("NICO's finalizer is appended to other finalizers on CREATE", async () => {
    const object = cluster({ controlPlane: { count: 1 } });
    const ops = await mutate({ ...object, metadata: { ...object.metadata, finalizers: ["other.example/x"] } });
    assert.deepEqual(ops[0], { op: "add", path: "/metadata/finalizers/-", value: FINALIZER });
  });
  await t.step("without a default repository gitRepo stays absent", async () => {
    const ops = await mutate(cluster({ controlPlane: { count: 1 } }));
    assert.ok(ops.length > 0);
    assert.ok(!ops.some((o: { path: string }) => o.path === "/spec/gitRepo"), JSON.stringify(ops));
  });
  await t.step("an invalid spec gets only gitRepo; validation explains the rest", async () => {
    const ops = await mutate(cluster({ controlPlane: { machines: ["Bad_Name"] } }), { defaultGitRepo: REPO });
    assert.deepEqual(ops, [
      { op: "add", path: "/metadata/finalizers", value: [FINALIZER] },
      { op: "add", path: "/spec/gitRepo", value: REPO },
    ]);
  });
  await t.step("no spec: no patch", async () => {
    assert.deepEqual(await mutate(cluster(undefined), { defaultGitRepo: REPO }), []);
  });
});

// ---------------------------------------------------------------- bad input

/** Reviews that are not what the API server sends, each with the answer it must get. */
function badReviews(): { name: string; body: unknown; status: number; message: RegExp; path?: string }[] {
  const good = reviewBody("CREATE", cluster(withRepo(three)));
  return [
    {
      name: "malformed JSON",
      body: '{"apiVersion": ',
      status: 400,
      message: /^bad AdmissionReview: the body is not valid JSON: /,
    },
    { name: "empty body", body: "", status: 400, message: /not valid JSON/ },
    { name: "an array", body: "[]", status: 400, message: /must be a JSON object: an AdmissionReview/ },
    {
      name: "wrong kind",
      body: { ...good, kind: "Pod" },
      status: 400,
      message: /kind must be AdmissionReview, got "Pod"/,
    },
    {
      name: "wrong API version",
      body: { ...good, apiVersion: "admission.k8s.io/v1beta1" },
      status: 400,
      message: /apiVersion must be admission\.k8s\.io\/v1, got "admission\.k8s\.io\/v1beta1"/,
    },
    {
      name: "no request",
      body: { apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview" },
      status: 400,
      message: /request is missing/,
    },
    {
      name: "missing request.uid",
      body: { ...good, request: { ...good.request, uid: undefined } },
      status: 400,
      message: /request\.uid is missing/,
    },
    {
      name: "missing object on CREATE",
      body: reviewBody("CREATE", undefined),
      status: 400,
      message: /request\.object is missing: a CREATE carries the object/,
    },
    {
      name: "missing oldObject on UPDATE",
      body: reviewBody("UPDATE", cluster(three)),
      status: 400,
      message: /request\.oldObject is missing/,
    },
    {
      name: "unknown operation",
      body: { ...good, request: { ...good.request, operation: "PATCH" } },
      status: 400,
      message: /request\.operation must be/,
    },
    { name: "the mutating endpoint too", body: "nope", status: 400, message: /not valid JSON/, path: MUTATE_PATH },
  ];
}

Deno.test("bad input: a clear 4xx, never a crash or a hang", async (t) => {
  const a = app({ machines: fleet(3) });
  for (const c of badReviews()) {
    await t.step(c.name, async () => {
      const res = await post(a, c.path ?? VALIDATE_PATH, c.body);
      assert.equal(res.status, c.status, res.text);
      assert.match(res.text, c.message);
    });
  }
});

Deno.test("bad input: an oversized body is a 413 however it comes, one just under the limit is read; unknown paths a 404", async (t) => {
  const good = reviewBody("CREATE", cluster(withRepo(three)));
  const a = app({ machines: fleet(3) });
  const big = JSON.stringify({ ...good, padding: "x".repeat(3 * 1024 * 1024) });
  await t.step("oversized body with content-length", async () => {
    const res = await post(a, VALIDATE_PATH, big, { headers: { "content-length": String(big.length) } });
    assert.equal(res.status, 413);
    assert.match(res.text, /^bad AdmissionReview: the body is larger than 3145728 bytes$/);
  });
  await t.step("oversized body streamed without content-length", async () => {
    const bytes = new TextEncoder().encode(big);
    const body = new ReadableStream<Uint8Array>({
      start(ctl) {
        for (let i = 0; i < bytes.length; i += 65536) ctl.enqueue(bytes.subarray(i, i + 65536));
        ctl.close();
      },
    });
    const res = await a.request(VALIDATE_PATH, { method: "POST", body, headers: { "transfer-encoding": "chunked" } });
    assert.equal(res.status, 413);
    assert.match(await res.text(), /larger than 3145728 bytes/);
  });
  await t.step("a body just under the limit is read", async () => {
    const fits = JSON.stringify({ ...good, padding: "x".repeat(3 * 1024 * 1024 - 2000) });
    const res = await post(a, VALIDATE_PATH, fits);
    assert.equal(res.status, 200);
    assert.equal(res.json.response.allowed, true);
  });
  await t.step("unknown paths are a 404 that says what is served", async () => {
    const res = await a.request("/validate", { method: "POST", body: "{}" });
    assert.equal(res.status, 404);
    assert.match(await res.text(), /POST \/validate-kubernetescluster and POST \/mutate-kubernetescluster/);
  });
});

Deno.test("requests NICO cannot judge: refused or allowed with the reason, at once", async (t) => {
  const object = cluster(withRepo(three));
  await t.step("a lookup that throws: allowed false, code 500, the reason", async () => {
    const lookup: AdmissionLookup = {
      ...staticLookup({}),
      machine: () => {
        throw new Error("cache exploded");
      },
    };
    const res = await post(
      webhookApp({ lookup, access: staticAccess([]) }),
      VALIDATE_PATH,
      reviewBody("CREATE", object),
    );
    assert.equal(res.status, 200);
    assert.deepEqual(res.json.response, {
      uid: "req-1",
      allowed: false,
      status: {
        code: 500,
        reason: "InternalError",
        message: "NICO's webhook could not check this object: cache exploded",
      },
    });
  });
  await t.step("a cache that is not synced: allowed false, code 503", async () => {
    const lookup: AdmissionLookup = {
      ...staticLookup({}),
      machine: () => {
        throw new LookupNotReady("NICO's cache of machines is still loading; try again in a few seconds");
      },
    };
    const res = await post(
      webhookApp({ lookup, access: staticAccess([]) }),
      VALIDATE_PATH,
      reviewBody("CREATE", object),
    );
    assert.equal(res.json.response.allowed, false);
    assert.equal(res.json.response.status.code, 503);
    assert.match(res.json.response.status.message, /still loading/);
  });
  await t.step("a metadata-only update passes even while the cache is loading", async () => {
    const lookup: AdmissionLookup = {
      ...staticLookup({}),
      machine: () => {
        throw new LookupNotReady("still loading");
      },
    };
    const labelled = { ...object, metadata: { ...object.metadata, labels: { team: "infra" } } };
    const res = await post(
      webhookApp({ lookup, access: staticAccess([]) }),
      VALIDATE_PATH,
      reviewBody("UPDATE", labelled, object),
    );
    assert.deepEqual(res.json.response, { uid: "req-1", allowed: true });
  });
  await t.step("another kind of object: refused with the reason", async () => {
    const res = await post(app(), VALIDATE_PATH, reviewBody("CREATE", { metadata: { name: "p" } }, undefined, "Pod"));
    assert.equal(res.json.response.allowed, false);
    assert.equal(res.json.response.status.code, 400);
    assert.match(
      res.json.response.status.message,
      /admits only nico\.homystack\.com KubernetesCluster objects, not v1alpha1 Pod/,
    );
  });
  await t.step("DELETE is allowed untouched", async () => {
    for (const path of [VALIDATE_PATH, MUTATE_PATH]) {
      const res = await post(app(), path, reviewBody("DELETE", undefined, object));
      assert.deepEqual(res.json.response, { uid: "req-1", allowed: true });
    }
  });
});

// ---------------------------------------------------------------- configurations
