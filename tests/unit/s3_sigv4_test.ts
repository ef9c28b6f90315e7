/**
 * lib/s3's signer against the worked examples of AWS's S3 SigV4 documentation (their example keys, bucket and
 * time), the encodings it relies on, the XML reader, the error kinds and the metadata headers.
 */
import assert from "node:assert/strict";
import { objectUrl, presignGetUrl, signHeaders, uriEncode } from "../../lib/s3/sigv4.ts";
import { elements, escapeXml, text, unescapeXml } from "../../lib/s3/xml.ts";
import { kindOfAnswer, kindOfFailure, S3Error } from "../../lib/s3/errors.ts";
import { metadataHeaders } from "../../lib/s3/request.ts";

const credentials = {
  accessKeyId: "AKIAIOSFODNN7EXAMPLE",
  secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
};
const now = new Date("2013-05-24T00:00:00Z");
const EMPTY = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
const signatureOf = (h: Record<string, string>) => /Signature=([0-9a-f]{64})$/.exec(h.authorization!)?.[1];

Deno.test("sigv4: AWS's GET Object example (a Range header)", async () => {
  const h = await signHeaders({
    method: "GET",
    url: new URL("https://examplebucket.s3.amazonaws.com/test.txt"),
    headers: { Range: "bytes=0-9" },
    payloadSha256: EMPTY,
    region: "us-east-1",
    credentials,
    now,
  });
  assert.match(h.authorization!, /SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,/);
  assert.equal(h["x-amz-date"], "20130524T000000Z");
  assert.equal(signatureOf(h), "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
});

Deno.test("sigv4: AWS's GET Bucket (list objects) example, a sorted query", async () => {
  const h = await signHeaders({
    method: "GET",
    url: new URL("https://examplebucket.s3.amazonaws.com/?max-keys=2&prefix=J"),
    payloadSha256: EMPTY,
    region: "us-east-1",
    credentials,
    now,
  });
  assert.equal(signatureOf(h), "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
});

Deno.test("sigv4: AWS's presigned URL example (a day, host only)", async () => {
  const url = await presignGetUrl(new URL("https://examplebucket.s3.amazonaws.com/test.txt"), {
    region: "us-east-1",
    credentials,
    expiresSeconds: 86_400,
    now,
  });
  const u = new URL(url);
  assert.equal(u.searchParams.get("X-Amz-Credential"), "AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request");
  assert.equal(u.searchParams.get("X-Amz-SignedHeaders"), "host");
  assert.equal(
    u.searchParams.get("X-Amz-Signature"),
    "aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404",
  );
  await assert.rejects(
    () => presignGetUrl(u, { region: "us-east-1", credentials, expiresSeconds: 604_801, now }),
    RangeError,
  );
});

Deno.test("sigv4: a session token is sent and signed; the secret is in no header", async () => {
  const h = await signHeaders({
    method: "HEAD",
    url: objectUrl("http://127.0.0.1:9000/", "bk", ""),
    payloadSha256: EMPTY,
    region: "eu-west-1",
    credentials: { ...credentials, sessionToken: "tok" },
    now,
  });
  assert.equal(h["x-amz-security-token"], "tok");
  assert.match(h.authorization!, /SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-security-token,/);
  assert.ok(!JSON.stringify(h).includes(credentials.secretAccessKey));
});

Deno.test("sigv4: keys are encoded once, segment by segment, path-style", () => {
  assert.equal(uriEncode("a b/c~d+é", true), "a%20b/c~d%2B%C3%A9");
  assert.equal(uriEncode("a/b"), "a%2Fb");
  const u = objectUrl("https://127.0.0.1:9000//", "bk", "etcd/x y+z.db", { uploadId: "1" });
  assert.equal(u.pathname, "/bk/etcd/x%20y%2Bz.db");
  assert.equal(u.search, "?uploadId=1");
  assert.throws(() => objectUrl("http://127.0.0.1:1", "bk", "a/../b"), RangeError);
});

Deno.test("xml: elements, text and entities", () => {
  const xml = `<ListBucketResult><Contents><Key>a&amp;b</Key><Size>3</Size></Contents>` +
    `<Contents><Key>c&#x2F;d&#47;e</Key><Size>4</Size></Contents><IsTruncated>false</IsTruncated><Empty/></ListBucketResult>`;
  assert.deepEqual(elements(xml, "Contents").map((c) => text(c, "Key")), ["a&b", "c/d/e"]);
  assert.equal(text(xml, "IsTruncated"), "false");
  assert.equal(text(xml, "Empty"), "");
  assert.equal(text(xml, "Missing"), undefined);
  assert.equal(unescapeXml(escapeXml(`"<a&b>'`)), `"<a&b>'`);
});

Deno.test("errors: kinds from status and code; messages carry the code, not a body", () => {
  assert.equal(kindOfAnswer(404, "NoSuchBucket"), "no-bucket");
  assert.equal(kindOfAnswer(403, "SignatureDoesNotMatch"), "credentials");
  assert.equal(kindOfAnswer(403, "InvalidAccessKeyId"), "credentials");
  assert.equal(kindOfAnswer(403, "AccessDenied"), "denied");
  assert.equal(kindOfAnswer(403, undefined), "denied");
  assert.equal(kindOfAnswer(301, "PermanentRedirect"), "redirect");
  assert.equal(kindOfAnswer(307, undefined), "redirect");
  assert.equal(kindOfAnswer(500, "InternalError"), "server");
  assert.equal(kindOfAnswer(400, "InvalidBucketName"), "refused");
  assert.equal(kindOfFailure(new TypeError("invalid peer certificate: UnknownIssuer"), false, false), "tls");
  assert.equal(kindOfFailure(new TypeError("Connection refused (os error 111)"), false, false), "unreachable");
  assert.equal(kindOfFailure(new Error("x"), true, false), "timeout");
  const e = new S3Error("credentials", "HeadBucket", "bk", undefined, 403, "SignatureDoesNotMatch");
  assert.equal(
    e.message,
    "s3 HeadBucket bk: the store does not accept the access key or its secret (HTTP 403 SignatureDoesNotMatch)",
  );
});

Deno.test("metadata: lower-case names and printable ASCII values only", () => {
  assert.deepEqual(metadataHeaders({ revision: "12", reason: "pre-change" }), {
    "x-amz-meta-revision": "12",
    "x-amz-meta-reason": "pre-change",
  });
  assert.throws(() => metadataHeaders({ Revision: "1" }), RangeError);
  assert.throws(() => metadataHeaders({ reason: "naïve" }), RangeError);
  assert.throws(() => metadataHeaders({ reason: "a\nb" }), RangeError);
});
