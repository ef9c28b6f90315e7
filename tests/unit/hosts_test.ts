import assert from "node:assert/strict";
import { normalizeHost } from "../../core/contract/hosts.ts";
import { nodeAddress, resolveEndpoint } from "../../core/render/desired.ts";
import { HOST_PATTERN, KubernetesClusterSpec } from "../../crds/kubernetescluster.ts";
import { machine } from "../../testing/objects.ts";

const cases: [string, string | RegExp][] = [
  ["127.0.0.1", "127.0.0.1"],
  [" 127.0.0.1 ", "127.0.0.1"],
  ["127.0.0.1\n", "127.0.0.1"],
  ["API.Example.TEST", "api.example.test"],
  ["api.пример.рф", "api.xn--e1afmkfd.xn--p1ai"],
  ["[::1]", "::1"],
  ["::1", "::1"],
  ["node-1.", "node-1"],
  ["a b", /white space/],
  ["", /empty/],
  ["-x.test", /neither a DNS name/],
  ["x..test", /neither a DNS name/],
  ["1.2.3.256", /neither a DNS name/],
  ["host/path", /neither a DNS name/],
];

Deno.test("normalizeHost: one canonical spelling, or an error that says what is wrong", async (t) => {
  for (const [raw, want] of cases) {
    await t.step(JSON.stringify(raw), () => {
      const r = normalizeHost(raw);
      if (typeof want === "string") assert.deepEqual(r, { host: want });
      else assert.match(r.error ?? "(no error)", want);
    });
  }
});

Deno.test("node addresses and the endpoint use the canonical host; a bad endpoint is named", () => {
  const spaced = machine("cp-1", { host: "127.0.0.1 " });
  assert.equal(nodeAddress(spaced, "cp-1"), "127.0.0.1");
  const spec = KubernetesClusterSpec.parse({ controlPlane: { machines: ["cp-1"] } });
  assert.deepEqual(resolveEndpoint(spec, spaced, "cp-1"), { host: "127.0.0.1", port: 6443 });
  const idn = machine("cp-1", { host: "api.пример.рф" });
  assert.equal(resolveEndpoint(spec, idn, "cp-1").host, "api.xn--e1afmkfd.xn--p1ai");
  const bad = machine("cp-1", { host: "no such host" });
  assert.match(
    resolveEndpoint(spec, bad, "cp-1").error!,
    /Machine cp-1 \(the bootstrap node\) "no such host" contains/,
  );
});

Deno.test("the CRD's host pattern admits what normalizeHost keeps and refuses spaces and non-ASCII", () => {
  const re = new RegExp(HOST_PATTERN);
  for (const ok of ["127.0.0.1", "api.example.test", "API.example.test", "::1", "fe80::1", "xn--e1afmkfd.xn--p1ai"]) {
    assert.ok(re.test(ok), ok);
  }
  for (const bad of ["127.0.0.1 ", " x", "api.пример.рф", "a b", "-x", "x-", ""]) assert.ok(!re.test(bad), bad);
  const r = KubernetesClusterSpec.safeParse({
    controlPlane: { machines: ["a"] },
    controlPlaneEndpoint: { host: "127.0.0.1 " },
  });
  assert.ok(!r.success);
  assert.match(r.error.issues[0]!.message, /punycode/);
});
