/**
 * Certificates NICO issues: the cluster CA, the admin client certificate in
 * the kubeconfig, and the webhook's serving certificate. ECDSA P-256 keys
 * and SHA-256 signatures, built with `@peculiar/x509` on WebCrypto. That
 * library (and its polyfill) is loaded the first time a certificate is made
 * (about 19 MiB of a process): what a pass checks on every look (expiry,
 * names, issuer, key, signature) is read with lib/der.ts and WebCrypto alone.
 *
 * @module
 */
import { ecdsaSignedBy, pemBlock, readCertificate } from "./der.ts";

type X509 = typeof import("@peculiar/x509");
let loading: Promise<X509> | undefined;

/** `@peculiar/x509`, loaded once, on first use. */
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

function randomSerial(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[0] = bytes[0]! & 0x7f; // a positive serial
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

function escapeRdn(value: string): string {
  return value.replace(/([,+"\\<>;=])/g, "\\$1");
}

function subject(cn: string, orgs: string[] = []): string {
  return [...orgs.map((o) => `O=${escapeRdn(o)}`), `CN=${escapeRdn(cn)}`].join(", ");
}

async function exportKey(key: CryptoKey): Promise<string> {
  const der = new Uint8Array(await crypto.subtle.exportKey("pkcs8", key));
  let bin = "";
  for (const b of der) bin += String.fromCharCode(b);
  const lines = btoa(bin).match(/.{1,64}/g) ?? [];
  return `-----BEGIN PRIVATE KEY-----\n${lines.join("\n")}\n-----END PRIVATE KEY-----\n`;
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
  const x509 = await x509lib();
  const now = opts.now ?? new Date();
  const keys = await newKeys();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: randomSerial(),
    name: subject(opts.commonName),
    notBefore: new Date(now.getTime() - 5 * 60 * 1000),
    notAfter: new Date(now.getTime() + (opts.days ?? 3650) * DAY_MS),
    signingAlgorithm: ALGORITHM,
    keys,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign | x509.KeyUsageFlags.digitalSignature,
        true,
      ),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return { certPem: cert.toString("pem"), keyPem: await exportKey(keys.privateKey) };
}

/** A leaf certificate signed by `ca`. */
export async function issueCert(ca: KeyPair, opts: LeafOptions): Promise<KeyPair> {
  const x509 = await x509lib();
  const now = opts.now ?? new Date();
  const caCert = new x509.X509Certificate(ca.certPem);
  const caKey = await importKey(ca.keyPem);
  const keys = await newKeys();
  const usages = {
    server: [x509.ExtendedKeyUsage.serverAuth],
    client: [x509.ExtendedKeyUsage.clientAuth],
    both: [x509.ExtendedKeyUsage.serverAuth, x509.ExtendedKeyUsage.clientAuth],
  }[opts.usage];
  const names = [
    ...(opts.dnsNames ?? []).map((value) => ({ type: "dns" as const, value })),
    ...(opts.ipAddresses ?? []).map((value) => ({ type: "ip" as const, value })),
  ];
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: randomSerial(),
    subject: subject(opts.commonName, opts.organizations),
    issuer: caCert.subject,
    notBefore: new Date(now.getTime() - 5 * 60 * 1000),
    notAfter: new Date(now.getTime() + opts.days * DAY_MS),
    signingAlgorithm: ALGORITHM,
    publicKey: keys.publicKey,
    signingKey: caKey,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment, true),
      new x509.ExtendedKeyUsageExtension(usages),
      await x509.AuthorityKeyIdentifierExtension.create(caCert),
      ...(names.length ? [new x509.SubjectAlternativeNameExtension(names)] : []),
    ],
  });
  return { certPem: cert.toString("pem"), keyPem: await exportKey(keys.privateKey) };
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
