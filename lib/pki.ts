/**
 * Certificates NICO issues: the cluster CA, the admin client certificate in
 * the kubeconfig, and the webhook's serving certificate. ECDSA P-256 keys
 * and SHA-256 signatures, built with `@peculiar/x509` on WebCrypto.
 *
 * @module
 */
import "reflect-metadata";
import * as x509 from "@peculiar/x509";

x509.cryptoProvider.set(crypto);

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
  const der = await crypto.subtle.exportKey("pkcs8", key);
  return x509.PemConverter.encode(der, "PRIVATE KEY");
}

async function importKey(pem: string): Promise<CryptoKey> {
  const der = x509.PemConverter.decode(pem)[0];
  if (!der) throw new Error("Cannot read the private key: no PEM block found");
  return await crypto.subtle.importKey("pkcs8", der, ALGORITHM, true, ["sign"]);
}

async function newKeys(): Promise<CryptoKeyPair> {
  return await crypto.subtle.generateKey(ALGORITHM, true, ["sign", "verify"]) as CryptoKeyPair;
}

/** A self-signed CA certificate. */
export async function createCa(opts: CaOptions): Promise<KeyPair> {
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
  const cert = new x509.X509Certificate(pem);
  const san = cert.getExtension(x509.SubjectAlternativeNameExtension);
  const names = san?.names.toJSON() ?? [];
  return {
    notAfter: cert.notAfter,
    subject: cert.subject,
    issuer: cert.issuer,
    dnsNames: names.filter((n) => n.type === "dns").map((n) => n.value),
    ipAddresses: names.filter((n) => n.type === "ip").map((n) => n.value),
  };
}

/** Whether `certPem` was signed by the CA in `caPem`. */
export async function signedBy(certPem: string, caPem: string): Promise<boolean> {
  const cert = new x509.X509Certificate(certPem);
  const ca = new x509.X509Certificate(caPem);
  return cert.issuer === ca.subject && await cert.verify({ publicKey: ca, signatureOnly: true });
}

/** Whether `keyPem` is the private key of the certificate `certPem` (false when either cannot be read). */
export async function keyMatches(certPem: string, keyPem: string): Promise<boolean> {
  try {
    const own = await crypto.subtle.exportKey("jwk", await importKey(keyPem));
    const cert = new x509.X509Certificate(certPem);
    const pub = await crypto.subtle.exportKey("jwk", await cert.publicKey.export(ALGORITHM, ["verify"]));
    return own.x !== undefined && own.x === pub.x && own.y === pub.y;
  } catch {
    return false;
  }
}
