/**
 * Certificates NICO issues: the cluster CA, the admin client certificate in
 * the kubeconfig, and the webhook's serving certificate. ECDSA P-256 keys
 * and SHA-256 signatures, built and signed with lib/cert_build.ts on
 * WebCrypto, and read with lib/der.ts. `@peculiar/x509` (and its polyfill,
 * about 19 MiB of a process) is loaded only to check a signature of another
 * kind than NICO makes, on a certificate someone else issued.
 *
 * @module
 */
import { type CertificateFields, ecdsaSignedBy, pemBlock, readCertificate } from "./der.ts";
import { buildCertificate, encodeName, keyId, toPem } from "./cert_build.ts";

type X509 = typeof import("@peculiar/x509");
let loading: Promise<X509> | undefined;

/** `@peculiar/x509`, loaded once, on first use (a signature NICO does not make). */
function x509lib(): Promise<X509> {
  return loading ??= (async () => {
    await import("reflect-metadata");
    const x509 = await import("@peculiar/x509");
    x509.cryptoProvider.set(crypto);
    return x509;
  })();
}

/** Whether `@peculiar/x509` was loaded in this process (tests). */
export function x509Loaded(): boolean {
  return loading !== undefined;
}

const ALGORITHM = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" } as const;
const DAY_MS = 24 * 60 * 60 * 1000;

/** A certificate and its private key, both PEM. */
export interface KeyPair {
  certPem: string;
  keyPem: string;
}

export interface CaOptions {
  commonName: string;
  /** Validity in days (default ten years). */
  days?: number;
  now?: Date;
}

export interface LeafOptions {
  commonName: string;
  organizations?: string[];
  dnsNames?: string[];
  ipAddresses?: string[];
  usage: "server" | "client" | "both";
  days: number;
  now?: Date;
}

/** 16 random bytes, the first in 0x40..0x7f: a positive serial whose DER integer is 16 bytes, no padding. */
function randomSerial(): Uint8Array {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[0] = (bytes[0]! & 0x3f) | 0x40;
  return bytes;
}

async function exportKey(key: CryptoKey): Promise<string> {
  return toPem("PRIVATE KEY", new Uint8Array(await crypto.subtle.exportKey("pkcs8", key)));
}

async function importKey(pem: string): Promise<CryptoKey> {
  let der: Uint8Array;
  try {
    der = pemBlock(pem, "PRIVATE KEY");
  } catch {
    throw new Error("Cannot read the private key: no PEM block found");
  }
  return await crypto.subtle.importKey("pkcs8", der.slice().buffer, ALGORITHM, true, ["sign"]);
}

async function newKeys(): Promise<CryptoKeyPair> {
  return await crypto.subtle.generateKey(ALGORITHM, true, ["sign", "verify"]) as CryptoKeyPair;
}

/** A self-signed CA certificate. */
export async function createCa(opts: CaOptions): Promise<KeyPair> {
  const now = opts.now ?? new Date();
  const keys = await newKeys();
  const name = encodeName(opts.commonName);
  const der = await buildCertificate({
    serial: randomSerial(),
    issuer: name,
    subject: name,
    notBefore: new Date(now.getTime() - 5 * 60 * 1000),
    notAfter: new Date(now.getTime() + (opts.days ?? 3650) * DAY_MS),
    publicKey: keys.publicKey,
    signingKey: keys.privateKey,
    kind: { ca: true },
  });
  return { certPem: toPem("CERTIFICATE", der), keyPem: await exportKey(keys.privateKey) };
}

/** The CA's key identifier: its subject key identifier where it has one, else one of its public key. */
async function authorityKeyId(ca: CertificateFields): Promise<Uint8Array> {
  if (ca.subjectKeyId) return ca.subjectKeyId;
  const spki = ca.publicKeyDer.slice().buffer;
  return await keyId(await crypto.subtle.importKey("spki", spki, ALGORITHM, true, ["verify"]));
}

/** A leaf certificate signed by `ca`. */
export async function issueCert(ca: KeyPair, opts: LeafOptions): Promise<KeyPair> {
  const now = opts.now ?? new Date();
  const caCert = readCertificate(ca.certPem);
  const caKey = await importKey(ca.keyPem);
  const keys = await newKeys();
  const der = await buildCertificate({
    serial: randomSerial(),
    issuer: caCert.subjectDer,
    subject: encodeName(opts.commonName, opts.organizations),
    notBefore: new Date(now.getTime() - 5 * 60 * 1000),
    notAfter: new Date(now.getTime() + opts.days * DAY_MS),
    publicKey: keys.publicKey,
    signingKey: caKey,
    kind: { ca: false, usage: opts.usage, authorityKeyId: await authorityKeyId(caCert) },
    dnsNames: opts.dnsNames,
    ipAddresses: opts.ipAddresses,
  });
  return { certPem: toPem("CERTIFICATE", der), keyPem: await exportKey(keys.privateKey) };
}

/** Facts NICO checks on a certificate it issued earlier. */
export interface CertInfo {
  notAfter: Date;
  subject: string;
  issuer: string;
  dnsNames: string[];
  ipAddresses: string[];
}

/** Reads the first certificate of a PEM bundle. */
export function certInfo(pem: string): CertInfo {
  const c = readCertificate(pem);
  return {
    notAfter: c.notAfter,
    subject: c.subject,
    issuer: c.issuer,
    dnsNames: c.dnsNames,
    ipAddresses: c.ipAddresses,
  };
}

const sameBytes = (a: Uint8Array, b: Uint8Array) => a.length === b.length && a.every((x, i) => x === b[i]);

/** Whether `certPem` was signed by the CA in `caPem`. */
export async function signedBy(certPem: string, caPem: string): Promise<boolean> {
  const cert = readCertificate(certPem);
  const ca = readCertificate(caPem);
  if (!sameBytes(cert.issuerDer, ca.subjectDer) && cert.issuer !== ca.subject) return false;
  const own = await ecdsaSignedBy(cert, ca);
  if (own !== undefined) return own;
  // Another kind of signature (not one NICO makes): the library checks it.
  const x509 = await x509lib();
  const signed = new x509.X509Certificate(certPem);
  return await signed.verify({ publicKey: new x509.X509Certificate(caPem), signatureOnly: true });
}

/** Whether `keyPem` is the private key of the certificate `certPem` (false when either cannot be read). */
export async function keyMatches(certPem: string, keyPem: string): Promise<boolean> {
  try {
    const own = await crypto.subtle.exportKey("jwk", await importKey(keyPem));
    const spki = readCertificate(certPem).publicKeyDer.slice().buffer;
    const pub = await crypto.subtle.exportKey(
      "jwk",
      await crypto.subtle.importKey("spki", spki, ALGORITHM, true, ["verify"]),
    );
    return own.x !== undefined && own.x === pub.x && own.y === pub.y;
  } catch {
    return false;
  }
}
