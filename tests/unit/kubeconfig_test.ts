import assert from "node:assert/strict";
import { parse } from "yaml";
import { endpointUrl, issueKubeconfig, readKubeconfig, reissueReason } from "../../core/kubeconfig.ts";
import { certInfo, createCa, signedBy } from "../../lib/pki.ts";

const DAY = 24 * 60 * 60 * 1000;

Deno.test("the admin kubeconfig: signed by the cluster CA, for the endpoint, re-signed before it expires", async (t) => {
  const ca = await createCa({ commonName: "prod-ca" });
  const other = await createCa({ commonName: "other-ca" });
  const issued = new Date("2026-01-01T00:00:00Z");
  const server = "https://127.0.0.1:6443";
  const text = await issueKubeconfig("prod", server, ca, issued);
  const kc = parse(text);
  const cert = atob(kc.users[0].user["client-certificate-data"]);

  await t.step("client certificate: CN nico-admin, O system:masters, one year, signed by the CA", async () => {
    const info = certInfo(cert);
    assert.match(info.subject, /CN=nico-admin/);
    assert.match(info.subject, /O=system:masters/);
    assert.equal(Math.round((info.notAfter.getTime() - issued.getTime()) / DAY), 365);
    assert.ok(await signedBy(cert, ca.certPem));
    assert.equal(atob(kc.clusters[0].cluster["certificate-authority-data"]), ca.certPem);
    assert.equal(readKubeconfig(text)?.server, server);
  });
  const cases: [string, string, Date, string, RegExp | undefined][] = [
    ["fresh", server, new Date(issued.getTime() + 30 * DAY), ca.certPem, undefined],
    [
      "under six months left: re-sign",
      server,
      new Date(issued.getTime() + 215 * DAY),
      ca.certPem,
      /expires within six months/,
    ],
    ["seven months left is fine", server, new Date(issued.getTime() + 150 * DAY), ca.certPem, undefined],
    ["endpoint changed", "https://api.example:6443", issued, ca.certPem, /endpoint changed/],
    ["another CA", server, issued, other.certPem, /another CA/],
  ];
  for (const [name, srv, now, caPem, want] of cases) {
    await t.step(name, async () => {
      const why = await reissueReason(text, srv, caPem, now);
      if (want) assert.match(why ?? "", want);
      else assert.equal(why, undefined);
    });
  }
  await t.step("missing or unreadable", async () => {
    assert.equal(await reissueReason(undefined, server, ca.certPem, issued), "missing");
    assert.equal(await reissueReason("garbage", server, ca.certPem, issued), "unreadable");
  });
});

Deno.test("endpointUrl brackets IPv6 addresses", () => {
  assert.equal(endpointUrl("127.0.0.1", 6443), "https://127.0.0.1:6443");
  assert.equal(endpointUrl("::1", 6443), "https://[::1]:6443");
  assert.equal(endpointUrl("api.example", 443), "https://api.example:443");
});
