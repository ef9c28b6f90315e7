/**
 * Building and signing the X.509 certificates NICO issues (RFC 5280), with
 * lib/der_write.ts and WebCrypto alone: version 3, ECDSA P-256 with SHA-256,
 * names of an organization list and a common name, and the extensions a CA
 * (basic constraints, key usage, subject key identifier) or a leaf (basic
 * constraints, key usage, extended key usage, authority key identifier,
 * alternative names) carries. lib/pki.ts says which certificates.
 *
 * @module
 */
import { ECDSA_SHA256 } from "./der.ts";
import { bytesBase64 } from "./encoding.ts";
import {
  bits,
  boolean,
  element,
  ipBytes,
  octets,
  oid,
  sequence,
  set,
  small,
  time,
  unsigned,
  utf8,
} from "./der_write.ts";

const OID = {
  commonName: "2.5.4.3",
  organization: "2.5.4.10",
  basicConstraints: "2.5.29.19",
  keyUsage: "2.5.29.15",
  extKeyUsage: "2.5.29.37",
  subjectKeyId: "2.5.29.14",
  authorityKeyId: "2.5.29.35",
  subjectAltName: "2.5.29.17",
  serverAuth: "1.3.6.1.5.5.7.3.1",
  clientAuth: "1.3.6.1.5.5.7.3.2",
} as const;

/** What a certificate says, and who signs it. */
export interface CertificateRequest {
  /** A positive serial number, big-endian. */
  serial: Uint8Array;
  /** The issuer's encoded name: the CA certificate's subject, byte for byte (the subject, self-signed). */
  issuer: Uint8Array;
  /** The subject's encoded name ({@link encodeName}). */
  subject: Uint8Array;
  notBefore: Date;
  notAfter: Date;
  publicKey: CryptoKey;
  /** The CA's private key (the subject's own, self-signed): ECDSA P-256. */
  signingKey: CryptoKey;
  /** A CA certificate, or a leaf for these uses. */
  kind: { ca: true } | { ca: false; usage: "server" | "client" | "both"; authorityKeyId: Uint8Array };
  dnsNames?: readonly string[] | undefined;
  ipAddresses?: readonly string[] | undefined;
}

/** A name of `organizations` (O) then a common name (CN), each value a UTF8String in an RDN of its own. */
export function encodeName(commonName: string, organizations: readonly string[] = []): Uint8Array {
  const rdn = (type: string, value: string) => set(sequence(oid(type), utf8(value)));
  return sequence(...organizations.map((o) => rdn(OID.organization, o)), rdn(OID.commonName, commonName));
}

/** A key identifier: SHA-1 of the public key's bits (RFC 5280 4.2.1.2, method 1). */
export async function keyId(publicKey: CryptoKey): Promise<Uint8Array> {
  const raw = await crypto.subtle.exportKey("raw", publicKey);
  return new Uint8Array(await crypto.subtle.digest("SHA-1", raw));
}

const extension = (id: string, critical: boolean, value: Uint8Array) =>
  sequence(oid(id), ...(critical ? [boolean(true)] : []), octets(value));

async function extensions(r: CertificateRequest): Promise<Uint8Array[]> {
  if (r.kind.ca) {
    return [
      extension(OID.basicConstraints, true, sequence(boolean(true))),
      // digitalSignature (bit 0), keyCertSign (5), cRLSign (6): 1000 0110, its last bit unused.
      extension(OID.keyUsage, true, bits(Uint8Array.of(0x86), 1)),
      extension(OID.subjectKeyId, false, octets(await keyId(r.publicKey))),
    ];
  }
  const usages = { server: [OID.serverAuth], client: [OID.clientAuth], both: [OID.serverAuth, OID.clientAuth] };
  const names = [
    ...(r.dnsNames ?? []).map((n) => element(0x82, new TextEncoder().encode(n))), // [2] dNSName
    ...(r.ipAddresses ?? []).map((ip) => element(0x87, ipBytes(ip))), // [7] iPAddress
  ];
  return [
    extension(OID.basicConstraints, true, sequence()),
    // digitalSignature (bit 0), keyEncipherment (2): 1010 0000, its last five bits unused.
    extension(OID.keyUsage, true, bits(Uint8Array.of(0xa0), 5)),
    extension(OID.extKeyUsage, false, sequence(...usages[r.kind.usage].map(oid))),
    extension(OID.authorityKeyId, false, sequence(element(0x80, r.kind.authorityKeyId))), // [0] keyIdentifier
    ...(names.length ? [extension(OID.subjectAltName, false, sequence(...names))] : []),
  ];
}

/** The certificate, DER, signed with `signingKey`. */
export async function buildCertificate(r: CertificateRequest): Promise<Uint8Array> {
  const algorithm = sequence(oid(ECDSA_SHA256));
  const spki = new Uint8Array(await crypto.subtle.exportKey("spki", r.publicKey));
  const tbs = sequence(
    element(0xa0, small(2)), // [0] version: v3
    unsigned(r.serial),
    algorithm,
    r.issuer,
    sequence(time(r.notBefore), time(r.notAfter)),
    r.subject,
    spki,
    element(0xa3, sequence(...await extensions(r))), // [3] extensions
  );
  const raw = new Uint8Array(
    await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, r.signingKey, tbs.slice().buffer),
  );
  const signature = sequence(unsigned(raw.subarray(0, 32)), unsigned(raw.subarray(32)));
  return sequence(tbs, algorithm, bits(signature));
}

/** `der` as a PEM block of `label`, 64 characters a line. */
export function toPem(label: string, der: Uint8Array): string {
  const lines = bytesBase64(der).match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join("\n")}\n-----END ${label}-----\n`;
}
