import assert from "node:assert/strict";
import { parse } from "yaml";
import {
  endpointUrl,
  issueKubeconfig,
  KubeconfigUnreadable,
  parseIssuedKubeconfig,
  readKubeconfig,
  reissueReason,
  renderKubeconfig,
} from "../../core/render/kubeconfig.ts";
import { workloadClient } from "../../controllers/cluster/workload/connect.ts";
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

const b64 = btoa;
const keys = { certPem: "CERT", keyPem: "KEY" };
const inline = (cert: string) => ({ "client-certificate-data": b64(cert), "client-key-data": b64("KEY") });
/** A key in the unreadable cases: it must never appear in an error. */
const SECRET = "c2VjcmV0LWtleQ==";

// Two clusters, the current context naming the second: a reader that takes the first server it sees is wrong.
const twoClusters = JSON.stringify({
  clusters: [
    { name: "old", cluster: { server: "https://127.0.0.9:6443", "certificate-authority-data": b64("OLD-CA") } },
    { name: "c", cluster: { server: "https://127.0.0.1:6443", "certificate-authority-data": b64("CA") } },
  ],
  users: [{ name: "old", user: inline("OLD-CERT") }, { name: "c-admin", user: inline("CERT") }],
  contexts: [{ name: "old", context: { cluster: "old", user: "old" } }, {
    name: "c",
    context: { cluster: "c", user: "c-admin" },
  }],
  "current-context": "c",
});

/** Kubeconfigs the reader takes, and what it reads from each. */
const READABLE: [string, string, { server: string; certPem: string }][] = [
  ["as NICO renders it", renderKubeconfig("c", "https://127.0.0.1:6443", "CA", keys), {
    server: "https://127.0.0.1:6443",
    certPem: "CERT",
  }],
  ["the current context's cluster, not the first", twoClusters, {
    server: "https://127.0.0.1:6443",
    certPem: "CERT",
  }],
  [
    "quoted values (as kubectl may write them)",
    renderKubeconfig("c", "https://[::1]:6443", "CA", keys).replace(
      "server: https://[::1]:6443",
      'server: "https://[::1]:6443"',
    ),
    { server: "https://[::1]:6443", certPem: "CERT" },
  ],
];

/** Kubeconfigs the reader refuses, and what the refusal says. */
const UNREADABLE: [string, string, RegExp][] = [
  ["not YAML", "{{{", /cannot be parsed/],
  [
    "no current context",
    renderKubeconfig("c", "https://127.0.0.1:6443", "CA", keys).replace(/current-context: c\n/, ""),
    /names no server/,
  ],
  [
    "a token instead of a client certificate",
    JSON.stringify({
      clusters: [{
        name: "c",
        cluster: { server: "https://127.0.0.1:6443", "certificate-authority-data": b64("CA") },
      }],
      users: [{ name: "u", user: { token: SECRET } }],
      contexts: [{ name: "c", context: { cluster: "c", user: "u" } }],
      "current-context": "c",
    }),
    /lacks the inline CA or client certificate/,
  ],
  [
    "a certificate file path",
    JSON.stringify({
      clusters: [{ name: "c", cluster: { server: "https://127.0.0.1:6443", "certificate-authority": "/etc/ca" } }],
      users: [{ name: "u", user: { "client-certificate": "/etc/cert", "client-key-data": SECRET } }],
      contexts: [{ name: "c", context: { cluster: "c", user: "u" } }],
      "current-context": "c",
    }),
    /lacks the inline CA or client certificate/,
  ],
];

Deno.test("one reader of the published kubeconfig follows current-context and takes only inline data", async (t) => {
  for (const [name, text, want] of READABLE) {
    await t.step(name, () => {
      assert.deepEqual(readKubeconfig(text), want);
      const kc = parseIssuedKubeconfig(text);
      assert.deepEqual([kc.server, kc.certPem, kc.keyPem], [want.server, want.certPem, "KEY"]);
      const client = workloadClient(text, { policy: "loopback" });
      assert.equal(client.server, want.server);
    });
  }
  for (const [name, text, want] of UNREADABLE) {
    await t.step(`refused: ${name}`, () => {
      assert.equal(readKubeconfig(text), undefined);
      for (const read of [() => parseIssuedKubeconfig(text), () => workloadClient(text, { policy: "loopback" })]) {
        assert.throws(
          read,
          (err: Error) =>
            err instanceof KubeconfigUnreadable && want.test(err.message) && !err.message.includes(SECRET),
        );
      }
    });
  }
  await t.step("reissueReason re-issues a kubeconfig it cannot read", async () => {
    const ca = await createCa({ commonName: "c-ca" });
    const text = await issueKubeconfig("c", "https://127.0.0.1:6443", ca);
    assert.equal(await reissueReason(text, "https://127.0.0.1:6443", ca.certPem, new Date()), undefined);
    const noKey = text.replace(/client-key-data: \S+\n/, "");
    assert.equal(await reissueReason(noKey, "https://127.0.0.1:6443", ca.certPem, new Date()), "unreadable");
  });
});
