/**
 * gitRepo URLs as git reads them (issue 21): scp-like bracketed hosts with a
 * port, zone ids, NAT64 and IPv4-compatible addresses, and the loopback
 * names of a pod's /etc/hosts are judged as the addresses they are; no input
 * makes the validator throw (seeded through testing/fuzz.ts).
 */
import assert from "node:assert/strict";
import { gitRepoProblem, scpParts } from "../../lib/git/url.ts";
import { DEFAULT_HOST_POLICY, parseHostPolicy } from "../../lib/git/hosts.ts";
import { forEachSeed } from "../../testing/fuzz.ts";

Deno.test("scp-like URLs are split as git splits them: a bracketed host may carry a port", () => {
  assert.deepEqual(scpParts("git@[127.0.0.9:18999]:x"), { user: "git", host: "127.0.0.9", port: "18999" });
  assert.deepEqual(scpParts("git@[127.0.0.9]:x"), { user: "git", host: "127.0.0.9" });
  assert.deepEqual(scpParts("[::1]:repo"), { user: "", host: "::1" });
  assert.deepEqual(scpParts("git@github.com:org/repo.git"), { user: "git", host: "github.com" });
  assert.equal(scpParts("https://github.com/x"), undefined);
});

Deno.test("the bypasses of issue 21 are refused under the default policy, with the address they are", () => {
  const refused: [string, RegExp][] = [
    ["git@[127.0.0.9:18999]:x", /host 127\.0\.0\.9 is a loopback address/],
    ["git@[127.0.0.9]:x", /host 127\.0\.0\.9 is a loopback address/],
    ["git@[fe80::1%eth0]:x", /link-local/],
    ["git@[::1%lo]:x", /loopback/],
    ["https://[64:ff9b::7f00:1]/x", /loopback/],
    ["https://[64:ff9b::a00:1]/x", /private/],
    ["git@[64:ff9b:1::808:808]:x", /NAT64/],
    ["https://[::127.0.0.1]/x", /loopback/],
    ["https://[::a9fe:a9fe]/x", /link-local/],
    ["git@ip6-localhost:x", /loopback/],
    ["https://ip6-loopback/x", /loopback/],
    ["ssh://git@localhost.localdomain/x", /loopback/],
    ["https://localhost6/x", /loopback/],
    ["git@ip6-allnodes:x", /multicast/],
    ["git@a@127.0.0.1:x", /not a host name or address/],
    ["git@[git@h:22]:x", /not a host name or address/],
  ];
  for (const [url, why] of refused) assert.match(gitRepoProblem(url, DEFAULT_HOST_POLICY) ?? "accepted", why, url);
  for (
    const url of ["https://github.com/a/b", "git@github.com:a/b", "git@[2001:db8::1]:x", "ssh://git@[2001:db8::2]:22/x"]
  ) {
    assert.equal(gitRepoProblem(url, DEFAULT_HOST_POLICY), undefined, url);
  }
  const listed = parseHostPolicy("127.0.0.9");
  assert.equal(gitRepoProblem("git@[127.0.0.9:18999]:x", listed), undefined, "a listed address with a port");
});

Deno.test("no gitRepo makes the validator throw: random strings over URL-ish characters", async () => {
  const pieces = [
    "git@",
    "[",
    "]",
    ":",
    "::",
    "%",
    "@",
    "/",
    "//",
    ".",
    "127.0.0.1",
    "::1",
    "ffff",
    "64:ff9b",
    "https://",
    "ssh://",
    "x",
    "0x7f",
    "1",
    "%25",
    "localhost",
    "ip6-",
    "-",
    "#",
    "?",
    "\\",
    "é",
  ];
  const n = await forEachSeed("git URL hosts", 2_000, (rand) => {
    const url = Array.from({ length: 1 + Math.floor(rand() * 8) }, () => pieces[Math.floor(rand() * pieces.length)])
      .join("");
    const answer = gitRepoProblem(url, DEFAULT_HOST_POLICY);
    assert.ok(answer === undefined || typeof answer === "string");
  });
  assert.ok(n > 100);
});
