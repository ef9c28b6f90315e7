/**
 * What a pass checks on a certificate is read without the certificate library (lib/der.ts): the same expiry, names
 * and addresses `@peculiar/x509` reads, the same signature verdicts, and a process that checks and makes NICO's
 * certificates never loads the library (lib/cert_build.ts makes them).
 */
import "reflect-metadata";
import assert from "node:assert/strict";
import * as x509 from "@peculiar/x509";
import { certInfo, createCa, issueCert, keyMatches, signedBy } from "../../lib/pki.ts";
import { ecdsaRaw, readCertificate } from "../../lib/der.ts";

const NOW = new Date("2026-03-01T12:00:00Z");

Deno.test("readCertificate reads what @peculiar/x509 reads: validity, names, alternative names", async () => {
  const ca = await createCa({ commonName: "c-ca", now: NOW });
  const leaf = await issueCert(ca, {
    commonName: "nico-admin",
    organizations: ["system:masters", "a,b"],
    dnsNames: ["api.example.test", "nico-webhook.nico-system.svc"],
    ipAddresses: ["127.0.0.1", "::1", "fd00::1:0:0:5", "2001:db8:0:0:1:0:0:1"],
    usage: "both",
    days: 30,
    now: NOW,
  });
  for (const pem of [ca.certPem, leaf.certPem]) {
    const ours = readCertificate(pem);
    const theirs = new x509.X509Certificate(pem);
    assert.equal(ours.notAfter.getTime(), theirs.notAfter.getTime());
    assert.equal(ours.notBefore.getTime(), theirs.notBefore.getTime());
    assert.equal(ours.subject, theirs.subject);
    assert.equal(ours.issuer, theirs.issuer);
    const san = theirs.getExtension(x509.SubjectAlternativeNameExtension)?.names.toJSON() ?? [];
    assert.deepEqual(ours.dnsNames, san.filter((n) => n.type === "dns").map((n) => n.value));
    assert.deepEqual(ours.ipAddresses, san.filter((n) => n.type === "ip").map((n) => n.value));
  }
  const info = certInfo(leaf.certPem);
  assert.deepEqual(info.ipAddresses, ["127.0.0.1", "::1", "fd00::1:0:0:5", "2001:db8::1:0:0:1"]);
  assert.equal(info.notAfter.getTime(), NOW.getTime() + 30 * 86_400_000);
});

Deno.test("signedBy and keyMatches: WebCrypto's verdicts on NICO's certificates, false for another CA, key or a tampered byte", async () => {
  const ca = await createCa({ commonName: "c-ca" });
  const other = await createCa({ commonName: "c-ca" }); // the same name, another key
  const leaf = await issueCert(ca, { commonName: "x", usage: "client", days: 1 });
  assert.equal(await signedBy(leaf.certPem, ca.certPem), true);
  assert.equal(await signedBy(leaf.certPem, other.certPem), false);
  assert.equal(await signedBy(ca.certPem, ca.certPem), true);
  assert.equal(await keyMatches(leaf.certPem, leaf.keyPem), true);
  assert.equal(await keyMatches(leaf.certPem, ca.keyPem), false);
  assert.equal(await keyMatches(leaf.certPem, "not a key"), false);
  // One byte of the signed part changed (inside the validity): the signature no longer holds.
  const der = x509.PemConverter.decode(leaf.certPem)[0]!;
  const bytes = new Uint8Array(der.slice(0));
  const at = bytes.findIndex((b, i) => b === 0x17 && bytes[i + 1] === 13); // the first UTCTime
  bytes[at + 5] = bytes[at + 5] === 0x31 ? 0x32 : 0x31;
  const tampered = x509.PemConverter.encode(bytes.buffer, "CERTIFICATE");
  assert.equal(await signedBy(tampered, ca.certPem), false);
  assert.equal(
    await new x509.X509Certificate(tampered).verify({
      publicKey: new x509.X509Certificate(ca.certPem),
      signatureOnly: true,
    }),
    false,
  );
});

Deno.test("ecdsaRaw: DER integers (with a sign byte, or short) become r || s of 32 bytes each", () => {
  const r = new Uint8Array(33).fill(0xaa);
  r[0] = 0; // a sign byte
  const s = new Uint8Array(31).fill(0x11); // short: padded on the left
  const seq = new Uint8Array([0x30, 2 + 33 + 2 + 31, 0x02, 33, ...r, 0x02, 31, ...s]);
  const raw = ecdsaRaw(seq);
  assert.equal(raw.length, 64);
  assert.deepEqual([...raw.subarray(0, 32)], Array(32).fill(0xaa));
  assert.deepEqual([...raw.subarray(32, 33)], [0]);
  assert.deepEqual([...raw.subarray(33)], Array(31).fill(0x11));
});

Deno.test("a process that checks and makes NICO's certificates never loads @peculiar/x509", async () => {
  const ca = await createCa({ commonName: "c-ca" });
  const leaf = await issueCert(ca, { commonName: "x", dnsNames: ["a.example.test"], usage: "client", days: 1 });
  const code = `
    const pki = await import(${JSON.stringify(new URL("../../lib/pki.ts", import.meta.url).href)});
    const [ca, leaf, key] = JSON.parse(Deno.env.get("PEMS"));
    const checks = [pki.certInfo(leaf).dnsNames[0], await pki.signedBy(leaf, ca), await pki.keyMatches(leaf, key)];
    console.log(JSON.stringify({ checks, loaded: pki.x509Loaded() }));
    await pki.createCa({ commonName: "later" });
    console.log(JSON.stringify({ loaded: pki.x509Loaded() }));
  `;
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--ext=ts", code],
    env: { PEMS: JSON.stringify([ca.certPem, leaf.certPem, leaf.keyPem]) },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const lines = new TextDecoder().decode(out.stdout).trim().split("\n").map((l) => JSON.parse(l));
  assert.ok(out.success, new TextDecoder().decode(out.stderr));
  assert.deepEqual(lines[0], { checks: ["a.example.test", true, true], loaded: false });
  assert.deepEqual(lines[1], { loaded: false }, "making a CA loads no certificate library either");
});
