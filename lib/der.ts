/**
 * Reading an X.509 certificate without a certificate library: the DER
 * fields NICO checks on every pass (expiry, names, issuer, public key), and
 * an ECDSA P-256 signature checked with WebCrypto. lib/der_write.ts and
 * lib/cert_build.ts write and sign them.
 *
 * @module
 */

/** One DER element: its tag, its content, and the whole element. */
interface Tlv {
  tag: number;
  content: Uint8Array;
  whole: Uint8Array;
}

/** The element at `at` of `buf`, and where the next one starts. */
function tlv(buf: Uint8Array, at: number): { el: Tlv; next: number } {
  const tag = buf[at];
  let len = buf[at + 1];
  if (tag === undefined || len === undefined || (tag & 0x1f) === 0x1f) {
    throw new Error("bad DER: truncated or long tag");
  }
  let start = at + 2;
  if (len & 0x80) {
    const n = len & 0x7f;
    if (n < 1 || n > 4) throw new Error("bad DER: length");
    len = 0;
    for (let i = 0; i < n; i++) len = len * 256 + (buf[start + i] ?? NaN);
    start += n;
  }
  const end = start + len;
  if (!(end <= buf.length)) throw new Error("bad DER: truncated");
  return { el: { tag, content: buf.subarray(start, end), whole: buf.subarray(at, end) }, next: end };
}

/** The elements inside a constructed element. */
function children(el: Tlv): Tlv[] {
  const out: Tlv[] = [];
  for (let at = 0; at < el.content.length;) {
    const { el: c, next } = tlv(el.content, at);
    out.push(c);
    at = next;
  }
  return out;
}

function oid(bytes: Uint8Array): string {
  const parts: number[] = [];
  let v = 0;
  for (const b of bytes) {
    v = v * 128 + (b & 0x7f);
    if (!(b & 0x80)) {
      if (parts.length === 0) parts.push(v < 80 ? Math.floor(v / 40) : 2, v < 80 ? v % 40 : v - 80);
      else parts.push(v);
      v = 0;
    }
  }
  return parts.join(".");
}

function time(el: Tlv): Date {
  const s = new TextDecoder().decode(el.content);
  const m = /^(\d{2}|\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})Z$/.exec(s);
  if (!m) throw new Error(`bad DER: time ${s}`);
  const y = el.tag === 0x17 ? (Number(m[1]) < 50 ? 2000 : 1900) + Number(m[1]) : Number(m[1]);
  return new Date(Date.UTC(y, Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6])));
}

const NAME_KEYS: Record<string, string> = {
  "2.5.4.3": "CN",
  "2.5.4.6": "C",
  "2.5.4.7": "L",
  "2.5.4.8": "ST",
  "2.5.4.10": "O",
  "2.5.4.11": "OU",
};

/** A distinguished name as `O=..., CN=...`, in the order it is encoded. */
function dn(el: Tlv): string {
  const out: string[] = [];
  for (const set of children(el)) {
    for (const atv of children(set)) {
      const [type, value] = children(atv);
      if (!type || !value) continue;
      const key = NAME_KEYS[oid(type.content)] ?? oid(type.content);
      out.push(`${key}=${new TextDecoder().decode(value.content).replace(/([,+"\\<>;=])/g, "\\$1")}`);
    }
  }
  return out.join(", ");
}

function ip(bytes: Uint8Array): string {
  if (bytes.length === 4) return [...bytes].join(".");
  const groups: string[] = [];
  for (let i = 0; i + 1 < bytes.length; i += 2) groups.push(((bytes[i]! << 8) | bytes[i + 1]!).toString(16));
  // RFC 5952: the longest run of two or more zero groups becomes `::`.
  let best = { at: -1, len: 1 };
  for (let i = 0; i < groups.length;) {
    let j = i;
    while (j < groups.length && groups[j] === "0") j++;
    if (j - i > best.len) best = { at: i, len: j - i };
    i = j === i ? i + 1 : j;
  }
  if (best.at < 0) return groups.join(":");
  return `${groups.slice(0, best.at).join(":")}::${groups.slice(best.at + best.len).join(":")}`;
}

/** What NICO reads of a certificate. */
export interface CertificateFields {
  notBefore: Date;
  notAfter: Date;
  subject: string;
  issuer: string;
  /** The encoded subject and issuer names: equal bytes, the same name. */
  subjectDer: Uint8Array;
  issuerDer: Uint8Array;
  /** Its SubjectPublicKeyInfo, as WebCrypto imports it (`spki`). */
  publicKeyDer: Uint8Array;
  dnsNames: string[];
  ipAddresses: string[];
  /** Its subject key identifier extension's value, where it has one. */
  subjectKeyId?: Uint8Array;
  /** The signed part, the signature's algorithm (an OID) and the signature. */
  tbs: Uint8Array;
  signatureAlgorithm: string;
  signature: Uint8Array;
}

/** The DER of the first block of `label` in a PEM text. */
export function pemBlock(pem: string, label: string): Uint8Array {
  const m = new RegExp(`-----BEGIN ${label}-----([A-Za-z0-9+/=\\s]+?)-----END ${label}-----`).exec(pem);
  if (!m) throw new Error(`no PEM block ${label} found`);
  return Uint8Array.from(atob(m[1]!.replace(/\s+/g, "")), (c) => c.charCodeAt(0));
}

/** The fields of the first certificate of a PEM bundle. */
export function readCertificate(pem: string): CertificateFields {
  const cert = tlv(pemBlock(pem, "CERTIFICATE"), 0).el;
  const [tbs, alg, sig] = children(cert);
  if (!tbs || !alg || !sig) throw new Error("bad certificate");
  const f = children(tbs);
  const i = f[0]?.tag === 0xa0 ? 1 : 0; // [0] version
  const [, , issuer, validity, subject, spki] = f.slice(i);
  if (!issuer || !validity || !subject || !spki) throw new Error("bad certificate");
  const [notBefore, notAfter] = children(validity);
  const dnsNames: string[] = [];
  const ipAddresses: string[] = [];
  const exts = f.find((x) => x.tag === 0xa3);
  let subjectKeyId: Uint8Array | undefined;
  for (const ext of exts ? children(children(exts)[0]!) : []) {
    const parts = children(ext);
    const id = oid(parts[0]!.content);
    if (id === "2.5.29.14") subjectKeyId = tlv(parts.at(-1)!.content, 0).el.content; // an OCTET STRING in extnValue
    if (id !== "2.5.29.17") continue; // subjectAltName
    for (const name of children(tlv(parts.at(-1)!.content, 0).el)) {
      if (name.tag === 0x82) dnsNames.push(new TextDecoder().decode(name.content));
      if (name.tag === 0x87) ipAddresses.push(ip(name.content));
    }
  }
  return {
    notBefore: time(notBefore!),
    notAfter: time(notAfter!),
    subject: dn(subject),
    issuer: dn(issuer),
    subjectDer: subject.whole,
    issuerDer: issuer.whole,
    publicKeyDer: spki.whole,
    dnsNames,
    ipAddresses,
    ...(subjectKeyId ? { subjectKeyId } : {}),
    tbs: tbs.whole,
    signatureAlgorithm: oid(children(alg)[0]!.content),
    signature: sig.content.subarray(1), // a BIT STRING: its first byte counts unused bits (0)
  };
}

/** ecdsa-with-SHA256 */
export const ECDSA_SHA256 = "1.2.840.10045.4.3.2";

/** An ECDSA signature as DER (`SEQUENCE { r, s }`) turned into WebCrypto's `r || s` of `size` bytes each. */
export function ecdsaRaw(der: Uint8Array, size = 32): Uint8Array {
  const out = new Uint8Array(size * 2);
  children(tlv(der, 0).el).slice(0, 2).forEach((n, k) => {
    const v = n.content.subarray(Math.max(0, n.content.length - size));
    out.set(v, k * size + size - v.length);
  });
  return out;
}

/**
 * Whether `cert` was signed by the holder of `ca` (ECDSA P-256 with SHA-256, as NICO signs); undefined when the
 * signature is of another kind, which the caller checks otherwise.
 */
export async function ecdsaSignedBy(cert: CertificateFields, ca: CertificateFields): Promise<boolean | undefined> {
  if (cert.signatureAlgorithm !== ECDSA_SHA256) return undefined;
  let key: CryptoKey;
  try {
    const spki = ca.publicKeyDer.slice().buffer;
    key = await crypto.subtle.importKey("spki", spki, { name: "ECDSA", namedCurve: "P-256" }, false, ["verify"]);
  } catch {
    return undefined; // not a P-256 key
  }
  const sig = ecdsaRaw(cert.signature);
  return await crypto.subtle.verify(
    { name: "ECDSA", hash: "SHA-256" },
    key,
    sig.slice().buffer,
    cert.tbs.slice().buffer,
  );
}
