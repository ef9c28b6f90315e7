/**
 * The certificates lib/cert_build.ts builds are read the same by two other implementations: `@peculiar/x509`
 * (extensions, key identifiers, the signature) and OpenSSL (`openssl verify` for a TLS server and a TLS client,
 * the chain to the CA). A leaf issued by a CA the library made (as NICO made them before) names that CA's key
 * identifier and its name byte for byte. And the DER writer's pieces, by table.
 */
import "reflect-metadata";
import assert from "node:assert/strict";
import * as x509 from "@peculiar/x509";
import { createCa, issueCert, type KeyPair } from "../../lib/pki.ts";
import { readCertificate } from "../../lib/der.ts";
import { ipBytes, oid, small, time, unsigned } from "../../lib/der_write.ts";

x509.cryptoProvider.set(crypto);
const hex = (b: ArrayBuffer | Uint8Array) =>
  Array.from(new Uint8Array(b), (x) => x.toString(16).padStart(2, "0")).join("");

Deno.test("@peculiar/x509 reads NICO's CA and leaf: extensions, key identifiers, signature", async () => {
  const ca = await createCa({ commonName: "c-ca" });
  const leaf = await issueCert(ca, {
    commonName: "nico-admin",
    organizations: ["system:masters"],
    dnsNames: ["api.example.test"],
    ipAddresses: ["127.0.0.1", "::1"],
    usage: "both",
    days: 30,
  });
  const c = new x509.X509Certificate(ca.certPem);
  const l = new x509.X509Certificate(leaf.certPem);
  assert.equal(c.getExtension(x509.BasicConstraintsExtension)?.ca, true);
  assert.equal(c.getExtension(x509.BasicConstraintsExtension)?.critical, true);
  const caUsage = x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign | x509.KeyUsageFlags.digitalSignature;
  assert.equal(c.getExtension(x509.KeyUsagesExtension)?.usages, caUsage);
  assert.equal(l.getExtension(x509.BasicConstraintsExtension)?.ca, false);
  const leafUsage = x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment;
  assert.equal(l.getExtension(x509.KeyUsagesExtension)?.usages, leafUsage);
  assert.deepEqual([...l.getExtension(x509.ExtendedKeyUsageExtension)?.usages ?? []], [
    x509.ExtendedKeyUsage.serverAuth,
    x509.ExtendedKeyUsage.clientAuth,
  ]);
  const ski = c.getExtension(x509.SubjectKeyIdentifierExtension)!.keyId;
  assert.equal(l.getExtension(x509.AuthorityKeyIdentifierExtension)?.keyId, ski);
  assert.equal(
    ski,
    hex(await crypto.subtle.digest("SHA-1", await c.publicKey.export().then((k) => crypto.subtle.exportKey("raw", k)))),
  );
  assert.equal(l.subject, "O=system:masters, CN=nico-admin");
  assert.equal(l.issuer, c.subject);
  assert.equal(await l.verify({ publicKey: c, signatureOnly: true }), true);
  assert.equal(await c.verify({ signatureOnly: true }), true, "the CA signs itself");
});

Deno.test("a leaf of a CA the library made names that CA's key identifier and its name, byte for byte", async () => {
  const keys = await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, ["sign", "verify"]);
  const made = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: "01",
    name: "CN=older-ca",
    notBefore: new Date(Date.now() - 60_000),
    notAfter: new Date(Date.now() + 86_400_000),
    signingAlgorithm: { name: "ECDSA", hash: "SHA-256" },
    keys,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  const pkcs8 = new Uint8Array(await crypto.subtle.exportKey("pkcs8", keys.privateKey));
  const keyPem = x509.PemConverter.encode(pkcs8.buffer, "PRIVATE KEY");
  const ca: KeyPair = { certPem: made.toString("pem"), keyPem };
  const leaf = await issueCert(ca, { commonName: "x", usage: "client", days: 1 });
  const l = new x509.X509Certificate(leaf.certPem);
  assert.equal(
    l.getExtension(x509.AuthorityKeyIdentifierExtension)?.keyId,
    made.getExtension(x509.SubjectKeyIdentifierExtension)?.keyId,
  );
  assert.deepEqual(readCertificate(leaf.certPem).issuerDer, readCertificate(ca.certPem).subjectDer);
  assert.equal(await l.verify({ publicKey: made, signatureOnly: true }), true);
});

/** `openssl verify` of `leaf` against `ca` for `purpose`: its output, and whether it said OK. */
async function opensslVerify(ca: KeyPair, leaf: KeyPair, purpose: string): Promise<{ ok: boolean; out: string }> {
  const dir = await Deno.makeTempDir({ prefix: "nico-cert-build-" });
  try {
    await Deno.writeTextFile(`${dir}/ca.pem`, ca.certPem);
    await Deno.writeTextFile(`${dir}/leaf.pem`, leaf.certPem);
    const r = await new Deno.Command("openssl", {
      args: ["verify", "-x509_strict", "-CAfile", `${dir}/ca.pem`, "-purpose", purpose, `${dir}/leaf.pem`],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const out = new TextDecoder().decode(r.stdout) + new TextDecoder().decode(r.stderr);
    return { ok: r.success && /: OK\s*$/.test(out), out };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("openssl verifies NICO's certificates for their purpose, strictly, and refuses another CA's", async () => {
  const ca = await createCa({ commonName: "c-ca" });
  const server = await issueCert(ca, { commonName: "s", dnsNames: ["a.example.test"], usage: "server", days: 1 });
  const client = await issueCert(ca, { commonName: "c", organizations: ["system:masters"], usage: "client", days: 1 });
  for (const [leaf, purpose] of [[server, "sslserver"], [client, "sslclient"]] as const) {
    const v = await opensslVerify(ca, leaf, purpose);
    assert.ok(v.ok, `${purpose}: ${v.out}`);
  }
  assert.equal((await opensslVerify(ca, client, "sslserver")).ok, false, "a client certificate serves no TLS server");
  const other = await createCa({ commonName: "c-ca" });
  assert.equal((await opensslVerify(other, server, "sslserver")).ok, false, "another CA of the same name");
});

Deno.test("DER pieces: integers, OIDs, times, IP addresses", () => {
  const bytes = (u: Uint8Array) => hex(u);
  assert.equal(bytes(unsigned(Uint8Array.of(0, 0, 0x7f))), "02017f", "leading zeros dropped");
  assert.equal(bytes(unsigned(Uint8Array.of(0x80))), "02020080", "a zero before a high bit");
  assert.equal(bytes(unsigned(Uint8Array.of(0, 0))), "020100", "zero");
  assert.equal(bytes(small(2)), "020102");
  assert.equal(bytes(small(300)), "0202012c");
  assert.equal(bytes(oid("1.2.840.10045.4.3.2")), "06082a8648ce3d040302", "ecdsa-with-SHA256");
  assert.equal(bytes(oid("2.5.29.17")), "0603551d11");
  const ascii = (u: Uint8Array) => new TextDecoder().decode(u.subarray(2));
  assert.equal(ascii(time(new Date("2036-01-02T03:04:05.678Z"))), "360102030405Z");
  assert.equal(time(new Date("2036-01-02T03:04:05Z"))[0], 0x17, "UTCTime through 2049");
  assert.equal(ascii(time(new Date("2050-01-01T00:00:00Z"))), "20500101000000Z");
  assert.equal(time(new Date("2050-01-01T00:00:00Z"))[0], 0x18, "GeneralizedTime from 2050");
  assert.equal(hex(ipBytes("127.0.0.1")), "7f000001");
  assert.equal(hex(ipBytes("::1")), "00000000000000000000000000000001");
  assert.equal(hex(ipBytes("fd00::1:0:0:5")), "fd000000000000000001000000000005");
  assert.equal(hex(ipBytes("2001:db8:0:0:1:0:0:1")), "20010db8000000000001000000000001");
  for (const bad of ["256.0.0.1", "1.2.3", "::1::2", "1:2:3:4:5:6:7:8:9", "g::1", "example.test", "1:2:3:4:5:6:7::8"]) {
    assert.throws(() => ipBytes(bad), /not an IP address/, bad);
  }
});
